package elastic_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// detour sends the client's requests to a port nobody listens on while down is set:
// the engine is unreachable for this client exactly as if it were stopped, while it
// keeps serving the other tests that share it.
type detour struct {
	base   http.RoundTripper
	closed string // host:port that refuses connections
	down   atomic.Bool
}

func (d *detour) RoundTrip(r *http.Request) (*http.Response, error) {
	if d.down.Load() {
		r = r.Clone(r.Context())
		r.URL.Host, r.Host = d.closed, d.closed
	}
	return d.base.RoundTrip(r)
}

// closedPort returns a loopback address that refuses connections.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestElasticOutageIntegration is the outage acceptance: points flow through
// the Buffered wrapper while the engine is unreachable for 30 s (3 s with -short); the
// buffer holds them up to its bound, drops the oldest past it, and writes the rest once
// the engine answers again. The test counts what arrived.
func TestElasticOutageIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	cfg := estest.Config(t)
	outage := 30 * time.Second
	if testing.Short() {
		outage = 3 * time.Second
	}
	const perBatch, every = 50, 100 * time.Millisecond // 500 points/s
	// A bound of two thirds of what the outage produces, so that some points must go.
	capacity := int(outage/every) * perBatch * 2 / 3

	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	d := &detour{base: cfg.Transport, closed: closedPort(t)}
	cfg.Transport = d
	es, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, MaxRetries: 2,
		Backoff: backoff.Schedule(50*time.Millisecond, 500*time.Millisecond)})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	b := store.NewBuffered(es, store.BufferOptions{Capacity: capacity, MaxBatch: 2000, Overflow: store.OverflowDrop,
		MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, CloseTimeout: 30 * time.Second})
	defer b.Close()

	node := prefix + "wave"
	from := time.Date(2012, 6, 1, 10, 0, 0, 0, time.UTC)
	var produced atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n := produced.Load()
			pts := make([]store.Point, perBatch)
			for i := range pts {
				seq := n + int64(i)
				pts[i] = store.Point{Node: node, Name: "wave.tps", TS: from.Add(time.Duration(seq) * time.Second), Value: float64(seq)}
			}
			if err := b.Write(context.Background(), pts); err != nil {
				t.Errorf("write never fails on the wrapper, got %v", err)
				return
			}
			produced.Add(perBatch)
		}
	}()
	waitFor := func(what string, limit time.Duration, cond func(store.BufferCounters) bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond(b.Counters()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, b.Counters())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("first points written", time.Minute, func(c store.BufferCounters) bool { return c.Written > 0 })

	d.down.Store(true)
	errsBefore := b.Counters().Errors
	start := time.Now()
	waitFor("failed writes", outage, func(c store.BufferCounters) bool { return c.Errors > errsBefore })
	time.Sleep(time.Until(start.Add(outage))) // the outage itself: its length is the point
	during := b.Counters()
	if _, err := b.Stats(context.Background(), store.Query{Node: node, Name: "wave.tps", From: from, To: from.Add(time.Hour)}); err == nil {
		t.Errorf("a query succeeded during the outage")
	}
	d.down.Store(false)

	// Points keep flowing for a moment after the engine is back, then stop.
	more := produced.Load() + 10*perBatch
	for produced.Load() < more {
		time.Sleep(every)
	}
	close(stop)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Refresh: written (the buffer's Flush), and visible to the counting below.
	if err := b.Refresh(ctx); err != nil {
		t.Fatalf("flush and refresh after the outage: %v (%+v)", err, b.Counters())
	}
	c := b.Counters()
	total := produced.Load()
	t.Logf("outage %s: produced %d points; at the end of the outage %d buffered, %d dropped, %d errors; finally %d written, %d dropped",
		outage, total, during.Buffered, during.Dropped, c.Errors, c.Written, c.Dropped)
	if c.Buffered != 0 || c.Written+c.Dropped != total {
		t.Fatalf("counters %+v do not account for the %d points produced", c, total)
	}
	if during.Errors <= errsBefore || during.Buffered == 0 {
		t.Errorf("during the outage: %+v, want failed writes and points waiting", during)
	}
	if !testing.Short() && c.Dropped == 0 {
		t.Errorf("no point dropped although the outage produced more than the bound of %d", capacity)
	}
	st, err := b.Stats(ctx, store.Query{Node: node, Name: "wave.tps", From: from, To: from.Add(time.Duration(total) * time.Second)})
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.Count != c.Written {
		t.Fatalf("the engine holds %d points, the buffer says %d were written", st.Count, c.Written)
	}
	// Dropping takes the oldest: the newest point arrived.
	if st.Max != float64(total-1) {
		t.Fatalf("max %v, want the newest point %d", st.Max, total-1)
	}
}
