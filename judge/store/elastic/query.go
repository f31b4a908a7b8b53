package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	wire "github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// metricField is the field of a metric's values: m.<name>. Query.Validate has checked
// the name against the metric grammar, so it holds no wildcard.
func metricField(name string) string { return "m." + name }

// seriesQuery is the filter selecting the documents that hold q's points.
func seriesQuery(q store.Query) map[string]any {
	return map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"term": map[string]any{"node": q.Node}},
		map[string]any{"term": map[string]any{"labels_key": wire.LabelSetKey(q.Labels)}},
		map[string]any{"range": map[string]any{"ts": map[string]any{
			"gte": q.From.UnixMilli(), "lt": q.To.UnixMilli(), "format": "epoch_millis",
		}}},
		map[string]any{"exists": map[string]any{"field": metricField(q.Name)}},
	}}}
}

// statsAggs are the aggregations of Stats over one metric's field.
func statsAggs(name string) map[string]any {
	f := metricField(name)
	return map[string]any{
		"count": map[string]any{"value_count": map[string]any{"field": f}},
		"avg":   map[string]any{"avg": map[string]any{"field": f}},
		"max":   map[string]any{"max": map[string]any{"field": f}},
		"p95":   map[string]any{"percentiles": map[string]any{"field": f, "percents": []float64{95}}},
	}
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
	ok, err := s.search(ctx, q, statsAggs(q.Name), &res)
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
		"aggs":  statsAggs(q.Name),
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
	var nodes []string
	err := s.composite(ctx, "nodes", from, to, "", []string{"node"}, func(key map[string]string) error {
		nodes = append(nodes, key["node"])
		return nil
	})
	return nodes, err
}

// Series pages through a composite aggregation on node and labels_key over the
// documents of [from, to) that hold the metric name.
func (s *Store) Series(ctx context.Context, name string, from, to time.Time) ([]store.SeriesKey, error) {
	var out []store.SeriesKey
	err := s.composite(ctx, "series "+name, from, to, name, []string{"node", "labels_key"}, func(key map[string]string) error {
		l, err := wire.ParseLabelSetKey(key["labels_key"])
		if err != nil {
			return fmt.Errorf("elastic store: series %s of node %q: %w", name, key["node"], err)
		}
		out = append(out, store.SeriesKey{Node: key["node"], Labels: l})
		return nil
	})
	if err != nil {
		return nil, err
	}
	store.SortSeries(out) // the aggregation's order is the keys' bytes: the same, but said once
	return out, nil
}

// composite pages through a composite aggregation of keyword fields over the documents
// of [from, to) (holding the metric name, unless it is empty), handing fn each bucket's
// key by field.
func (s *Store) composite(ctx context.Context, what string, from, to time.Time, name string, fields []string, fn func(map[string]string) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if !from.Before(to) {
		return nil
	}
	filter := []any{map[string]any{"range": map[string]any{"ts": map[string]any{
		"gte": from.UnixMilli(), "lt": to.UnixMilli(), "format": "epoch_millis"}}}}
	if name != "" {
		filter = append(filter, map[string]any{"exists": map[string]any{"field": metricField(name)}})
	}
	sources := make([]any, len(fields))
	for i, f := range fields {
		sources[i] = map[string]any{f: map[string]any{"terms": map[string]any{"field": f}}}
	}
	var after map[string]any
	for {
		comp := map[string]any{"size": 1000, "sources": sources}
		if after != nil {
			comp["after"] = after
		}
		body, err := json.Marshal(map[string]any{
			"size": 0, "track_total_hits": false,
			"query": map[string]any{"bool": map[string]any{"filter": filter}},
			"aggs":  map[string]any{"keys": map[string]any{"composite": comp}},
		})
		if err != nil {
			return fmt.Errorf("elastic store: encode %s query: %w", what, err)
		}
		raw, err := s.do(ctx, s.searchRequest(body), what)
		if err != nil {
			return err
		}
		var res struct {
			Aggregations struct {
				Keys struct {
					AfterKey map[string]any `json:"after_key"`
					Buckets  []struct {
						Key map[string]string `json:"key"`
					} `json:"buckets"`
				} `json:"keys"`
			} `json:"aggregations"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("elastic store: %s: decode answer: %w", what, err)
		}
		for _, b := range res.Aggregations.Keys.Buckets {
			if err := fn(b.Key); err != nil {
				return err
			}
		}
		if len(res.Aggregations.Keys.Buckets) == 0 || res.Aggregations.Keys.AfterKey == nil {
			return nil
		}
		after = res.Aggregations.Keys.AfterKey
	}
}
