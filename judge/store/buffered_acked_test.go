package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/store"
)

// TestBufferedRejectsWhenFull: by default a write that does not fit is refused whole,
// counted, and nothing queued is dropped. The writers take batches off the queue while
// the store is down (and keep them for their retries), so how much fits before the
// queue is full depends on when they run: the test writes until the first refusal,
// which must come once the queue and the writers' batches hold all they can.
func TestBufferedRejectsWhenFull(t *testing.T) {
	db, o := downSQLite(t)
	opts := fastOpts(100)
	opts.Writers = 2
	b := store.NewBuffered(o, opts)
	defer b.Close()
	ctx := context.Background()
	if err := b.Write(ctx, points("w1", 0, 80)); err != nil {
		t.Fatalf("write: %v", err)
	}
	accepted := 80
	// At most Capacity queued plus up to twice MaxBatch per writer in flight.
	limit := opts.Capacity + 2*opts.MaxBatch*opts.Writers
	for {
		err := b.Write(ctx, points("w1", accepted, 30))
		if errors.Is(err, store.ErrFull) {
			break
		}
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		if accepted += 30; accepted > limit {
			t.Fatalf("%d points accepted while the store is down, more than the %d the buffer can hold", accepted, limit)
		}
	}
	if c := b.Counters(); c.Rejected != 30 || c.Dropped != 0 || c.Buffered != int64(accepted) {
		t.Fatalf("counters %+v, want 30 rejected, none dropped, %d buffered", c, accepted)
	}
	o.down.Store(false)
	flush(t, b)
	if st := count(t, db, "w1"); st.Count != int64(accepted) {
		t.Fatalf("stored %+v, want the %d accepted points", st, accepted)
	}
}

// TestBufferedWriteAckedWaitsForRoom: while the store is down and the buffer full,
// WriteAcked waits instead of dropping; once the store is back every point arrives and
// the ack comes after the last one is written.
func TestBufferedWriteAckedWaitsForRoom(t *testing.T) {
	db, o := downSQLite(t)
	opts := fastOpts(100)
	opts.Writers = 1 // one batch of up to 100 in flight (twice MaxBatch): 200 buffered at most
	b := store.NewBuffered(o, opts)
	defer b.Close()
	var acks atomic.Int64
	var writtenAtAck atomic.Int64
	returned := make(chan error, 1)
	go func() {
		returned <- b.WriteAcked(context.Background(), points("w1", 0, 250), func() {
			writtenAtAck.Store(b.Counters().Written)
			acks.Add(1)
		})
	}()
	require.Eventually(t, func() bool {
		c := b.Counters()
		return c.Buffered == 200 && c.Errors > 0
	}, 10*time.Second, 5*time.Millisecond, "a full buffer and a failed write")
	select {
	case err := <-returned:
		t.Fatalf("WriteAcked returned (%v) with 50 points that did not fit", err)
	default:
	}
	if c := b.Counters(); c.Dropped != 0 || acks.Load() != 0 {
		t.Fatalf("during the outage: %+v, %d acks; want nothing dropped and no ack", c, acks.Load())
	}
	o.down.Store(false)
	if err := <-returned; err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	flush(t, b)
	if st := count(t, db, "w1"); st.Count != 250 {
		t.Fatalf("stored %+v, want 250", st)
	}
	if acks.Load() != 1 || writtenAtAck.Load() != 250 {
		t.Fatalf("%d acks, the first with %d points written; want one, after all 250", acks.Load(), writtenAtAck.Load())
	}
}

// TestBufferedDropSparesAckedPoints: with OverflowDrop, an overflowing Write never drops
// points a WriteAcked is waiting for: it drops its own oldest instead.
func TestBufferedDropSparesAckedPoints(t *testing.T) {
	db := openSQLite(t)
	o := &outage{Store: db}
	o.block.Store(true)
	opts := fastOpts(100)
	opts.Overflow = store.OverflowDrop
	opts.Writers = 1
	opts.WriteTimeout = 20 * time.Millisecond // the stuck write is retried until unblocked
	b := store.NewBuffered(o, opts)
	defer b.Close()
	var acks atomic.Int64
	ack := func() { acks.Add(1) }
	// The only writer takes the first points and is stuck with them: what follows stays
	// queued.
	if err := b.WriteAcked(context.Background(), points("acked", 0, 10), ack); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	require.Eventually(t, func() bool { return o.calls.Load() >= 1 }, 10*time.Second, 5*time.Millisecond, "the writer to be stuck in the store")
	if err := b.WriteAcked(context.Background(), points("acked", 10, 80), ack); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	if err := b.Write(context.Background(), points("http", 0, 50)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if c := b.Counters(); c.Dropped != 30 || c.Buffered != 110 {
		t.Fatalf("counters %+v, want 30 dropped, 110 buffered (10 in flight)", c)
	}
	o.block.Store(false)
	flush(t, b)
	if st := count(t, db, "acked"); st.Count != 90 || acks.Load() != 2 {
		t.Fatalf("acked points stored: %+v, %d acks; want 90 and 2", st, acks.Load())
	}
	if st := count(t, db, "http"); st.Count != 20 || st.Max != 49 {
		t.Fatalf("dropping points stored: %+v, want the newest 20", st)
	}
}

// TestBufferedLostPointsAreNotAcked: points that Close gives up on are never acked, so
// their source delivers them again.
func TestBufferedLostPointsAreNotAcked(t *testing.T) {
	b, o := hungBuffered(t)
	var acks atomic.Int64
	if err := b.WriteAcked(context.Background(), points("w1", 0, 10), func() { acks.Add(1) }); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	if err := b.WriteAcked(context.Background(), points("w1", 10, 10), func() { acks.Add(1) }); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	require.Eventually(t, func() bool { return o.calls.Load() >= 1 }, 10*time.Second, 5*time.Millisecond, "the writer to be stuck in the store")
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if c := b.Counters(); c.Dropped != 20 || c.Unacked != 20 || acks.Load() != 0 {
		t.Fatalf("after close: %+v and %d acks, want 20 dropped, all 20 unacked (their source sends them again), and no ack", c, acks.Load())
	}
	err := b.WriteAcked(context.Background(), points("w1", 20, 1), func() { acks.Add(1) })
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("WriteAcked after close: %v, want ErrClosed", err)
	}
}

// TestBufferedWriteOwnedAckedRefusesWhenFull: WriteOwnedAcked never waits and never
// drops, even with OverflowDrop: what does not fit is refused whole and counted; what
// was queued is acked once written.
func TestBufferedWriteOwnedAckedRefusesWhenFull(t *testing.T) {
	db := openSQLite(t)
	o := &outage{Store: db}
	o.block.Store(true)
	opts := fastOpts(100)
	opts.Overflow = store.OverflowDrop
	opts.Writers = 1
	opts.WriteTimeout = 20 * time.Millisecond // the stuck write is retried until unblocked
	b := store.NewBuffered(o, opts)
	defer b.Close()
	var acks atomic.Int64
	ack := func() { acks.Add(1) }
	if err := b.WriteOwnedAcked(points("w1", 0, 60), ack); err != nil {
		t.Fatalf("WriteOwnedAcked: %v", err)
	}
	require.Eventually(t, func() bool { return o.calls.Load() >= 1 }, 10*time.Second, 5*time.Millisecond, "the writer to be stuck in the store")
	if err := b.WriteOwnedAcked(points("w1", 60, 60), ack); err != nil { // queued: 60 of 100
		t.Fatalf("WriteOwnedAcked: %v", err)
	}
	if err := b.WriteOwnedAcked(points("w1", 120, 60), ack); !errors.Is(err, store.ErrFull) {
		t.Fatalf("WriteOwnedAcked into a full buffer: %v, want ErrFull", err)
	}
	if c := b.Counters(); c.Rejected != 60 || c.Dropped != 0 || c.Buffered != 120 || acks.Load() != 0 {
		t.Fatalf("counters %+v, %d acks; want 60 rejected, none dropped, 120 buffered, no ack", c, acks.Load())
	}
	o.block.Store(false)
	flush(t, b)
	if st := count(t, db, "w1"); st.Count != 120 || acks.Load() != 2 {
		t.Fatalf("stored %+v, %d acks; want 120 and 2", st, acks.Load())
	}
}
