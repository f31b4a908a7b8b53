package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/metric"
)

func TestAgentCommandBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte("node: a\ncollectors:\n  host:\n    per_cpuu: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"agent", "-config", path}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `agent.yaml:4: unknown key "collectors.host.per_cpuu"`) {
		t.Fatalf("err = %v, want it to name the field and line", err)
	}
	err = run(context.Background(), []string{"agent", "-config", filepath.Join(t.TempDir(), "none.yaml")}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Fatalf("err = %v, want it to name the missing file", err)
	}
}

// TestAgentCommandHTTP runs `binlake agent` against an HTTP judge until two batches arrive.
func TestAgentCommandHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []metric.Batch
	var auth string
	judge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b, err := metric.Decode(body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		got, auth = append(got, b), r.Header.Get("Authorization")
		mu.Unlock()
	}))
	defer judge.Close()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600)
	cfg := "node: cmd-test\ninterval: 100ms\nhttp: {listen: \"off\"}\nsink:\n  kind: http\n  http:\n    url: " + judge.URL + "/v1/metrics\n    token_file: " + tokenFile + "\n"
	path := filepath.Join(dir, "agent.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"agent", "-config", path, "-node", "override-node"}, io.Discard, &syncWriter{w: &logs})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no batches; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got[0].Node != "override-node" || auth != "Bearer tok-123" {
		t.Fatalf("node %q auth %q", got[0].Node, auth)
	}
	for _, want := range []string{"agent starting", "version=" + buildinfo.String() + " ", "config=" + path, "node=override-node", "collectors=[host]", "sink=\"http " + judge.URL} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("start log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "tok-123") {
		t.Error("token in the logs")
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
