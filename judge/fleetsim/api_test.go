package fleetsim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// TestSendWaitsTheRetryAfter: a batch the judge refuses for now (503, its store buffer
// full) is sent again no sooner than the answer's Retry-After asks, not at the
// simulator's own back-off of 10 ms, and counted as a retry once accepted.
func TestSendWaitsTheRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/v1/metrics" || r.Method != http.MethodPost {
			t.Errorf("%s %s, want POST /v1/metrics", r.Method, r.URL.Path)
		}
		at = append(at, time.Now())
		if len(at) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	j, err := newJudgeAPI(srv.URL, "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	b := metric.Batch{Node: "wave-00", TS: time.Now(), IntervalS: 10, Points: []metric.Point{{Name: "cpu.util", Value: 0.5}}}
	if err := j.send(context.Background(), b); err != nil {
		t.Fatalf("send: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 {
		t.Fatalf("%d requests, want the refused one and its resend", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 900*time.Millisecond {
		t.Errorf("resent %s after a 503 with Retry-After: 1, want at least the second it asked", gap)
	}
	if j.retries.Load() != 1 || j.batches.Load() != 1 {
		t.Errorf("retries %d, batches %d; want 1 and 1", j.retries.Load(), j.batches.Load())
	}
}
