package estest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv/estest"
)

// TestElasticsearchSmokeIntegration checks that the test engine serves what the ES store needs
// through go-elasticsearch/v8: an explicit mapping, a refreshed single write found by a term
// query, and a bulk load counted back.
func TestElasticsearchSmokeIntegration(t *testing.T) {
	es := estest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	index := "binlake-smoke-" + randomSuffix(t)
	createIndex(ctx, t, es, index, `{
	  "settings": {"number_of_shards": 1, "number_of_replicas": 0},
	  "mappings": {"properties": {
	    "table":  {"type": "keyword"},
	    "ts":     {"type": "date"},
	    "amount": {"type": "double"}
	  }}
	}`)
	t.Cleanup(func() {
		res, err := es.Indices.Delete([]string{index})
		if err != nil {
			t.Errorf("deleting index %s: %v", index, err)
			return
		}
		defer res.Body.Close()
		if res.IsError() {
			t.Errorf("deleting index %s: %s", index, res.String())
		}
	})

	t.Run("mapping", func(t *testing.T) {
		res, err := es.Indices.GetMapping(es.Indices.GetMapping.WithIndex(index), es.Indices.GetMapping.WithContext(ctx))
		var got map[string]struct {
			Mappings struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
			} `json:"mappings"`
		}
		decodeOK(t, res, err, &got)
		props := got[index].Mappings.Properties
		require.Equal(t, "keyword", props["table"].Type)
		require.Equal(t, "date", props["ts"].Type)
		require.Equal(t, "double", props["amount"].Type)
	})

	t.Run("index and term query", func(t *testing.T) {
		doc := `{"table":"shop.orders","ts":"2026-11-29T10:00:00Z","amount":12.5}`
		res, err := es.Index(index, strings.NewReader(doc),
			es.Index.WithDocumentID("orders-1"), es.Index.WithRefresh("true"), es.Index.WithContext(ctx))
		var put struct {
			Result string `json:"result"`
		}
		decodeOK(t, res, err, &put)
		require.Equal(t, "created", put.Result)

		hits := search(ctx, t, es, index, `{"query":{"term":{"table":"shop.orders"}}}`)
		require.Len(t, hits, 1)
		require.Equal(t, "orders-1", hits[0].ID)
		require.Equal(t, "shop.orders", hits[0].Source["table"])
		require.Equal(t, 12.5, hits[0].Source["amount"])
		require.Equal(t, "2026-11-29T10:00:00Z", hits[0].Source["ts"])

		// A keyword is not analysed: a term of another case or a prefix finds nothing.
		require.Empty(t, search(ctx, t, es, index, `{"query":{"term":{"table":"SHOP.ORDERS"}}}`))
		require.Empty(t, search(ctx, t, es, index, `{"query":{"term":{"table":"shop"}}}`))
		// The date and double mappings are queried as such.
		require.Len(t, search(ctx, t, es, index,
			`{"query":{"bool":{"filter":[{"range":{"ts":{"gte":"2026-11-29","lt":"2026-11-30"}}},{"range":{"amount":{"gt":12.4,"lt":12.6}}}]}}}`), 1)
		require.Empty(t, search(ctx, t, es, index, `{"query":{"range":{"ts":{"lt":"2026-11-29"}}}}`))
	})

	t.Run("bulk indexer", func(t *testing.T) {
		const n = 1000
		var itemFailures atomic.Int64
		var firstFailure atomic.Value
		bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
			Client:     es,
			Index:      index,
			NumWorkers: 2,
			FlushBytes: 32 << 10, // several flushes for 1000 small documents
			OnError: func(_ context.Context, err error) {
				firstFailure.CompareAndSwap(nil, err.Error())
				itemFailures.Add(1)
			},
		})
		require.NoError(t, err)
		for i := range n {
			body := fmt.Sprintf(`{"table":"shop.items","ts":"2026-11-29T%02d:%02d:00Z","amount":%d.25}`, i/60%24, i%60, i)
			err := bi.Add(ctx, esutil.BulkIndexerItem{
				Action:     "index",
				DocumentID: fmt.Sprintf("items-%d", i),
				Body:       strings.NewReader(body),
				OnFailure: func(_ context.Context, item esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: %v %s: %s", item.DocumentID, err, res.Error.Type, res.Error.Reason))
					itemFailures.Add(1)
				},
			})
			require.NoError(t, err)
		}
		require.NoError(t, bi.Close(ctx))
		stats := bi.Stats()
		require.Zero(t, itemFailures.Load(), "first failure: %v", firstFailure.Load())
		require.Equal(t, uint64(n), stats.NumAdded)
		require.Equal(t, uint64(n), stats.NumIndexed)
		require.Zero(t, stats.NumFailed)
		require.Greater(t, stats.NumRequests, uint64(1), "FlushBytes should split the load into several requests")

		res, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(index), es.Indices.Refresh.WithContext(ctx))
		decodeOK(t, res, err, nil)

		require.Equal(t, n, count(ctx, t, es, index, `{"query":{"term":{"table":"shop.items"}}}`))
		// Amounts are i+0.25 for i in [0,1000): 500 of them are at least 500.
		require.Equal(t, n/2, count(ctx, t, es, index, `{"query":{"range":{"amount":{"gte":500}}}}`))
		// The single document of the earlier subtest is still there and counted apart.
		require.Equal(t, n+1, count(ctx, t, es, index, `{"query":{"match_all":{}}}`))
	})
}

type hit struct {
	ID     string         `json:"_id"`
	Source map[string]any `json:"_source"`
}

func createIndex(ctx context.Context, t *testing.T, es *elasticsearch.Client, index, body string) {
	t.Helper()
	res, err := es.Indices.Create(index, es.Indices.Create.WithBody(strings.NewReader(body)), es.Indices.Create.WithContext(ctx))
	var got struct {
		Acknowledged bool `json:"acknowledged"`
	}
	decodeOK(t, res, err, &got)
	require.True(t, got.Acknowledged, "index %s creation not acknowledged", index)
}

func search(ctx context.Context, t *testing.T, es *elasticsearch.Client, index, query string) []hit {
	t.Helper()
	res, err := es.Search(es.Search.WithIndex(index), es.Search.WithBody(strings.NewReader(query)), es.Search.WithContext(ctx))
	var got struct {
		Hits struct {
			Hits []hit `json:"hits"`
		} `json:"hits"`
	}
	decodeOK(t, res, err, &got)
	return got.Hits.Hits
}

func count(ctx context.Context, t *testing.T, es *elasticsearch.Client, index, query string) int {
	t.Helper()
	res, err := es.Count(es.Count.WithIndex(index), es.Count.WithBody(strings.NewReader(query)), es.Count.WithContext(ctx))
	var got struct {
		Count *int `json:"count"`
	}
	decodeOK(t, res, err, &got)
	require.NotNil(t, got.Count, "count response without a count")
	return *got.Count
}

// decodeOK fails the test on a transport error or an error status, naming the response body,
// and decodes a 2xx body into v (when v is not nil).
func decodeOK(t *testing.T, res *esapi.Response, err error, v any) {
	t.Helper()
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.False(t, res.IsError(), "%s: %s", res.Status(), body)
	if v != nil {
		require.NoError(t, json.NewDecoder(bytes.NewReader(body)).Decode(v), "body: %s", body)
	}
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
