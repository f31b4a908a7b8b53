package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/store"
)

// hungStore takes writes and never answers them, as an engine that accepts connections
// and does not respond: a write ends only with its context.
type hungStore struct {
	store.Store
	writes atomic.Int64 // begun
}

func (h *hungStore) Write(ctx context.Context, _ []store.Point) error {
	h.writes.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// readyAnswer is GET /readyz: its status, Retry-After and body.
type readyAnswer struct {
	status     int
	retryAfter string
	body       readiness
}

func getReady(t *testing.T, j *Judge) readyAnswer {
	t.Helper()
	r := do(t, j.Handler(), "GET", "/readyz", "", nil)
	var a readyAnswer
	a.status, a.retryAfter = r.status, r.header.Get("Retry-After")
	require.NoError(t, json.Unmarshal(r.body, &a.body), "%s", r.body)
	head := do(t, j.Handler(), "HEAD", "/readyz", "", nil)
	require.Equal(t, r.status, head.status, "HEAD answers as GET")
	return a
}

// GET /readyz answers 200 while the store takes the judge's writes and 503 naming the
// reason while it does not; /healthz, liveness, stays 200 throughout (a restart does not
// bring a store back). /healthz was the only probe, and it said "ok" with the store down.
func TestReadyz(t *testing.T) {
	for _, tc := range []struct {
		name    string
		store   func(store.Store) store.Store
		buffer  store.BufferOptions
		act     func(t *testing.T, j *Judge) // brings the state about
		stalled time.Duration                // ready's bound on the points' wait (GET /readyz: storedWait)
		reason  string                       // "" for ready
		message string                       // in the reason's message
	}{
		{name: "the store takes the writes", act: func(t *testing.T, j *Judge) {
			r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, load("wave-1", t0, 10, 10))))
			require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		}},
		{name: "the store's writes fail", store: func(s store.Store) store.Store { return &failingStore{Store: s, down: true} },
			act: func(t *testing.T, j *Judge) {
				require.NoError(t, j.Ingest(load("wave-1", t0, 10, 10), sourceHTTP))
				require.Eventually(t, func() bool { return j.StoreCounters().Errors > 0 }, 15*time.Second, time.Millisecond, "a failed write")
			}, reason: notReadyStoreFailing, message: errEngineDown.Error()},
		{name: "the buffer is full", store: func(s store.Store) store.Store { return &hungStore{Store: s} },
			buffer: store.BufferOptions{Capacity: 5, Writers: 1},
			act: func(t *testing.T, j *Judge) {
				// The one writer takes the first batch and hangs; the next fits, and the
				// third (3 points, 2 of room) is refused.
				require.NoError(t, j.Ingest(load("wave-1", t0, 10, 10), sourceHTTP))
				hs := j.o.Store.(*hungStore)
				require.Eventually(t, func() bool { return hs.writes.Load() > 0 }, 15*time.Second, time.Millisecond, "the write hanging")
				for i := 1; ; i++ {
					if err := j.Ingest(load("wave-1", t0.Add(time.Duration(i)*time.Second), 10, 10), sourceHTTP); err != nil {
						require.ErrorIs(t, err, store.ErrFull)
						return
					}
				}
			}, stalled: time.Hour, reason: notReadyBufferFull, message: "full (5 points)"},
		{name: "a write hangs", store: func(s store.Store) store.Store { return &hungStore{Store: s} },
			act: func(t *testing.T, j *Judge) {
				require.NoError(t, j.Ingest(load("wave-1", t0, 10, 10), sourceHTTP))
				time.Sleep(60 * time.Millisecond)
			}, stalled: 50 * time.Millisecond, reason: notReadyStoreStalled, message: "no write to the store finishing"},
		{name: "the judge is stopping", act: func(t *testing.T, j *Judge) { require.NoError(t, j.Close()) },
			reason: notReadyStopping, message: "stopping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := newJudge(t, func(o *Options) {
				if tc.store != nil {
					o.Store = tc.store(o.Store)
				}
				o.Buffer = tc.buffer
				o.Buffer.MinBackoff, o.Buffer.MaxBackoff = time.Millisecond, 10*time.Millisecond
				o.Buffer.CloseTimeout = 100 * time.Millisecond // a store left down or hung
			})
			tc.act(t, j)
			if tc.stalled > 0 { // a bound the HTTP answer does not take: ready itself
				rd := j.ready(tc.stalled)
				require.Equal(t, tc.reason, rd.Reason, "%+v", rd)
				require.Contains(t, rd.Message, tc.message)
				return
			}
			a := getReady(t, j)
			if tc.reason == "" {
				require.Equal(t, http.StatusOK, a.status, "%+v", a.body)
				require.Equal(t, "ready", a.body.Status)
				require.Empty(t, a.body.Message)
				require.Equal(t, int64(3), a.body.Store.Written)
			} else {
				require.Equal(t, http.StatusServiceUnavailable, a.status, "%+v", a.body)
				require.Equal(t, "2", a.retryAfter)
				require.Equal(t, "not_ready", a.body.Status)
				require.Equal(t, tc.reason, a.body.Reason)
				require.Contains(t, a.body.Message, tc.message)
				require.Equal(t, tc.reason == notReadyStoreFailing, a.body.FailingSince != nil)
			}
			if tc.reason != notReadyStopping {
				h := do(t, j.Handler(), "GET", "/healthz", "", nil)
				require.Equal(t, http.StatusOK, h.status, "liveness: %s", h.body)
			}
		})
	}
}

// A store that comes back makes the judge ready again once a write succeeds.
func TestReadyzRecovers(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	// The condition runs outside the test's goroutine: it may not call require.
	status := func() int {
		rec := httptest.NewRecorder()
		j.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code
	}
	require.NoError(t, j.Ingest(load("wave-1", t0, 10, 10), sourceHTTP))
	require.Eventually(t, func() bool { return status() == http.StatusServiceUnavailable }, 15*time.Second, time.Millisecond, "not ready")
	fs.setDown(false)
	require.Eventually(t, func() bool { return status() == http.StatusOK }, 15*time.Second, time.Millisecond, "ready again")
	require.Equal(t, int64(3), j.StoreCounters().Written)
}
