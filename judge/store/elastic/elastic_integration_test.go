package elastic_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
	"github.com/binlake/binlake/judge/store/storetest"
)

// testPrefix gives each test its own indices and template, removed at the end, so that
// the suite's retention deletes touch nothing but its own data on the shared engine.
func testPrefix(t testing.TB) string {
	return fmt.Sprintf("binlake-test-%08x-metrics-", rand.Uint32())
}

// newStore opens a store on the test engine with prefix and removes the prefix's
// indices and template when the test ends.
func newStore(t testing.TB, prefix string) *elastic.Store {
	t.Helper()
	s, err := elastic.New(elastic.Options{Config: estest.Config(t), Prefix: prefix})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestElasticStoreIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	testenv.Require(t, testenv.Elasticsearch)
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, prefix) })
}

// TestElasticLargeIntegration is the acceptance: 100,000 points written, avg and
// max read back exactly, p95 within the TDigest window around the exact value.
func TestElasticLargeIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	testenv.Require(t, testenv.Elasticsearch)
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	storetest.Large(t, newStore(t, prefix), 100_000)
}

// TestElasticUpgradesSchema1Integration: a day's index created with the mapping of
// schema 1 (one strict document per point) keeps taking writes once the judge runs
// schema 2, which reads the new points only.
func TestElasticUpgradesSchema1Integration(t *testing.T) {
	testenv.Require(t, testenv.Elasticsearch)
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	es := estest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	day := time.Date(2019, 5, 5, 0, 0, 0, 0, time.UTC)
	index := prefix + "2019.05.05"
	for _, req := range []esapi.Request{
		esapi.IndicesCreateRequest{Index: index, Body: strings.NewReader(`{"mappings": {"dynamic": "strict",
			"dynamic_templates": [{"labels_as_keywords": {"path_match": "labels.*", "match_mapping_type": "string", "mapping": {"type": "keyword"}}}],
			"properties": {"node": {"type": "keyword"}, "name": {"type": "keyword"}, "labels": {"type": "object", "dynamic": true},
				"labels_key": {"type": "keyword"}, "ts": {"type": "date", "format": "epoch_millis"}, "hour": {"type": "byte"},
				"value": {"type": "double"}}}}`)},
		esapi.IndexRequest{Index: index, DocumentID: "old", Refresh: "true", Body: strings.NewReader(fmt.Sprintf(
			`{"node": "w1", "name": "cpu.util", "labels_key": "", "ts": %d, "hour": 1, "value": 50}`, day.Add(time.Hour).UnixMilli()))},
	} {
		res, err := req.Do(ctx, es)
		if err != nil {
			t.Fatalf("set up the schema-1 index: %v", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.IsError() {
			t.Fatalf("set up the schema-1 index: %s: %s", res.Status(), body)
		}
	}

	s := newStore(t, prefix)
	pts := []store.Point{
		{Node: "w1", Name: "cpu.util", TS: day.Add(2 * time.Hour), Value: 10},
		{Node: "w1", Name: "wave.tps", Labels: map[string]string{"instance": "orders"}, TS: day.Add(2 * time.Hour), Value: 20},
	}
	if err := s.Write(ctx, pts); err != nil {
		t.Fatalf("write into the schema-1 index: %v", err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	got, err := s.Stats(ctx, store.Query{Node: "w1", Name: "cpu.util", From: day, To: day.Add(24 * time.Hour)})
	if err != nil || got != (store.Stats{Count: 1, Avg: 10, Max: 10, P95: 10}) {
		t.Fatalf("stats: %+v, %v; want the one schema-2 point", got, err)
	}
	var scanned []store.Point
	err = s.Scan(ctx, day, day.Add(24*time.Hour), func(chunk []store.Point) error {
		scanned = append(scanned, chunk...)
		return nil
	})
	if err != nil || len(scanned) != len(pts) {
		t.Fatalf("scan: %v, %v; want the %d schema-2 points", scanned, err, len(pts))
	}
}
