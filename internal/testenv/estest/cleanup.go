package estest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/judge/store/elastic"
)

// CleanupPrefix removes, when the test ends, the indices (the records index too) and the
// index template a test created under prefix in the Elasticsearch test service: best
// effort, what fails is logged.
func CleanupPrefix(t testing.TB, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		es := Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, req := range []esapi.Request{
			esapi.IndicesDeleteRequest{Index: []string{prefix + "*", elastic.RecordsIndex(prefix)}, AllowNoIndices: esapi.BoolPtr(true), IgnoreUnavailable: esapi.BoolPtr(true)},
			esapi.IndicesDeleteIndexTemplateRequest{Name: strings.TrimRight(prefix, "-.")},
		} {
			res, err := req.Do(ctx, es)
			if err != nil {
				t.Logf("cleanup %s: %v", prefix, err)
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.IsError() && res.StatusCode != http.StatusNotFound {
				t.Logf("cleanup %s: %s", prefix, res.Status())
			}
		}
	})
}
