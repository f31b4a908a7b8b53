package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/judge/store/storetest"
)

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestBufferedConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return store.NewBuffered(openSQLite(t), store.BufferOptions{MaxBatch: 700})
	})
}

// outage is a test double for an engine outage in front of a real store: while down,
// Write fails as a refused connection would; with block set, Write waits for ctx.
type outage struct {
	store.Store
	down, block atomic.Bool
	invalid     atomic.Bool // refuse the next write with ErrInvalid
	calls       atomic.Int64
}

var errDown = errors.New("dial tcp 127.0.0.1:9200: connect: connection refused")

func (o *outage) Write(ctx context.Context, pts []store.Point) error {
	o.calls.Add(1)
	if o.block.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if o.down.Load() {
		return errDown
	}
	if o.invalid.CompareAndSwap(true, false) {
		return fmt.Errorf("mapping conflict: %w", store.ErrInvalid)
	}
	return o.Store.Write(ctx, pts)
}

// Close leaves the real store open so that the test can read what arrived.
func (o *outage) Close() error { return nil }

// downSQLite is a real store behind an outage that is down from the start.
func downSQLite(t *testing.T) (*sqlite.Store, *outage) {
	t.Helper()
	db := openSQLite(t)
	o := &outage{Store: db}
	o.down.Store(true)
	return db, o
}

// hungBuffered is a Buffered in front of a store whose Write hangs: nothing it takes is
// ever written, and Close gives up on it after 50 ms.
func hungBuffered(t *testing.T) (*store.Buffered, *outage) {
	t.Helper()
	o := &outage{Store: openSQLite(t)}
	o.block.Store(true)
	opts := fastOpts(1000)
	opts.WriteTimeout = time.Hour // the inner Write hangs until Close gives up
	opts.CloseTimeout = 50 * time.Millisecond
	return store.NewBuffered(o, opts), o
}

var t0 = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

func points(node string, from, n int) []store.Point {
	pts := make([]store.Point, n)
	for i := range pts {
		pts[i] = store.Point{Node: node, Name: "cpu.util", TS: t0.Add(time.Duration(from+i) * time.Second), Value: float64(from + i)}
	}
	return pts
}

func count(t *testing.T, s store.Store, node string) store.Stats {
	t.Helper()
	st, err := s.Stats(context.Background(), store.Query{Node: node, Name: "cpu.util", From: t0, To: t0.Add(24 * time.Hour)})
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st
}

func fastOpts(capacity int) store.BufferOptions {
	return store.BufferOptions{Capacity: capacity, MaxBatch: 50, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, CloseTimeout: time.Second}
}

func flush(t *testing.T, b *store.Buffered) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func TestBufferedOutageThenRecovery(t *testing.T) {
	db, o := downSQLite(t)
	b := store.NewBuffered(o, fastOpts(1000))
	defer b.Close()
	ctx := context.Background()
	for i := range 6 {
		if err := b.Write(ctx, points("w1", i*100, 100)); err != nil {
			t.Fatalf("write during outage: %v", err)
		}
	}
	require.Eventually(t, func() bool { return b.Counters().Errors >= 3 }, 10*time.Second, 5*time.Millisecond, "failed attempts")
	if c := b.Counters(); c.Buffered != 600 || c.Written != 0 || c.Dropped != 0 {
		t.Fatalf("during outage: %+v, want 600 buffered, none written or dropped", c)
	}
	if st := count(t, db, "w1"); st.Count != 0 {
		t.Fatalf("points reached the store during the outage: %+v", st)
	}
	o.down.Store(false)
	flush(t, b)
	if c := b.Counters(); c.Buffered != 0 || c.Written != 600 || c.Dropped != 0 {
		t.Fatalf("after recovery: %+v, want 600 written", c)
	}
	if st := count(t, db, "w1"); st.Count != 600 || st.Max != 599 {
		t.Fatalf("after recovery the store holds %+v, want 600 points up to 599", st)
	}
}

func TestBufferedDropsOldestPastCapacity(t *testing.T) {
	db, o := downSQLite(t)
	opts := fastOpts(100)
	opts.Overflow = store.OverflowDrop
	b := store.NewBuffered(o, opts)
	defer b.Close()
	// One call of 250 points into a queue of 100: the writer cannot take any while
	// Write holds the queue, so exactly the 150 oldest go.
	if err := b.Write(context.Background(), points("w1", 0, 250)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if c := b.Counters(); c.Dropped != 150 || c.Buffered != 100 {
		t.Fatalf("after overflow: %+v, want 150 dropped, 100 buffered", c)
	}
	o.down.Store(false)
	flush(t, b)
	st := count(t, db, "w1")
	// The newest 100 survive: values 150–249.
	if st.Count != 100 || st.Max != 249 || st.Avg != 199.5 {
		t.Fatalf("stored %+v, want the newest 100 points (150–249)", st)
	}
	if c := b.Counters(); c.Written+c.Dropped != 250 || c.Buffered != 0 {
		t.Fatalf("counters %+v do not account for 250 points", c)
	}
}

func TestBufferedWriteDoesNotWaitForTheStore(t *testing.T) {
	b, o := hungBuffered(t)
	if err := b.Write(context.Background(), points("w1", 0, 10)); err != nil {
		t.Fatalf("write: %v", err)
	}
	require.Eventually(t, func() bool { return o.calls.Load() == 1 }, 10*time.Second, 5*time.Millisecond, "the writer to be stuck in the store")
	done := make(chan error, 1)
	go func() {
		var err error
		for i := range 100 {
			if err = b.Write(context.Background(), points("w1", 10+i*10, 10)); err != nil {
				break
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write: %v", err)
		}
	case <-time.After(30 * time.Second): // a hang detector, not a speed target
		t.Fatal("Write blocked while the inner store hung")
	}
	if c := b.Counters(); c.Buffered != 1010 {
		t.Fatalf("counters %+v, want 1010 buffered", c)
	}
	// Close gives up after CloseTimeout and counts what it could not write.
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if c := b.Counters(); c.Dropped != 1010 || c.Unacked != 0 || c.Written != 0 || c.Buffered != 0 {
		t.Fatalf("after close: %+v, want all 1010 dropped, none of them acked writes", c)
	}
}

func TestBufferedDropsInvalidBatch(t *testing.T) {
	db := openSQLite(t)
	o := &outage{Store: db}
	o.invalid.Store(true)
	opts := fastOpts(1000)
	b := store.NewBuffered(o, opts)
	defer b.Close()
	if err := b.Write(context.Background(), points("w1", 0, 50)); err != nil {
		t.Fatalf("write: %v", err)
	}
	flush(t, b)
	if err := b.Write(context.Background(), points("w1", 50, 50)); err != nil {
		t.Fatalf("write: %v", err)
	}
	flush(t, b)
	if c := b.Counters(); c.Dropped != 50 || c.Refused != 50 || c.Written != 50 || c.Errors != 1 {
		t.Fatalf("counters %+v, want the refused batch of 50 dropped and refused, and one error", c)
	}
	if st := count(t, db, "w1"); st.Count != 50 {
		t.Fatalf("stored %+v, want the second batch only", st)
	}
	// Invalid points are refused by Write itself, synchronously.
	err := b.Write(context.Background(), []store.Point{{Node: "w1", Name: "", TS: t0, Value: 1}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("invalid point: %v, want ErrInvalid", err)
	}
}

// partlyRefusing is a test double for an engine that refuses some points of a write for
// good and stores the others (an Elasticsearch mapping conflict): it stores every point
// but those of node "bad" in a real store and reports those as a *store.RefusedError.
type partlyRefusing struct{ store.Store }

func (p partlyRefusing) Write(ctx context.Context, pts []store.Point) error {
	good := slices.DeleteFunc(slices.Clone(pts), func(p store.Point) bool { return p.Node == "bad" })
	if err := p.Store.Write(ctx, good); err != nil {
		return err
	}
	if n := len(pts) - len(good); n > 0 {
		return &store.RefusedError{Store: "test store", Points: n, Total: len(pts), Reasons: []string{"400 mapper_parsing_exception: m.wave"}}
	}
	return nil
}

// TestBufferedPartlyRefusedBatch: a batch the store stored but for some points refused
// for good is settled, not retried: the refused points count as refused and dropped, the
// others as written, and the WriteAcked calls it completes are acknowledged (so that the
// bus commits them), while a later batch goes on as usual.
func TestBufferedPartlyRefusedBatch(t *testing.T) {
	db := openSQLite(t)
	b := store.NewBuffered(partlyRefusing{db}, store.BufferOptions{Capacity: 1000, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	defer b.Close()
	batch := append(points("w1", 0, 40), points("bad", 0, 10)...)
	var acks atomic.Int64
	if err := b.WriteAcked(context.Background(), batch, func() { acks.Add(1) }); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	if err := b.WriteAcked(context.Background(), points("w1", 40, 10), func() { acks.Add(1) }); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	flush(t, b)
	if c := b.Counters(); c.Written != 50 || c.Refused != 10 || c.Dropped != 10 || c.Errors != 0 || acks.Load() != 2 {
		t.Fatalf("counters %+v, %d acks; want 50 written, 10 refused and dropped, no failed write, both acked", c, acks.Load())
	}
	if st := count(t, db, "w1"); st.Count != 50 {
		t.Fatalf("stored %+v, want all 50 points of w1", st)
	}
}

func TestBufferedCloseWritesWhatIsQueued(t *testing.T) {
	db, o := downSQLite(t)
	opts := fastOpts(10_000)
	// Close must write everything queued; the bound only has to exceed how long that takes
	// on a loaded machine under -race (1 s did not).
	opts.CloseTimeout = time.Minute
	b := store.NewBuffered(o, opts)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if err := b.Write(context.Background(), points("w1", (w*10+i)*25, 25)); err != nil {
					t.Errorf("write: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return b.Counters().Errors > 0 }, 10*time.Second, 5*time.Millisecond, "a failed attempt")
	o.down.Store(false)
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if c := b.Counters(); c.Written != 1000 || c.Dropped != 0 || c.Buffered != 0 {
		t.Fatalf("after close: %+v, want 1000 written", c)
	}
	if st := count(t, db, "w1"); st.Count != 1000 {
		t.Fatalf("stored %+v, want 1000", st)
	}
	if err := b.Write(context.Background(), points("w1", 0, 1)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed", err)
	}
}

// gate is an inner store whose Write reports that it started and then waits to be let go.
type gate struct {
	store.Store
	entered chan int // the size of each batch that came in
	release chan struct{}
}

func (g *gate) Write(ctx context.Context, pts []store.Point) error {
	g.entered <- len(pts)
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Store.Write(ctx, pts)
}

func (g *gate) Close() error { return nil }

// TestBufferedWritesConcurrently: with Writers 2, a second batch goes to the store while
// the first is still being written, and a third waits for one of them.
func TestBufferedWritesConcurrently(t *testing.T) {
	db := openSQLite(t)
	g := &gate{Store: db, entered: make(chan int, 10), release: make(chan struct{})}
	opts := fastOpts(1000)
	opts.Writers = 2
	b := store.NewBuffered(g, opts)
	defer b.Close()
	for i := range 3 { // three batches of 50
		if err := b.Write(context.Background(), points("w1", 50*i, 50)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	for range 2 {
		select {
		case n := <-g.entered:
			if n != 50 {
				t.Fatalf("a batch of %d points, want 50", n)
			}
		case <-time.After(10 * time.Second): // a hang detector, not a speed target
			t.Fatal("the second writer did not start while the first was busy")
		}
	}
	select {
	case <-g.entered:
		t.Fatal("a third batch started with Writers 2")
	default:
	}
	if c := b.Counters(); c.Buffered != 150 || c.Written != 0 {
		t.Fatalf("while two batches are in flight: %+v, want 150 buffered", c)
	}
	close(g.release)
	flush(t, b)
	if c := b.Counters(); c.Written != 150 || c.Buffered != 0 {
		t.Fatalf("after flush: %+v, want 150 written", c)
	}
	if st := count(t, db, "w1"); st.Count != 150 {
		t.Fatalf("stored %+v, want 150 points", st)
	}
}

// TestBufferedKeepsAWriteTogether: a batch ends where a Write ended, past MaxBatch if need
// be, but not past twice MaxBatch.
func TestBufferedKeepsAWriteTogether(t *testing.T) {
	db := openSQLite(t)
	g := &gate{Store: db, entered: make(chan int, 10), release: make(chan struct{})}
	opts := fastOpts(1000)
	opts.Writers = 1
	b := store.NewBuffered(g, opts) // MaxBatch 50
	defer b.Close()
	// The writer takes a first Write and waits in the gate while the others queue up.
	if err := b.Write(context.Background(), points("w1", 10_000, 10)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if n := <-g.entered; n != 10 {
		t.Fatalf("first batch of %d points, want 10", n)
	}
	for i, n := range []int{40, 30, 20, 130} {
		if err := b.Write(context.Background(), points("w1", 1000*i, n)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	close(g.release)
	flush(t, b)
	var sizes []int
	for len(g.entered) > 0 {
		sizes = append(sizes, <-g.entered)
	}
	// 40+30 (the second Write is not split at 50); 20+80 (the fourth is, where the batch
	// reaches twice MaxBatch); the fourth's last 50.
	if want := []int{70, 100, 50}; !slices.Equal(sizes, want) {
		t.Fatalf("batches of %v points, want %v", sizes, want)
	}
}
