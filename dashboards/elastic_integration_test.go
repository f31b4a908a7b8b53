package dashboards

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// agentShape is what the dashboards' points are made of: the agent's batch as the store
// benchmarks measure it (benchkit.AgentShape, kept as its figures were measured) and the
// wave's work per instance that the dashboards show beside its rows.
var agentShape = append(slices.Clone(benchkit.AgentShape),
	benchkit.SeriesShape{Names: []string{"wave.bytes_per_s", "wave.binlog_bytes_per_s"}, Label: "instance", Total: true})

// hasNodeLevel reports whether the agent sends a node-level point for every one of names.
func hasNodeLevel(names []string) bool {
	for _, n := range names {
		ok := false
		for _, sr := range agentShape {
			if slices.Contains(sr.Names, n) {
				ok = sr.Label == "" || sr.Total
			}
		}
		if !ok {
			return false
		}
	}
	return len(names) > 0
}

// TestDashboardQueriesIntegration runs every query of every dashboard against the real
// engine, over points the judge's elastic store wrote: each must parse, match documents,
// match only documents holding the metric it names, only node-level ones when it says
// labels_key:"", only the node the variable selects, and give at least one bucket per
// split.
func TestDashboardQueriesIntegration(t *testing.T) {
	cfg := estest.Config(t)
	prefix := fmt.Sprintf("binlake-test-%08x-dash-", rand.Uint32())
	es := estest.Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, req := range []esapi.Request{
			esapi.IndicesDeleteRequest{Index: []string{prefix + "*"}, AllowNoIndices: esapi.BoolPtr(true), IgnoreUnavailable: esapi.BoolPtr(true)},
			esapi.IndicesDeleteIndexTemplateRequest{Name: strings.TrimRight(prefix, "-.")},
		} {
			if res, err := req.Do(ctx, es); err != nil {
				t.Logf("cleanup %s: %v", prefix, err)
			} else {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}
	})
	s, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	now := time.Now().UTC().Truncate(time.Second)
	var pts []store.Point
	for _, node := range []string{"wave-1", "wave-2"} {
		for i := range 3 {
			ts := now.Add(-time.Duration(i) * time.Minute)
			for _, sr := range agentShape {
				for _, name := range sr.Names {
					if sr.Label == "" || sr.Total {
						pts = append(pts, store.Point{Node: node, Name: name, TS: ts, Value: float64(10 + i)})
					}
					if sr.Label != "" {
						for _, v := range []string{"a", "b"} {
							pts = append(pts, store.Point{Node: node, Name: name, TS: ts, Value: float64(1000 + i),
								Labels: map[string]string{sr.Label: v}})
						}
					}
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Write(ctx, pts); err != nil {
		t.Fatalf("write %d points: %v", len(pts), err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}

	m := judgeMapping(t)
	var uses []use
	grafana, ds := loadGrafana(t)
	for file, d := range grafana {
		u, _ := grafanaUses(d, file, ds)
		uses = append(uses, u...)
	}
	for file, objs := range loadKibana(t) {
		u, _ := kibanaUses(file, objs)
		uses = append(uses, u...)
	}
	from, to := now.Add(-time.Hour), now.Add(time.Minute)
	ran := 0
	for _, u := range uses {
		if u.query == "" && u.split == "" {
			continue // an index pattern: its fields were checked by the unit tests
		}
		if u.index != m.pattern {
			t.Errorf("%s: index %q, want %q", u.where, u.index, m.pattern)
			continue
		}
		ran++
		t.Run(u.where, func(t *testing.T) { runUse(ctx, t, es, prefix+"*", u, from, to) })
	}
	if ran < 20 {
		t.Errorf("ran %d queries; the dashboards have more", ran)
	}
}

// runUse runs one dashboard query the way Grafana and Kibana send Lucene queries
// (query_string with analyze_wildcard), with the variables set to one node and all
// instances, and checks what it matched.
func runUse(ctx context.Context, t *testing.T, es esapi.Transport, index string, u use, from, to time.Time) {
	q := u.query
	onlyNode := strings.Contains(q, "$node")
	q = strings.ReplaceAll(q, "$node", `"wave-2"`)
	q = strings.ReplaceAll(q, "$instance", "*")
	filter := []any{map[string]any{"range": map[string]any{"ts": map[string]any{
		"gte": from.UnixMilli(), "lte": to.UnixMilli(), "format": "epoch_millis"}}}}
	if q != "" {
		filter = append(filter, map[string]any{"query_string": map[string]any{"query": q, "analyze_wildcard": true}})
	}
	body := map[string]any{"size": 1000, "track_total_hits": true, "query": map[string]any{"bool": map[string]any{"filter": filter}}}
	var sub map[string]any
	if u.metric != "" && u.metric != "count" {
		sub = map[string]any{"m": map[string]any{u.metric: map[string]any{"field": u.mfield}}}
	}
	if u.split != "" {
		terms := map[string]any{"terms": map[string]any{"field": u.split, "size": 100}}
		if sub != nil {
			terms["aggs"] = sub
		}
		body["aggs"] = map[string]any{"split": terms}
	} else if sub != nil {
		body["aggs"] = sub
	}
	raw, _ := json.Marshal(body)
	res, err := esapi.SearchRequest{Index: []string{index}, Body: bytes.NewReader(raw)}.Do(ctx, es)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.IsError() {
		t.Fatalf("query %q: %s: %s", q, res.Status(), out)
	}
	var r struct {
		Hits struct {
			Total struct{ Value int } `json:"total"`
			Hits  []struct {
				Source struct {
					Node      string             `json:"node"`
					LabelsKey string             `json:"labels_key"`
					Labels    map[string]string  `json:"labels"`
					M         map[string]float64 `json:"m"`
				} `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
		Aggs struct {
			M     *struct{ Value *float64 } `json:"m"`
			Split *struct {
				Buckets []struct {
					Key string                    `json:"key"`
					M   *struct{ Value *float64 } `json:"m"`
				} `json:"buckets"`
			} `json:"split"`
		} `json:"aggregations"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	if r.Hits.Total.Value == 0 {
		t.Fatalf("query %q matches no point", q)
	}
	names := metricNames(q)
	nodeLevel := strings.Contains(q, `labels_key:""`)
	for _, h := range r.Hits.Hits {
		src := h.Source
		for _, n := range names {
			if _, ok := src.M[n]; !ok {
				t.Errorf("query %q matched a document without %s: %v %v", q, n, src.Labels, src.M)
			}
		}
		if nodeLevel && (src.LabelsKey != "" || len(src.Labels) > 0) {
			t.Errorf("query %q (node level) matched a labelled document %v", q, src.Labels)
		}
		if onlyNode && src.Node != "wave-2" {
			t.Errorf("query %q with node wave-2 matched node %q", q, src.Node)
		}
		if label, ok := strings.CutPrefix(u.split, "labels."); ok && src.Labels[label] == "" {
			t.Errorf("query %q split by %s matched a document without that label: %v", q, u.split, src.Labels)
		}
	}
	switch {
	case u.split != "":
		if r.Aggs.Split == nil || len(r.Aggs.Split.Buckets) == 0 {
			t.Fatalf("query %q: no %s buckets", q, u.split)
		}
		for _, b := range r.Aggs.Split.Buckets {
			if sub != nil && (b.M == nil || b.M.Value == nil) {
				t.Errorf("query %q: bucket %s has no %s of %s", q, b.Key, u.metric, u.mfield)
				continue
			}
			// A per-node series of a metric that has a node-level point must show that
			// point, not mix in the per-core, per-interface or per-instance ones
			// (written as 1000+, node-level ones as 10–12).
			if u.split == "node" && sub != nil && strings.HasPrefix(u.mfield, "m.") && hasNodeLevel(names) && *b.M.Value >= 100 {
				t.Errorf("query %q: node %s shows %v: labelled points mixed into the node-level series", q, b.Key, *b.M.Value)
			}
		}
	case sub != nil:
		if r.Aggs.M == nil || r.Aggs.M.Value == nil {
			t.Errorf("query %q: no %s of %s", q, u.metric, u.mfield)
		}
	}
}
