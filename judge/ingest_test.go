package judge

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// wide is a batch of n labelled points.
func wide(node string, n int) metric.Batch {
	b := metric.Batch{Node: node, TS: t0, IntervalS: 10}
	for i := range n {
		b.Points = append(b.Points, metric.Point{Name: "wave.tps", Value: float64(i), Labels: map[string]string{"instance": fmt.Sprintf("i%02d", i)}})
	}
	return b
}

// By default a batch posted to a full buffer is refused with 503 and counted; nothing
// is dropped, and the batch is analysed all the same.
func TestStoreBufferFullRejectsHTTP(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{Capacity: 10, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, wide("wave-1", 18))))
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	c := j.StoreCounters()
	require.Equal(t, int64(18), c.Rejected)
	require.Zero(t, c.Dropped)
	require.Zero(t, c.Buffered)
	r = do(t, j.Handler(), "GET", "/metrics", "", nil)
	require.Contains(t, string(r.body), "binlake_judge_store_points_rejected_total 18\n")
	require.Equal(t, []string{"wave-1"}, j.Incremental().NodeIDs())
}

// A batch from the bus is acknowledged only once the store has its points; while the
// buffer is full the bus handler waits instead of dropping anything.
func TestBusBatchAckedOnceStored(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{Capacity: 10, Writers: 1, MaxBatch: 5, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	acks := bus.NewAckTracker()
	deliver := func(offset int64, b metric.Batch) error {
		ctx, e := acks.Add(context.Background(), 0, offset)
		err := j.ingestBus(ctx, bus.Message{Value: encode(t, b), Offset: offset})
		if err == nil {
			e.Handled()
		}
		return err
	}
	require.NoError(t, deliver(1, wide("wave-1", 5)))
	require.Eventually(t, func() bool { return j.StoreCounters().Errors > 0 }, 15*time.Second, 10*time.Millisecond, "the first batch in flight")
	require.Nil(t, acks.Ready(), "acked while the store is down")

	// 18 points into an empty ring of 10 (the first 5 are in flight): the handler waits.
	second := make(chan error, 1)
	go func() { second <- deliver(2, wide("wave-2", 18)) }()
	require.Eventually(t, func() bool { return j.StoreCounters().Buffered == 15 }, 15*time.Second, 10*time.Millisecond, "the buffer full")
	select {
	case err := <-second:
		t.Fatalf("the bus handler returned (%v) with points that did not fit", err)
	default:
	}
	require.Zero(t, j.StoreCounters().Dropped)

	fs.setDown(false)
	require.NoError(t, <-second)
	require.Eventually(t, func() bool {
		r := acks.Ready()
		return r[0] == 2
	}, 15*time.Second, 10*time.Millisecond, "both batches acked")
	c := j.StoreCounters()
	require.Equal(t, int64(23), c.Written)
	require.Zero(t, c.Dropped)

	// An undecodable message is acked at once: it cannot stall the group.
	ctx, e := acks.Add(context.Background(), 0, 3)
	require.NoError(t, j.ingestBus(ctx, bus.Message{Value: []byte("{garbage")}))
	e.Handled()
	require.Equal(t, map[int]int64{0: 3}, acks.Ready())
}

// A batch posted over HTTP is answered 202 (remote write 204) only once the store has
// its points, so that a judge killed next loses none of them; the judge answered at
// once, and a kill lost what its buffer held. While the store does not take them the
// request is answered 503 (here: the client gives up first) and they stay queued, to
// be written when it is back. With http_overflow drop the answer comes at once, as
// documented: that mode drops queued points.
func TestPostAnsweredOnceStored(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     string
		body     []byte
		down     bool
		overflow store.Overflow
		status   int
		points   int64
	}{
		{"stored", "/v1/metrics", encode(t, wide("wave-1", 18)), false, store.OverflowReject, http.StatusAccepted, 18},
		{"store down", "/v1/metrics", encode(t, wide("wave-1", 18)), true, store.OverflowReject, http.StatusServiceUnavailable, 18},
		// A first scrape's memory: its cores go out with its rates, once the next begins.
		{"remote write, stored", "/api/v1/write", cpuScrape("wave-9", t0, 100, 100), false, store.OverflowReject, http.StatusNoContent, 1},
		{"remote write, store down", "/api/v1/write", cpuScrape("wave-9", t0, 100, 100), true, store.OverflowReject, http.StatusServiceUnavailable, 1},
		{"http_overflow drop, store down", "/v1/metrics", encode(t, wide("wave-1", 18)), true, store.OverflowDrop, http.StatusAccepted, 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openStore(t)
			fs := &failingStore{Store: db, down: tc.down}
			j, _ := newJudge(t, func(o *Options) {
				o.Store = fs
				o.Buffer = store.BufferOptions{Overflow: tc.overflow, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
					CloseTimeout: time.Second} // a failed case leaves the store down
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.down {
				go func() { // the client gives up once the store has refused a write
					for j.StoreCounters().Errors == 0 && ctx.Err() == nil {
						time.Sleep(time.Millisecond) // polling the judge's counters
					}
					cancel()
				}()
			}
			req := httptest.NewRequestWithContext(ctx, "POST", tc.path, bytes.NewReader(tc.body))
			rec := httptest.NewRecorder()
			j.Handler().ServeHTTP(rec, req)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.status == http.StatusServiceUnavailable {
				require.Equal(t, "2", rec.Header().Get("Retry-After"), "when to send them again")
			}
			c := j.StoreCounters()
			if tc.status == http.StatusServiceUnavailable || tc.overflow == store.OverflowDrop {
				require.Equal(t, tc.points, c.Buffered, "queued, to be written when the store is back")
				fs.setDown(false)
				fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer fcancel()
				require.NoError(t, j.buf.Flush(fctx))
			}
			require.Equal(t, tc.points, storedPoints(t, db), "in the store")
			require.Zero(t, j.StoreCounters().Dropped)
		})
	}
}

// storedPoints counts every point in st.
func storedPoints(t *testing.T, st store.Store) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.Scan(context.Background(), t0.Add(-time.Hour), t0.Add(time.Hour), func(pts []store.Point) error {
		n += int64(len(pts))
		return nil
	}))
	return n
}
