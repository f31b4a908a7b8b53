// Package estest builds go-elasticsearch clients for the Elasticsearch test service. It is
// apart from testenv so that tests of other services do not compile the Elasticsearch client.
package estest

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/binlake/binlake/internal/testenv"
)

// The Elasticsearch test engine is a real Elasticsearch 7.17 node (deploy/testenv/elasticsearch.sh).
// go-elasticsearch/v8 talks to it unchanged:
//   - its product check wants `X-Elastic-Product: Elasticsearch` on the first 2xx answer, and
//     Elasticsearch sends that header from 7.14 on, so no transport wrapper adds it;
//   - it checks no server version, and it sends the `compatible-with=8` media type only when
//     asked to (EnableCompatibilityMode or ELASTIC_CLIENT_APIVERSIONING=true), which a 7.x
//     server refuses; ESConfig leaves it off and the environment variable must stay unset.
// Store tests should build their clients from ESConfig so that they all talk to the engine the
// same way.

// Config returns the go-elasticsearch configuration for the Elasticsearch test service
// (testenv.Elasticsearch, BINLAKE_TEST_ES: one URL or a comma-separated list). It skips or fails
// the test as Require does.
func Config(t testing.TB) elasticsearch.Config {
	t.Helper()
	v := testenv.Require(t, testenv.Elasticsearch)
	var addrs []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return elasticsearch.Config{
		Addresses: addrs,
		Transport: esTransport(),
		// Explicitly off: see the comment at the top of this file.
		EnableCompatibilityMode: false,
	}
}

// esTransport is the HTTP transport of test clients: bounded dials and header waits so that a
// hung engine fails a test instead of stalling the suite, and enough idle connections for the
// bulk indexer's workers to reuse them.
func esTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // the engine is on loopback; never go through a proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
}

// Client returns a go-elasticsearch/v8 client for the Elasticsearch test service after one
// round trip (GET /), so that a wrong engine fails here, naming the service, rather than in the
// middle of a store test. It skips or fails the test as Require does.
func Client(t testing.TB) *elasticsearch.Client {
	t.Helper()
	cfg := Config(t)
	es, err := elasticsearch.NewClient(cfg)
	if err != nil {
		t.Fatalf("%s: building the go-elasticsearch client for %v: %v", testenv.Elasticsearch.Name, cfg.Addresses, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := es.Info(es.Info.WithContext(ctx))
	if err != nil {
		var hint string
		// The client's product-check error is a plain errors.New; its text is all there is.
		if strings.Contains(err.Error(), "server is not Elasticsearch") {
			hint = " (the engine did not answer `X-Elastic-Product: Elasticsearch`; deploy/testenv/elasticsearch.sh runs one that does)"
		}
		t.Fatalf("%s at %v: GET / failed: %v%s", testenv.Elasticsearch.Name, cfg.Addresses, err, hint)
	}
	defer res.Body.Close()
	if res.IsError() {
		t.Fatalf("%s at %v: GET / answered %s", testenv.Elasticsearch.Name, cfg.Addresses, res.Status())
	}
	return es
}
