package elastic_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// TestElasticMappingUpdateRacingADeleteIntegration: the first write's mapping update on
// the index pattern failing with index_not_found (the retention deleted an old day's
// index between the engine's expansion of the pattern and the update, at the start of a
// judge with days to drop) is tried again, not returned: the write succeeds at once, and
// no store write error is counted for a judge that only started.
func TestElasticMappingUpdateRacingADeleteIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	target, err := url.Parse(strings.Split(testenv.Require(t, testenv.Elasticsearch), ",")[0])
	if err != nil {
		t.Fatal(err)
	}
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var raced atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/_mapping") && raced.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"root_cause":[{"type":"index_not_found_exception","reason":"no such index [` + prefix + `2026.11.01]"}],"type":"index_not_found_exception","reason":"no such index [` + prefix + `2026.11.01]"},"status":404}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := estest.Config(t)
	cfg.Addresses = []string{srv.URL}
	s, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, MaxRetries: 1,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = s.Write(ctx, []store.Point{{Node: "n1", Name: "cpu.util", TS: time.Now(), Value: 1}})
	if err != nil {
		t.Fatalf("the first write: %v", err)
	}
	if n := raced.Load(); n != 2 {
		t.Fatalf("mapping updates = %d, want 2 (the one that raced, and its retry)", n)
	}
}
