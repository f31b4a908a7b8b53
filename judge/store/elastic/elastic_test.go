package elastic_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/binlake/binlake/judge/store/elastic"
)

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts elastic.Options
		want string
	}{
		{"uppercase prefix", elastic.Options{Prefix: "Binlake-"}, `elastic store: index prefix "Binlake-": must be lowercase, as index names are; e.g. "binlake-"`},
		{"uppercase prefix without its dash", elastic.Options{Prefix: "bt_Metrics"}, `elastic store: index prefix "bt_Metrics": must be lowercase, as index names are; must end in '-' or '.' (the daily indices are <prefix>YYYY.MM.DD, and the pattern bt_Metrics* must match only them); e.g. "bt_metrics-"`},
		{"wildcard prefix", elastic.Options{Prefix: "binlake-*-"}, `elastic store: index prefix "binlake-*-": must not contain "*": index names cannot hold \ / * ? " < > | , # : or a space; e.g. "binlake-"`},
		{"underscore start", elastic.Options{Prefix: "_binlake-"}, `elastic store: index prefix "_binlake-": must not start with "_": index names cannot start with _, - or +; e.g. "binlake-"`},
		// Every rule broken is said at once, with an example that keeps them all (one
		// rule at a time, "Bad*Prefix-" was told "bad*prefix-", which the next refused).
		{"every rule at once", elastic.Options{Prefix: "Bad* Prefix"}, `elastic store: index prefix "Bad* Prefix": must be lowercase, as index names are; must not contain "* "`},
		{"example of the default when nothing is left", elastic.Options{Prefix: "_*"}, `e.g. "binlake-metrics-"`},
		// The trailing separator is required, and the message must say so plainly.
		{"no separator", elastic.Options{Prefix: "nc-prod-metrics"}, `elastic store: index prefix "nc-prod-metrics": must end in '-' or '.' (the daily indices are <prefix>YYYY.MM.DD, and the pattern nc-prod-metrics* must match only them); e.g. "nc-prod-metrics-"`},
		{"negative replicas", elastic.Options{Replicas: -1}, "replicas"},
		{"negative refresh interval", elastic.Options{RefreshInterval: -time.Second}, "refresh interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := elastic.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%+v): %v, want an error containing %q", tc.opts, err, tc.want)
			}
		})
	}
}

func TestIndexNameAndTemplate(t *testing.T) {
	s, err := elastic.New(elastic.Options{Config: testConfigNoEngine()})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	defer s.Close()
	// The UTC day names the index, whatever the point's zone.
	ts := time.Date(2026, 11, 30, 1, 30, 0, 0, time.FixedZone("UTC+3", 3*3600))
	if got := s.IndexName(ts); got != "binlake-metrics-2026.11.29" {
		t.Fatalf("index name %q, want binlake-metrics-2026.11.29", got)
	}
	tmpl := s.Template()
	if p := tmpl["index_patterns"].([]string); len(p) != 1 || p[0] != "binlake-metrics-*" {
		t.Fatalf("index patterns %v", p)
	}
	props := tmpl["template"].(map[string]any)["mappings"].(map[string]any)["properties"].(map[string]any)
	for field, typ := range map[string]string{"node": "keyword", "labels_key": "keyword", "ts": "date", "hour": "byte", "labels": "object", "m": "object"} {
		if got := props[field].(map[string]any)["type"]; got != typ {
			t.Errorf("field %s mapped as %v, want %s", field, got, typ)
		}
	}
	if got := tmpl["template"].(map[string]any)["settings"].(map[string]any)["refresh_interval"]; got != "10000ms" {
		t.Errorf("refresh_interval %v, want the default 10000ms", got)
	}
}

// testConfigNoEngine points at a closed loopback port: New must not contact the engine.
func testConfigNoEngine() elasticsearch.Config {
	return elasticsearch.Config{Addresses: []string{"http://127.0.0.1:1"}}
}

// TestUnreachableEngineIsNamed: an engine that refuses connections until the caller's
// deadline is named with the refusal, not only "context deadline exceeded" (the judge's
// start said that alone of an Elasticsearch that was not there; found from outside).
func TestUnreachableEngineIsNamed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	// The default back-off (100 ms, doubling): the deadline ends inside the retries.
	s, err := elastic.New(elastic.Options{Config: elasticsearch.Config{Addresses: []string{"http://" + addr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // ends inside the retries'
	defer cancel()
	err = s.Refresh(ctx)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Refresh of an engine that is not there: %v, want the refused connection to %s named", err, addr)
	}
}

// FuzzCheckPrefixExample: the example an error gives is a prefix CheckPrefix takes.
func FuzzCheckPrefixExample(f *testing.F) {
	for _, p := range []string{"Bad*Prefix-", "_Metrics-", "Bad Prefix-", "a/b/", "_", "+-_", "ÄBC", "nc-prod-metrics"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := elastic.CheckPrefix(p)
		if err == nil {
			return
		}
		_, ex, ok := strings.Cut(err.Error(), "; e.g. ")
		if !ok {
			return // no example: empty or too long
		}
		var example string
		if _, err := fmt.Sscanf(ex, "%q", &example); err != nil {
			t.Fatalf("CheckPrefix(%q): the example in %q does not read: %v", p, ex, err)
		}
		if err := elastic.CheckPrefix(example); err != nil {
			t.Fatalf("CheckPrefix(%q) gives the example %q, which it refuses: %v", p, example, err)
		}
	})
}
