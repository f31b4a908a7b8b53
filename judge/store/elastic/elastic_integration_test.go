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

// cleanup removes a prefix's indices and template (best effort, logged).
func cleanup(t testing.TB, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		es := estest.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, req := range []esapi.Request{
			esapi.IndicesDeleteRequest{Index: []string{prefix + "*"}, AllowNoIndices: esapi.BoolPtr(true), IgnoreUnavailable: esapi.BoolPtr(true)},
			esapi.IndicesDeleteIndexTemplateRequest{Name: strings.TrimRight(prefix, "-.")},
		} {
			res, err := req.Do(ctx, es)
			if err != nil {
				t.Logf("cleanup %s: %v", prefix, err)
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}

func TestElasticStoreIntegration(t *testing.T) {
	testenv.Require(t, testenv.Elasticsearch)
	prefix := testPrefix(t)
	cleanup(t, prefix)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, prefix) })
}

// TestElasticLargeIntegration is the acceptance: 100,000 points written, avg and
// max read back exactly, p95 within the TDigest window around the exact value.
func TestElasticLargeIntegration(t *testing.T) {
	testenv.Require(t, testenv.Elasticsearch)
	prefix := testPrefix(t)
	cleanup(t, prefix)
	storetest.Large(t, newStore(t, prefix), 100_000)
}
