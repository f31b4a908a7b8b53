package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

// TestRetryWait: after a send the sink refused with Retry-After the sender waits that
// long, or the back-off's wait when it is longer, and never more than maxRetryAfter;
// other errors wait the back-off's.
func TestRetryWait(t *testing.T) {
	ra := func(d time.Duration) error { return &RetryAfterError{Err: errors.New("503"), After: d} }
	for _, tc := range []struct {
		name string
		next time.Duration
		err  error
		want time.Duration
	}{
		{"no hint", 100 * time.Millisecond, errors.New("refused"), 100 * time.Millisecond},
		{"the judge's 2 s", 100 * time.Millisecond, ra(2 * time.Second), 2 * time.Second},
		{"wrapped", 100 * time.Millisecond, errors.Join(errors.New("ctx"), ra(2*time.Second)), 2 * time.Second},
		{"back-off longer", 5 * time.Second, ra(time.Second), 5 * time.Second},
		{"a proxy's hour, bounded", 100 * time.Millisecond, ra(time.Hour), maxRetryAfter},
		{"at once", 100 * time.Millisecond, ra(0), 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, retryWait(tc.next, tc.err))
		})
	}
}

// TestHTTPSinkReadsRetryAfter: a 503 or 429 with Retry-After is a *RetryAfterError
// (retried, not rejected); one without, or another status, is a plain error.
func TestHTTPSinkReadsRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header string
		after  time.Duration
		hint   bool
	}{
		{"503, seconds", http.StatusServiceUnavailable, "2", 2 * time.Second, true},
		{"429, seconds", http.StatusTooManyRequests, "7", 7 * time.Second, true},
		{"503, none", http.StatusServiceUnavailable, "", 0, false},
		{"503, malformed", http.StatusServiceUnavailable, "soon", 0, false},
		{"502, seconds", http.StatusBadGateway, "2", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				http.Error(w, "busy", tc.status)
			}))
			defer srv.Close()
			err := NewHTTPSink(srv.URL, "", srv.Client()).Send(context.Background(), metric.Batch{Node: "n", TS: time.Now(), IntervalS: 10})
			require.Error(t, err)
			require.NotErrorIs(t, err, ErrRejected)
			var ra *RetryAfterError
			require.Equal(t, tc.hint, errors.As(err, &ra), "%v", err)
			if tc.hint {
				require.Equal(t, tc.after, ra.After)
				require.Contains(t, err.Error(), "busy")
			}
		})
	}
}

// A judge that answers 503 with Retry-After: 1 is sent the batch again a second later,
// not at the back-off's pace (here a few tens of milliseconds, as the interval is 50 ms),
// and gets it once it is back.
func TestSenderHonoursRetryAfter(t *testing.T) {
	var (
		mu       sync.Mutex
		attempts []time.Time
		down     = true
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, time.Now())
		if down {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"code":"unavailable","message":"store down"}}`, http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	seen := func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), attempts...) }

	r := start(t, testConfig(), NewHTTPSink(srv.URL+"/v1/metrics", "", srv.Client()), nil, &seqCollector{name: "seq"})
	require.Eventually(t, func() bool { return len(seen()) >= 3 }, 10*time.Second, 5*time.Millisecond, "two retries")
	at := seen()
	for i := 1; i < 3; i++ {
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), 950*time.Millisecond, "retry %d came %s after the 503 that asked for 1 s", i, at[i].Sub(at[i-1]))
	}
	mu.Lock()
	down = false
	mu.Unlock()
	require.Eventually(t, func() bool { return r.a.Stats().Delivered == 1 }, 10*time.Second, 5*time.Millisecond, "delivered once the judge is back")
}
