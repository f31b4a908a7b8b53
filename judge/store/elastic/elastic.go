// Package elastic is the distributed store.Store: raw points in Elasticsearch through
// go-elasticsearch/v8.
//
// Points go to daily indices <Prefix>YYYY.MM.DD (UTC day of the point, default prefix
// "binlake-metrics-"), created on demand from a composable index template the store
// installs with explicit, strict mappings:
//
//	node        keyword  the wave's node id
//	name        keyword  the metric name (cpu.util, wave.tps, …)
//	labels      object   one keyword per label (labels.instance …), for dashboards
//	labels_key  keyword  store.LabelKey(labels): "" for node-level series; queries
//	                     select on it, so that "exactly these labels" is one term
//	ts          date     epoch milliseconds
//	hour        byte     UTC hour of day of ts, for the hour-of-day profile without
//	                     scripts (the engine may run without the painless module)
//	value       double
//
// Each point's _id is a hash of its identity (node, name, labels, ts), so a retried
// or redelivered batch overwrites instead of counting twice. Retention deletes whole
// daily indices and the older part of the day that contains the cut-off.
//
// Statistics come from aggregations: value_count, avg, max and percentiles (TDigest,
// so P95 is approximate: Elasticsearch documents its error as proportional to
// q·(1−q), small at the tails, and exact for small counts).
package elastic

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/elastic/go-elasticsearch/v8/esutil"

	"github.com/binlake/binlake/judge/store"
)

// DefaultPrefix starts the names of the daily indices.
const DefaultPrefix = "binlake-metrics-"

const dayLayout = "2006.01.02"

// Options configures the store.
type Options struct {
	// Config is the client configuration (addresses, credentials, TLS, transport).
	// Unless set, the client also retries 429 and 502–504 answers MaxRetries times
	// with exponential back-off.
	Config elasticsearch.Config
	// Prefix of the daily index names; DefaultPrefix when empty. Lowercase, ending in
	// '-' or '.', so that the index pattern <Prefix>* matches only this store's indices.
	Prefix string
	// Shards and Replicas of each daily index (defaults 1 and 0: set Replicas on a
	// cluster with more than one data node).
	Shards, Replicas int
	// TemplatePriority of the index template (default 200), above ones that may match
	// the same pattern.
	TemplatePriority int
	// Workers and FlushBytes tune the bulk indexer of each Write (defaults 2 and 5 MB).
	Workers    int
	FlushBytes int
	// MaxRetries bounds the retries of documents the engine refused with 429 or 5xx
	// inside a bulk answer, and of whole requests refused so (default 5).
	MaxRetries int
	// Backoff returns the wait before retry attempt n (1-based); default exponential
	// from 100 ms to 5 s with jitter.
	Backoff func(attempt int) time.Duration
	// Logger gets the store's debug and warning messages; slog.Default() when nil.
	Logger *slog.Logger
}

// Store is the Elasticsearch store. It is safe for concurrent use.
type Store struct {
	es   *elasticsearch.Client
	opts Options
	log  *slog.Logger

	mu     sync.RWMutex // held shared by every operation, exclusively by Close
	closed bool

	tmplMu    sync.Mutex
	tmplReady bool // the index template is installed

	noDBQ bool // the engine lacks _delete_by_query (no reindex module); guarded by tmplMu
}

var _ store.Store = (*Store)(nil)

// New builds the store. It does not contact the engine: the index template is installed
// by the first Write, so that a judge starts while Elasticsearch is down.
func New(opts Options) (*Store, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if err := checkPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if opts.Shards <= 0 {
		opts.Shards = 1
	}
	if opts.Replicas < 0 {
		return nil, fmt.Errorf("elastic store: replicas %d is negative", opts.Replicas)
	}
	if opts.TemplatePriority <= 0 {
		opts.TemplatePriority = 200
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.FlushBytes <= 0 {
		opts.FlushBytes = 5 << 20
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 5
	}
	if opts.Backoff == nil {
		opts.Backoff = Backoff(100*time.Millisecond, 5*time.Second)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := opts.Config
	if len(cfg.RetryOnStatus) == 0 {
		cfg.RetryOnStatus = []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = opts.MaxRetries
	}
	if cfg.RetryBackoff == nil {
		cfg.RetryBackoff = opts.Backoff
	}
	es, err := elasticsearch.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("elastic store: client: %w", err)
	}
	return &Store{es: es, opts: opts, log: opts.Logger.With("component", "store.elastic")}, nil
}

func checkPrefix(p string) error {
	if p != strings.ToLower(p) || strings.ContainsAny(p, `\/*?"<>| ,#:`) || strings.HasPrefix(p, "_") ||
		strings.HasPrefix(p, "-") || strings.HasPrefix(p, "+") || len(p) > 200 ||
		!(strings.HasSuffix(p, "-") || strings.HasSuffix(p, ".")) {
		return fmt.Errorf("elastic store: index prefix %q: want lowercase, no \\/*?\"<>|,#: or spaces, not starting with _-+, ending in '-' or '.'", p)
	}
	return nil
}

// Backoff returns an exponential back-off from first doubling up to limit, with up to 25%
// random jitter so that retrying clients do not move in step.
func Backoff(first, limit time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := first
		for i := 1; i < attempt && d < limit; i++ {
			d *= 2
		}
		return time.Duration(float64(min(d, limit)) * (1 + rand.Float64()/4))
	}
}

// IndexName is the daily index that holds points of t's UTC day.
func (s *Store) IndexName(t time.Time) string { return s.opts.Prefix + t.UTC().Format(dayLayout) }

func (s *Store) pattern() string { return s.opts.Prefix + "*" }

func (s *Store) templateName() string { return strings.TrimRight(s.opts.Prefix, "-.") }

// Template is the index template body the store installs.
func (s *Store) Template() map[string]any {
	return map[string]any{
		"index_patterns": []string{s.pattern()},
		"priority":       s.opts.TemplatePriority,
		"_meta":          map[string]any{"managed_by": "binlake judge", "schema": 1},
		"template": map[string]any{
			"settings": map[string]any{
				"number_of_shards":   s.opts.Shards,
				"number_of_replicas": s.opts.Replicas,
			},
			"mappings": map[string]any{
				"dynamic": "strict",
				"dynamic_templates": []any{map[string]any{
					"labels_as_keywords": map[string]any{
						"path_match":         "labels.*",
						"match_mapping_type": "string",
						"mapping":            map[string]any{"type": "keyword", "ignore_above": store.MaxNameLen},
					},
				}},
				"properties": map[string]any{
					"node":       map[string]any{"type": "keyword"},
					"name":       map[string]any{"type": "keyword"},
					"labels":     map[string]any{"type": "object", "dynamic": true},
					"labels_key": map[string]any{"type": "keyword"},
					"ts":         map[string]any{"type": "date", "format": "epoch_millis"},
					"hour":       map[string]any{"type": "byte"},
					"value":      map[string]any{"type": "double"},
				},
			},
		},
	}
}

// ensureTemplate installs the index template once per store (again after a failure).
func (s *Store) ensureTemplate(ctx context.Context) error {
	s.tmplMu.Lock()
	defer s.tmplMu.Unlock()
	if s.tmplReady {
		return nil
	}
	body, err := json.Marshal(s.Template())
	if err != nil {
		return fmt.Errorf("elastic store: encode template: %w", err)
	}
	req := esapi.IndicesPutIndexTemplateRequest{Name: s.templateName(), Body: bytes.NewReader(body)}
	if _, err := s.do(ctx, req, "put index template "+s.templateName()); err != nil {
		return err
	}
	s.tmplReady = true
	return nil
}

// doc is the stored form of a point.
type doc struct {
	Node      string            `json:"node"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	LabelsKey string            `json:"labels_key"`
	TS        int64             `json:"ts"`
	Hour      int               `json:"hour"`
	Value     float64           `json:"value"`
}

// docID is a stable id of a point's identity: 16 bytes of SHA-256, base64url.
func docID(node, name, labelsKey string, ms int64) string {
	h := sha256.New()
	for _, s := range []string{node, name, labelsKey} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ms))
	h.Write(b[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

type item struct {
	index, id string
	body      []byte
}

// Write validates every point, so that a bad batch stores nothing, indexes them with the
// bulk indexer, retrying documents refused with 429 or 5xx, and refreshes the touched
// indices, so that the points are visible to queries when it returns.
func (s *Store) Write(ctx context.Context, points []store.Point) error {
	if err := store.ValidatePoints(points); err != nil {
		return fmt.Errorf("elastic store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if len(points) == 0 {
		return nil
	}
	if err := s.ensureTemplate(ctx); err != nil {
		return err
	}
	items := make([]item, len(points))
	touched := map[string]bool{}
	for i, p := range points {
		ms := p.TS.UnixMilli()
		d := doc{Node: p.Node, Name: p.Name, LabelsKey: store.LabelKey(p.Labels), TS: ms, Hour: p.TS.UTC().Hour(), Value: p.Value}
		if len(p.Labels) > 0 {
			d.Labels = p.Labels
		}
		body, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("elastic store: encode point %d: %w", i, err)
		}
		items[i] = item{index: s.IndexName(p.TS), id: docID(d.Node, d.Name, d.LabelsKey, ms), body: body}
		touched[items[i].index] = true
	}
	for attempt := 0; ; attempt++ {
		retry, err := s.bulk(ctx, items)
		if err != nil {
			return err
		}
		if len(retry) == 0 {
			break
		}
		if attempt >= s.opts.MaxRetries {
			return fmt.Errorf("elastic store: %d of %d points still refused after %d retries: %w",
				len(retry), len(points), attempt, ErrRejected)
		}
		s.log.Debug("bulk items refused, retrying", "items", len(retry), "attempt", attempt+1)
		if err := sleep(ctx, s.opts.Backoff(attempt+1)); err != nil {
			return fmt.Errorf("elastic store: retry refused points: %w", err)
		}
		items = retry
	}
	return s.refresh(ctx, slices.Sorted(mapKeys(touched)))
}

// ErrRejected reports points the engine kept refusing with 429 or 5xx after the retries.
var ErrRejected = errors.New("points refused by the engine")

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// bulk indexes items once. It returns the items to retry (refused with 429 or 5xx) and an
// error for anything else: a request that failed after the client's own retries, or a
// document the engine rejected for good (a mapping conflict, say).
func (s *Store) bulk(ctx context.Context, items []item) ([]item, error) {
	var (
		mu       sync.Mutex
		retry    []item
		failures []string
		failed   int
		reqErr   error
	)
	// The indexer preallocates FlushBytes per worker: size both to this batch, so that a
	// small Write neither allocates megabytes nor splits into several requests.
	size := 0
	for _, it := range items {
		size += len(it.body) + len(it.index) + len(it.id) + 64 // action line and newlines
	}
	flushBytes, workers := s.opts.FlushBytes, s.opts.Workers
	if size < flushBytes {
		flushBytes, workers = size+1, 1
	}
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client:        s.es,
		NumWorkers:    workers,
		FlushBytes:    flushBytes,
		FlushInterval: time.Hour, // Close flushes; no timer-driven partial flushes
		OnError: func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			if reqErr == nil {
				reqErr = err
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("elastic store: bulk indexer: %w", err)
	}
	for i := range items {
		it := items[i]
		err := bi.Add(ctx, esutil.BulkIndexerItem{
			Index:      it.index,
			Action:     "index",
			DocumentID: it.id,
			Body:       bytes.NewReader(it.body),
			OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil && (res.Status == http.StatusTooManyRequests || res.Status >= 500) {
					retry = append(retry, it)
					return
				}
				if err == nil && res.Status == 0 {
					// The whole request failed; OnError carries the cause.
					return
				}
				failed++
				if len(failures) < 3 {
					if err != nil {
						failures = append(failures, err.Error())
					} else {
						failures = append(failures, fmt.Sprintf("%d %s: %s", res.Status, res.Error.Type, res.Error.Reason))
					}
				}
			},
		})
		if err != nil {
			_ = bi.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("elastic store: bulk add: %w", err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		return nil, fmt.Errorf("elastic store: bulk: %w", err)
	}
	if reqErr != nil {
		return nil, fmt.Errorf("elastic store: bulk request: %w", reqErr)
	}
	if failed > 0 {
		return nil, fmt.Errorf("elastic store: %d of %d points rejected: %s: %w", failed, len(items), strings.Join(failures, "; "), store.ErrInvalid)
	}
	if st := bi.Stats(); st.NumFailed == 0 && st.NumIndexed+st.NumCreated+st.NumUpdated < uint64(len(items)) {
		return nil, fmt.Errorf("elastic store: bulk indexed %d of %d points", st.NumIndexed+st.NumCreated+st.NumUpdated, len(items))
	}
	return retry, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) refresh(ctx context.Context, indices []string) error {
	req := esapi.IndicesRefreshRequest{Index: indices, IgnoreUnavailable: esapi.BoolPtr(true)}
	_, err := s.do(ctx, req, "refresh")
	return err
}

// seriesQuery is the filter selecting q's points.
func seriesQuery(q store.Query) map[string]any {
	return map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"term": map[string]any{"node": q.Node}},
		map[string]any{"term": map[string]any{"name": q.Name}},
		map[string]any{"term": map[string]any{"labels_key": store.LabelKey(q.Labels)}},
		map[string]any{"range": map[string]any{"ts": map[string]any{
			"gte": q.From.UnixMilli(), "lt": q.To.UnixMilli(), "format": "epoch_millis",
		}}},
	}}}
}

var statsAggs = map[string]any{
	"count": map[string]any{"value_count": map[string]any{"field": "value"}},
	"avg":   map[string]any{"avg": map[string]any{"field": "value"}},
	"max":   map[string]any{"max": map[string]any{"field": "value"}},
	"p95":   map[string]any{"percentiles": map[string]any{"field": "value", "percents": []float64{95}}},
}

// statsResult decodes the statsAggs of one bucket.
type statsResult struct {
	Count struct{ Value int64 }    `json:"count"`
	Avg   struct{ Value *float64 } `json:"avg"`
	Max   struct{ Value *float64 } `json:"max"`
	P95   struct {
		Values map[string]*float64 `json:"values"`
	} `json:"p95"`
}

func (r statsResult) stats() store.Stats {
	if r.Count.Value == 0 {
		return store.Stats{}
	}
	st := store.Stats{Count: r.Count.Value}
	if r.Avg.Value != nil {
		st.Avg = *r.Avg.Value
	}
	if r.Max.Value != nil {
		st.Max = *r.Max.Value
	}
	for _, v := range r.P95.Values { // the one key, "95.0"
		if v != nil {
			st.P95 = *v
		}
	}
	return st
}

// Stats aggregates the series over the query's range.
func (s *Store) Stats(ctx context.Context, q store.Query) (store.Stats, error) {
	var res struct {
		Aggregations statsResult `json:"aggregations"`
	}
	ok, err := s.search(ctx, q, statsAggs, &res)
	if err != nil || !ok {
		return store.Stats{}, err
	}
	return res.Aggregations.stats(), nil
}

// Profile aggregates the series per stored UTC hour of day.
func (s *Store) Profile(ctx context.Context, q store.Query) (store.HourProfile, error) {
	var prof store.HourProfile
	aggs := map[string]any{"hours": map[string]any{
		"terms": map[string]any{"field": "hour", "size": 24},
		"aggs":  statsAggs,
	}}
	var res struct {
		Aggregations struct {
			Hours struct {
				Buckets []struct {
					Key int `json:"key"`
					statsResult
				} `json:"buckets"`
			} `json:"hours"`
		} `json:"aggregations"`
	}
	ok, err := s.search(ctx, q, aggs, &res)
	if err != nil || !ok {
		return prof, err
	}
	for _, b := range res.Aggregations.Hours.Buckets {
		if b.Key < 0 || b.Key > 23 {
			return prof, fmt.Errorf("elastic store: profile %s/%s: hour bucket %d out of range", q.Node, q.Name, b.Key)
		}
		prof[b.Key] = b.stats()
	}
	return prof, nil
}

// search runs an aggregation-only search for q into out; false when the range is empty.
func (s *Store) search(ctx context.Context, q store.Query, aggs map[string]any, out any) (bool, error) {
	if err := q.Validate(); err != nil {
		return false, fmt.Errorf("elastic store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false, store.ErrClosed
	}
	if !q.From.Before(q.To) {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{"size": 0, "track_total_hits": false, "query": seriesQuery(q), "aggs": aggs})
	if err != nil {
		return false, fmt.Errorf("elastic store: encode query: %w", err)
	}
	what := fmt.Sprintf("query %s/%s", q.Node, q.Name)
	raw, err := s.do(ctx, s.searchRequest(body), what)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("elastic store: %s: decode answer: %w", what, err)
	}
	return true, nil
}

func (s *Store) searchRequest(body []byte) esapi.SearchRequest {
	return esapi.SearchRequest{
		Index:             []string{s.pattern()},
		Body:              bytes.NewReader(body),
		AllowNoIndices:    esapi.BoolPtr(true),
		IgnoreUnavailable: esapi.BoolPtr(true),
	}
}

// Nodes pages through a composite aggregation on node over [from, to).
func (s *Store) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if !from.Before(to) {
		return nil, nil
	}
	var nodes []string
	var after map[string]any
	for {
		comp := map[string]any{
			"size":    1000,
			"sources": []any{map[string]any{"node": map[string]any{"terms": map[string]any{"field": "node"}}}},
		}
		if after != nil {
			comp["after"] = after
		}
		body, err := json.Marshal(map[string]any{
			"size": 0, "track_total_hits": false,
			"query": map[string]any{"range": map[string]any{"ts": map[string]any{
				"gte": from.UnixMilli(), "lt": to.UnixMilli(), "format": "epoch_millis"}}},
			"aggs": map[string]any{"nodes": map[string]any{"composite": comp}},
		})
		if err != nil {
			return nil, fmt.Errorf("elastic store: encode nodes query: %w", err)
		}
		raw, err := s.do(ctx, s.searchRequest(body), "nodes")
		if err != nil {
			return nil, err
		}
		var res struct {
			Aggregations struct {
				Nodes struct {
					AfterKey map[string]any `json:"after_key"`
					Buckets  []struct {
						Key struct{ Node string } `json:"key"`
					} `json:"buckets"`
				} `json:"nodes"`
			} `json:"aggregations"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("elastic store: nodes: decode answer: %w", err)
		}
		for _, b := range res.Aggregations.Nodes.Buckets {
			nodes = append(nodes, b.Key.Node)
		}
		if len(res.Aggregations.Nodes.Buckets) == 0 || res.Aggregations.Nodes.AfterKey == nil {
			return nodes, nil
		}
		after = res.Aggregations.Nodes.AfterKey
	}
}

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

// engineError is an error answer of the engine.
type engineError struct {
	what   string
	status int
	body   string
}

func (e *engineError) Error() string {
	var parsed struct {
		Error struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.body), &parsed) == nil && parsed.Error.Type != "" {
		return fmt.Sprintf("elastic store: %s: %d %s: %s", e.what, e.status, parsed.Error.Type, parsed.Error.Reason)
	}
	return fmt.Sprintf("elastic store: %s: status %d: %.300s", e.what, e.status, e.body)
}

// unsupported reports an answer that says the engine has no such endpoint: 404/405, or
// the 400 with which an engine without it reads the path as a document API call:
// "Invalid type: expecting [_doc] but got [_delete_by_query]", or "request
// [/idx/_delete_by_query] contains unrecognized parameters" (parameters the document
// API lacks).
func (e *engineError) unsupported(endpoint string) bool {
	switch e.status {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return !strings.Contains(e.body, "index_not_found_exception")
	case http.StatusBadRequest:
		return strings.Contains(e.body, "got ["+endpoint+"]") ||
			(strings.Contains(e.body, "/"+endpoint+"]") && strings.Contains(e.body, "unrecognized parameter"))
	}
	return false
}

// do performs req and returns the body of a 2xx answer; any other answer becomes an
// *engineError.
func (s *Store) do(ctx context.Context, req esapi.Request, what string) ([]byte, error) {
	res, err := req.Do(ctx, s.es)
	if err != nil {
		return nil, fmt.Errorf("elastic store: %s: %w", what, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("elastic store: %s: read answer: %w", what, err)
	}
	if res.IsError() {
		return nil, &engineError{what: what, status: res.StatusCode, body: string(body)}
	}
	return body, nil
}

// Close waits for running operations and closes the client. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.es.Close(ctx); err != nil && !errors.Is(err, elasticsearch.ErrAlreadyClosed) {
		return fmt.Errorf("elastic store: close client: %w", err)
	}
	return nil
}
