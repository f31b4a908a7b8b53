package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/judge/store"
)

// DeleteBefore deletes the daily indices of days wholly before t, then the points before
// t in t's own day.
func (s *Store) DeleteBefore(ctx context.Context, t time.Time) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	indices, err := s.indices(ctx)
	if err != nil {
		return err
	}
	day := t.UTC().Truncate(24 * time.Hour)
	var old []string
	partial := ""
	for _, idx := range indices {
		d, err := time.Parse(dayLayout, strings.TrimPrefix(idx, s.opts.Prefix))
		if err != nil {
			continue // not one of ours: a prefix shared with other names
		}
		switch {
		case d.Before(day):
			old = append(old, idx)
		case d.Equal(day) && t.After(day):
			partial = idx
		}
	}
	// Delete in chunks, to keep the URL short whatever the retention backlog.
	for chunk := range slices.Chunk(old, 50) {
		req := esapi.IndicesDeleteRequest{Index: chunk, IgnoreUnavailable: esapi.BoolPtr(true)}
		if _, err := s.do(ctx, req, "delete indices "+strings.Join(chunk, ",")); err != nil {
			return err
		}
		s.log.Debug("deleted daily indices", "indices", chunk)
	}
	if partial == "" {
		return nil
	}
	// Documents written since the last refresh are invisible to the search that
	// deletes by query: refresh first, so that retention misses none.
	if err := s.refresh(ctx, partial); err != nil {
		return err
	}
	return s.deletePartial(ctx, partial, t)
}

// indices lists this store's indices.
func (s *Store) indices(ctx context.Context) ([]string, error) {
	req := esapi.CatIndicesRequest{Index: []string{s.pattern()}, Format: "json", H: []string{"index"}}
	raw, err := s.do(ctx, req, "list indices")
	if err != nil {
		return nil, err
	}
	var rows []struct{ Index string }
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("elastic store: list indices: decode answer: %w", err)
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.Index)
	}
	return out, nil
}

// deletePartial removes the points before t from index. It uses _delete_by_query; an
// engine without it (Elasticsearch without its reindex module) gets the same done by
// rounds of search and bulk delete.
func (s *Store) deletePartial(ctx context.Context, index string, t time.Time) error {
	query := map[string]any{"range": map[string]any{"ts": map[string]any{"lt": t.UnixMilli(), "format": "epoch_millis"}}}
	s.tmplMu.Lock()
	noDBQ := s.noDBQ
	s.tmplMu.Unlock()
	if !noDBQ {
		body, _ := json.Marshal(map[string]any{"query": query})
		req := esapi.DeleteByQueryRequest{
			Index: []string{index}, Body: bytes.NewReader(body),
			Conflicts: "proceed", Refresh: esapi.BoolPtr(true), IgnoreUnavailable: esapi.BoolPtr(true),
		}
		_, err := s.do(ctx, req, "delete by query in "+index)
		var ee *engineError
		if err == nil || !errors.As(err, &ee) || !ee.unsupported("_delete_by_query") {
			return err
		}
		s.log.Warn("engine lacks _delete_by_query, deleting the partial day by search and bulk delete", "index", index)
		s.tmplMu.Lock()
		s.noDBQ = true
		s.tmplMu.Unlock()
	}
	for {
		body, _ := json.Marshal(map[string]any{"size": 5000, "_source": false, "query": query})
		raw, err := s.do(ctx, esapi.SearchRequest{Index: []string{index}, Body: bytes.NewReader(body),
			IgnoreUnavailable: esapi.BoolPtr(true)}, "search old points in "+index)
		if err != nil {
			return err
		}
		var res struct {
			Hits struct {
				Hits []struct {
					ID string `json:"_id"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("elastic store: search old points: decode answer: %w", err)
		}
		if len(res.Hits.Hits) == 0 {
			return nil
		}
		var b bytes.Buffer
		for _, h := range res.Hits.Hits {
			meta, _ := json.Marshal(map[string]any{"delete": map[string]any{"_index": index, "_id": h.ID}})
			b.Write(meta)
			b.WriteByte('\n')
		}
		raw, err = s.do(ctx, esapi.BulkRequest{Body: &b, Refresh: "true"}, "bulk delete in "+index)
		if err != nil {
			return err
		}
		var br struct {
			Errors bool `json:"errors"`
		}
		if err := json.Unmarshal(raw, &br); err != nil || br.Errors {
			return fmt.Errorf("elastic store: bulk delete in %s failed: %.300s", index, raw)
		}
	}
}
