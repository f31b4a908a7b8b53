package elastic

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/binlake/binlake/judge/store"
)

// scanPage is how many documents one search of Scan reads.
const scanPage = 1000

// Scan pages through the documents of [from, to) in (ts, node, labels_key) order with
// search_after (a total order: a document's identity, its index following from ts) and
// hands fn the points of each page. Schema-1 documents (no m) are left out.
func (s *Store) Scan(ctx context.Context, from, to time.Time, fn func([]store.Point) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if !from.Before(to) {
		return nil
	}
	query := map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"range": map[string]any{"ts": map[string]any{
			"gte": from.UnixMilli(), "lt": to.UnixMilli(), "format": "epoch_millis"}}},
		map[string]any{"exists": map[string]any{"field": "m"}},
	}}}
	var after []json.RawMessage
	var pts []store.Point
	for {
		req := map[string]any{
			"size": scanPage, "track_total_hits": false, "query": query,
			"_source": []string{"node", "ts", "labels", "m"},
			"sort":    []any{map[string]any{"ts": "asc"}, map[string]any{"node": "asc"}, map[string]any{"labels_key": "asc"}},
		}
		if after != nil {
			req["search_after"] = after
		}
		body, err := json.Marshal(req)
		if err != nil {
			return fmt.Errorf("elastic store: encode scan: %w", err)
		}
		raw, err := s.do(ctx, s.searchRequest(body), "scan")
		if err != nil {
			return err
		}
		var res struct {
			Hits struct {
				Hits []struct {
					Source struct {
						Node   string             `json:"node"`
						TS     int64              `json:"ts"`
						Labels map[string]string  `json:"labels"`
						M      map[string]float64 `json:"m"`
					} `json:"_source"`
					Sort []json.RawMessage `json:"sort"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("elastic store: scan: decode answer: %w", err)
		}
		hits := res.Hits.Hits
		pts = pts[:0]
		for _, h := range hits {
			src := h.Source
			ts := time.UnixMilli(src.TS).UTC()
			for name, v := range src.M {
				pts = append(pts, store.Point{Node: src.Node, Name: name, Labels: src.Labels, TS: ts, Value: v})
			}
		}
		if len(pts) > 0 {
			if err := fn(pts); err != nil {
				return fmt.Errorf("elastic store: scan: %w", err)
			}
		}
		if len(hits) < scanPage {
			return nil
		}
		after = hits[len(hits)-1].Sort
	}
}
