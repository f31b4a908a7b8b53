package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/judge/store"
)

// RecordsIndex is the index that holds the records (store.Record) of a store of prefix:
// the prefix without its final '-' or '.', then "_records" (binlake-metrics_records). It
// is outside the pattern <prefix>* on purpose: the points' template, queries and
// retention never see it.
func RecordsIndex(prefix string) string { return strings.TrimRight(prefix, "-.") + "_records" }

// recordsPage is how many records one search of Records reads, and one bulk request of
// WriteRecords carries.
const recordsPage = 1000

// recordID is a record's document _id: store.Record.Validate keeps the kind free of
// '/', so that no two records share one.
func recordID(r store.Record) string { return r.Kind + "/" + r.Key }

// recordDoc is a record's document.
type recordDoc struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Value []byte `json:"value"` // base64, a binary field: stored, never indexed
}

// ensureRecordsIndex creates the records index once per store (again after a failure);
// one that exists already is taken as it is.
func (s *Store) ensureRecordsIndex(ctx context.Context) error {
	s.tmplMu.Lock()
	defer s.tmplMu.Unlock()
	if s.recordsReady {
		return nil
	}
	body, err := json.Marshal(map[string]any{
		"settings": map[string]any{"number_of_shards": 1, "number_of_replicas": s.opts.Replicas},
		"mappings": map[string]any{"dynamic": "strict", "properties": map[string]any{
			"kind":  map[string]any{"type": "keyword"},
			"key":   map[string]any{"type": "keyword"},
			"value": map[string]any{"type": "binary"},
		}},
	})
	if err != nil {
		return fmt.Errorf("elastic store: encode records index: %w", err)
	}
	idx := RecordsIndex(s.opts.Prefix)
	_, err = s.do(ctx, esapi.IndicesCreateRequest{Index: idx, Body: bytes.NewReader(body)}, "create index "+idx)
	var ee *engineError
	if errors.As(err, &ee) && ee.status == http.StatusBadRequest && strings.Contains(ee.body, "resource_already_exists_exception") {
		err = nil
	}
	if err != nil {
		return err
	}
	s.recordsReady = true
	return nil
}

// WriteRecords indexes or deletes the records' documents in bulk requests of
// recordsPage; the engine syncs its translog per request, as for the points.
func (s *Store) WriteRecords(ctx context.Context, recs []store.Record) error {
	if err := store.ValidateRecords(recs); err != nil {
		return fmt.Errorf("elastic store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if len(recs) == 0 {
		return nil
	}
	if err := s.ensureRecordsIndex(ctx); err != nil {
		return err
	}
	idx := RecordsIndex(s.opts.Prefix)
	for chunk := range slices.Chunk(recs, recordsPage) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b) // one line per value
		for _, r := range chunk {
			meta := map[string]any{"_index": idx, "_id": recordID(r)}
			if len(r.Value) == 0 {
				err := enc.Encode(map[string]any{"delete": meta})
				if err != nil {
					return fmt.Errorf("elastic store: encode record %s: %w", recordID(r), err)
				}
				continue
			}
			if err := enc.Encode(map[string]any{"index": meta}); err != nil {
				return fmt.Errorf("elastic store: encode record %s: %w", recordID(r), err)
			}
			if err := enc.Encode(recordDoc{Kind: r.Kind, Key: r.Key, Value: r.Value}); err != nil {
				return fmt.Errorf("elastic store: encode record %s: %w", recordID(r), err)
			}
		}
		raw, err := s.do(ctx, esapi.BulkRequest{Body: &b, FilterPath: bulkFilter}, "write records")
		if err != nil {
			return err
		}
		if err := recordsAnswer(raw); err != nil {
			return err
		}
	}
	return nil
}

// recordsAnswer checks a bulk answer of WriteRecords: every item stored, or deleted, or
// a delete that found nothing.
func recordsAnswer(raw []byte) error {
	var res struct {
		Errors bool `json:"errors"`
		Items  []struct {
			Index  *itemResult `json:"index"`
			Delete *itemResult `json:"delete"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("elastic store: write records: decode answer: %w", err)
	}
	if !res.Errors {
		return nil
	}
	for _, item := range res.Items {
		switch {
		case item.Index != nil && (item.Index.Status < 200 || item.Index.Status >= 300):
			return fmt.Errorf("elastic store: write records: %d %s: %s", item.Index.Status, item.Index.Error.Type, item.Index.Error.Reason)
		case item.Delete != nil && item.Delete.Status != http.StatusNotFound && (item.Delete.Status < 200 || item.Delete.Status >= 300):
			return fmt.Errorf("elastic store: write records: delete: %d %s: %s", item.Delete.Status, item.Delete.Error.Type, item.Delete.Error.Reason)
		}
	}
	return nil
}

// Records refreshes the records index, so that every record written is seen, then pages
// through kind's records in key order with search_after.
func (s *Store) Records(ctx context.Context, kind string) ([]store.Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	idx := RecordsIndex(s.opts.Prefix)
	if err := s.refresh(ctx, idx); err != nil {
		return nil, err
	}
	var out []store.Record
	var after []json.RawMessage
	for {
		req := map[string]any{
			"size": recordsPage, "track_total_hits": false,
			"query": map[string]any{"term": map[string]any{"kind": kind}},
			"sort":  []any{map[string]any{"key": "asc"}},
		}
		if after != nil {
			req["search_after"] = after
		}
		body, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("elastic store: encode records search: %w", err)
		}
		raw, err := s.do(ctx, esapi.SearchRequest{Index: []string{idx}, Body: bytes.NewReader(body),
			IgnoreUnavailable: esapi.BoolPtr(true)}, "read records")
		if err != nil {
			return nil, err
		}
		var res struct {
			Hits struct {
				Hits []struct {
					Source recordDoc         `json:"_source"`
					Sort   []json.RawMessage `json:"sort"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("elastic store: read records: decode answer: %w", err)
		}
		for _, h := range res.Hits.Hits {
			out = append(out, store.Record{Kind: h.Source.Kind, Key: h.Source.Key, Value: h.Source.Value})
		}
		if len(res.Hits.Hits) < recordsPage {
			return out, nil
		}
		after = res.Hits.Hits[len(res.Hits.Hits)-1].Sort
	}
}
