package store

import (
	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/ring"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"
)

// BufferOptions configures a Buffered store.
type BufferOptions struct {
	// Capacity bounds the points waiting to be written (default 100,000). A full buffer
	// makes WriteAcked wait for room; Write and WriteOwned do what Overflow says.
	Capacity int
	// Overflow is what Write and WriteOwned do with points that find the buffer full:
	// OverflowReject (the default) refuses the whole write with ErrFull, OverflowDrop
	// drops the oldest points that came through Write or WriteOwned (or, when the oldest
	// came through WriteAcked, the new ones) and counts them.
	Overflow Overflow
	// MaxBatch bounds the points handed to the inner store in one Write (default 5,000).
	// A batch ends where a Write ended, up to twice MaxBatch: one Write's points (one
	// agent batch: one node at one time) then reach the store together, which the
	// Elasticsearch store writes as new documents instead of merging into ones another
	// batch created.
	MaxBatch int
	// Writers is how many batches are being written to the inner store at once
	// (default 2): while the engine indexes one bulk request the next is encoded and
	// sent, which is what keeps a two-core Elasticsearch node busy. SQLite serialises
	// writers but still overlaps one batch's preparation with the other's insert.
	Writers int
	// MinBackoff and MaxBackoff bound the exponential wait between failed writes
	// (defaults 100 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// WriteTimeout bounds one Write of the inner store (default 30 s).
	WriteTimeout time.Duration
	// CloseTimeout bounds how long Close keeps writing what is still buffered
	// (default 10 s); what is left then is dropped and counted.
	CloseTimeout time.Duration
	// Logger gets warnings about failed writes; slog.Default() when nil.
	Logger *slog.Logger
}

// Overflow chooses what Buffered.Write does when the buffer is full.
type Overflow int

const (
	// OverflowReject refuses the write with ErrFull: the caller keeps its points.
	OverflowReject Overflow = iota
	// OverflowDrop accepts the write and drops points, counted.
	OverflowDrop
)

// ErrFull is returned by Write and WriteOwned when the buffer has no room for the points
// and the buffer's Overflow is OverflowReject.
var ErrFull = errors.New("store buffer full")

// BufferCounters are the buffer's figures for the judge's /metrics. Written, Dropped,
// Refused, Rejected and Errors only grow; every accepted point ends up in exactly one of
// Written, Dropped or Buffered.
type BufferCounters struct {
	Buffered int64 // points waiting now, including the batch being written
	Capacity int64 // points the buffer holds at most (BufferOptions.Capacity)
	Dropped  int64 // points dropped: overflow, refused as invalid by the inner store, left at Close
	Refused  int64 // of Dropped, the points the inner store refused as invalid
	// Unacked is, of Dropped, the points left at Close that came with WriteAcked: their
	// ack is never called, so their source (the judge's Kafka consumer, which commits
	// only acked offsets) delivers them again.
	Unacked  int64
	Written  int64 // points the inner store accepted
	Rejected int64 // points refused with ErrFull (never accepted)
	Errors   int64 // failed Write calls to the inner store (each retry counts)
}

// Buffered is a Store whose Write only queues the points: background writers (Writers of
// them) take batches off the queue in order and write them to the inner store, retrying
// with back-off while it fails (an engine outage), so that Write never waits for the
// engine. The queue is bounded: past the bound WriteAcked waits for room, and Write
// refuses the points or drops some, counted (BufferOptions.Overflow). Queries go straight to the inner store and so see a point only once it has been
// written; Flush waits for that, Refresh also makes it visible.
//
// A batch the inner store refuses with ErrInvalid is dropped, not retried; when the
// error is a *RefusedError the store kept the batch's other points, so only the refused
// ones count as dropped. Either way they are counted (Refused) and logged with the
// store's reasons. Points rewritten after a timeout are harmless: stores treat a point's
// identity as a key.
// Concurrent writers may finish batches out of order, so if the queue holds two
// different values for one identity either may be the one that stays.
type Buffered struct {
	inner Store
	opts  BufferOptions
	log   *slog.Logger

	mu       sync.Mutex
	queue    *ring.Ring[queued] // capacity opts.Capacity
	room     chan struct{}      // closed when points leave the queue; nil while nobody waits
	inflight int                // points taken by the writers and not yet settled
	acking   int                // acks of settled WriteAcked calls still being called: Flush waits for them
	empty    chan struct{}      // closed when nothing is queued or in flight; replaced when points arrive
	closed   bool
	counters BufferCounters
	health   writeHealth // Health's

	wake     chan struct{} // points are waiting for a writer
	done     chan struct{} // closed by Close
	life     context.Context
	stopLife context.CancelFunc // called by Close after CloseTimeout
	exited   chan struct{}      // closed when every writer goroutine has returned
}

var _ Store = (*Buffered)(nil)

// queued is one point waiting in the queue, with what the writers need to know of the
// call it came with.
type queued struct {
	point Point
	start bool   // the first point of a Write: a batch may end before it
	owner *acked // the WriteAcked it came with; nil for Write
}

// NewBuffered wraps inner and starts the writer goroutines. Close stops them and closes
// inner: the Buffered store owns it.
func NewBuffered(inner Store, opts BufferOptions) *Buffered {
	opts = opts.WithDefaults()
	b := &Buffered{
		inner:  inner,
		opts:   opts,
		log:    opts.Logger.With("component", "store.buffer"),
		queue:  ring.New[queued](opts.Capacity),
		empty:  make(chan struct{}),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	b.life, b.stopLife = context.WithCancel(context.Background())
	close(b.empty)
	var wg sync.WaitGroup
	for range opts.Writers {
		wg.Go(b.run)
	}
	go func() {
		wg.Wait()
		close(b.exited)
	}()
	return b
}

// WithDefaults returns the options with every zero field set to its default, as
// NewBuffered uses them: the judge writes its records with the same timeouts and
// back-off.
func (opts BufferOptions) WithDefaults() BufferOptions {
	if opts.Capacity <= 0 {
		opts.Capacity = 100_000
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 5_000
	}
	if opts.Writers <= 0 {
		opts.Writers = 2
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return opts
}

// Write validates the points and queues them; it does not wait for the inner store.
// An invalid batch is refused whole with an error wrapping ErrInvalid; points that find
// the buffer full are handled as BufferOptions.Overflow says. The points' label maps are
// copied: the caller may reuse them.
func (b *Buffered) Write(ctx context.Context, points []Point) error {
	return b.write(points, true)
}

// WriteOwned is Write for a caller that has validated every point (Point.Validate) and
// hands the label maps over, never to modify them again (the judge's ingest, whose maps
// come fresh from the decoder): it spares a second validation and a copy of every
// labelled point's map. The inner store still validates what it writes.
func (b *Buffered) WriteOwned(points []Point) error {
	return b.write(points, false)
}

// acked is one WriteAcked call: its points still to be settled, and whether any of them
// was lost (dropped without the inner store having refused it).
type acked struct {
	left int
	lost bool
	ack  func()
}

// WriteAcked queues points as WriteOwned does (the caller has validated them and hands
// their label maps over), but never drops one to make room: while the buffer is full it
// waits, until ctx ends or the buffer is closed (then it returns the error, having
// queued only some points). ack is called, on a writer goroutine, once every point is
// in the inner store or was refused by it as invalid (retrying those is useless); it is
// never called if any point is lost (Close ran out of time). It is how a source that can
// deliver again (the bus) moves on only once the store has its points.
func (b *Buffered) WriteAcked(ctx context.Context, points []Point, ack func()) error {
	if len(points) == 0 {
		ack()
		return nil
	}
	a := &acked{left: len(points), ack: ack}
	for len(points) > 0 {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		free := b.queue.Cap() - b.queue.Len()
		if free == 0 {
			if b.room == nil {
				b.room = make(chan struct{})
			}
			room := b.room
			b.mu.Unlock()
			select {
			case <-room:
				continue
			case <-ctx.Done():
				return fmt.Errorf("buffered store: wait for room: %w", ctx.Err())
			case <-b.done:
				return ErrClosed
			}
		}
		k := min(free, len(points))
		b.pushLocked(points[:k], a.left == len(points), a)
		b.mu.Unlock()
		points = points[k:]
	}
	return nil
}

// WriteOwnedAcked queues points as WriteOwned does (the caller has validated them and
// hands their label maps over) and calls ack as WriteAcked does: once the inner store
// has every one of them or refused it as invalid, never if one is lost. It never waits
// and never drops a point: points that find no room for all of them are refused whole
// with ErrFull, counted as rejected, whatever Overflow says. It is how a caller that
// answers only once the store has its points (the judge's HTTP ingest) hands them over.
func (b *Buffered) WriteOwnedAcked(points []Point, ack func()) error {
	if len(points) == 0 {
		ack()
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if err := b.rejectLocked(len(points)); err != nil {
		return err
	}
	b.pushLocked(points, true, &acked{left: len(points), ack: ack})
	return nil
}

// rejectLocked refuses n points with ErrFull, counted, when the queue has no room for
// them all. b.mu is held.
func (b *Buffered) rejectLocked(n int) error {
	if free := b.queue.Cap() - b.queue.Len(); n > free {
		b.counters.Rejected += int64(n)
		b.refusedLocked(n)
		return fmt.Errorf("buffered store: %d points, room for %d: %w", n, free, ErrFull)
	}
	return nil
}

func (b *Buffered) write(points []Point, fromCaller bool) error {
	if fromCaller {
		if err := ValidatePoints(points); err != nil {
			return fmt.Errorf("buffered store: %w", err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if len(points) == 0 {
		return nil
	}
	if b.opts.Overflow == OverflowReject {
		if err := b.rejectLocked(len(points)); err != nil {
			return err
		}
	}
	if fromCaller {
		cloned := make([]Point, len(points))
		for i, p := range points {
			if len(p.Labels) > 0 {
				p.Labels = maps.Clone(p.Labels)
			}
			cloned[i] = p
		}
		points = cloned
	}
	// OverflowDrop: make room by dropping the oldest points no acked write is waiting
	// for; while an acked one is oldest, drop the new points instead.
	for b.queue.Len()+len(points) > b.queue.Cap() {
		if oldest := b.queue.Front(); oldest == nil || oldest.owner != nil {
			break
		}
		b.queue.DropFront()
		b.counters.Dropped++
	}
	if over := b.queue.Len() + len(points) - b.queue.Cap(); over > 0 {
		b.counters.Dropped += int64(over)
		points = points[over:]
	}
	b.pushLocked(points, true, nil)
	return nil
}

// pushLocked appends points, which fit, to the queue; start marks the first as the start
// of a Write. b.mu is held.
func (b *Buffered) pushLocked(points []Point, start bool, owner *acked) {
	if len(points) == 0 {
		return
	}
	if b.idleLocked() {
		b.empty = make(chan struct{})
	}
	if b.queue.Len()+b.inflight == 0 {
		b.health.progress = time.Now() // the points' wait starts
	}
	b.health.refused = 0
	for i := range points {
		q, _ := b.queue.PushZero() // they fit: nothing is dropped
		q.point, q.start, q.owner = points[i], start && i == 0, owner
	}
	b.signalWake()
}

// Counters returns the current figures.
func (b *Buffered) Counters() BufferCounters {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counters
	c.Buffered = int64(b.queue.Len() + b.inflight)
	c.Capacity = int64(b.opts.Capacity)
	return c
}

// Flush waits until every point queued so far has been written or dropped, or ctx ends.
func (b *Buffered) Flush(ctx context.Context) error {
	b.mu.Lock()
	empty := b.empty
	b.mu.Unlock()
	select {
	case <-empty:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("buffered store: flush: %w", ctx.Err())
	}
}

// ownerRun is a run of consecutive points of a batch that came with the same WriteAcked
// (owner nil: with Write).
type ownerRun struct {
	owner *acked
	n     int
}

// take moves up to MaxBatch points from the queue into batch (reused), then on to the
// end of the Write they came with (up to twice MaxBatch), and marks them in flight; runs
// (reused) says which WriteAcked calls they came with. If points remain, it wakes another
// writer; if a WriteAcked waits for room, it wakes that.
func (b *Buffered) take(batch []Point, runs []ownerRun) ([]Point, []ownerRun) {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch, runs = batch[:0], runs[:0]
	for len(batch) < 2*b.opts.MaxBatch {
		q := b.queue.Front()
		if q == nil || len(batch) >= b.opts.MaxBatch && q.start {
			break
		}
		batch = append(batch, q.point)
		if len(runs) > 0 && runs[len(runs)-1].owner == q.owner {
			runs[len(runs)-1].n++
		} else {
			runs = append(runs, ownerRun{owner: q.owner, n: 1})
		}
		b.queue.DropFront()
	}
	b.inflight += len(batch)
	if b.queue.Len() > 0 {
		b.signalWake()
	}
	if len(batch) > 0 && b.room != nil {
		close(b.room)
		b.room = nil
	}
	return batch, runs
}

// signalWake tells a sleeping writer that points are waiting.
func (b *Buffered) signalWake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// settle ends an in-flight batch of count points and calls the acks of the WriteAcked
// calls it completed. Unless lost, the inner store has count-refused of the points and
// refused the rest as invalid (dropped, never worth a retry: they settle a WriteAcked
// all the same). A lost batch is dropped whole (Close ran out of time, or the inner
// store is closed) and its WriteAcked calls are never acknowledged.
func (b *Buffered) settle(count int, runs []ownerRun, refused int, lost bool) {
	var done []func()
	b.mu.Lock()
	b.settledLocked(lost)
	switch {
	case lost:
		b.counters.Dropped += int64(count)
	default:
		b.counters.Written += int64(count - refused)
		b.counters.Dropped += int64(refused)
		b.counters.Refused += int64(refused)
	}
	for _, r := range runs {
		if r.owner == nil {
			continue
		}
		if lost {
			b.counters.Unacked += int64(r.n)
		}
		r.owner.left -= r.n
		r.owner.lost = r.owner.lost || lost
		if r.owner.left == 0 && !r.owner.lost {
			done = append(done, r.owner.ack)
		}
	}
	b.inflight -= count
	b.acking += len(done)
	if b.idleLocked() {
		b.signalEmpty()
	}
	b.mu.Unlock()
	if len(done) == 0 {
		return
	}
	for _, ack := range done { // outside the lock: an ack commits a bus offset
		ack()
	}
	b.mu.Lock()
	b.acking -= len(done)
	if b.idleLocked() { // only now: a Flush that returned has seen every ack called
		b.signalEmpty()
	}
	b.mu.Unlock()
}

// idleLocked: nothing queued, in flight or being acknowledged. b.mu is held.
func (b *Buffered) idleLocked() bool {
	return b.queue.Len() == 0 && b.inflight == 0 && b.acking == 0
}

// signalEmpty closes the empty channel unless it is closed already; b.mu is held.
func (b *Buffered) signalEmpty() {
	select {
	case <-b.empty:
	default:
		close(b.empty)
	}
}

func (b *Buffered) failed(err error) {
	b.mu.Lock()
	b.failedLocked(err)
	b.mu.Unlock()
}

// run is one writer goroutine. Until Close it retries a failing batch forever (the bound
// on the queue keeps memory in check); after Close it keeps going until the queue is
// empty or CloseTimeout has passed.
func (b *Buffered) run() {
	ctx := b.life  // cancelled when Close runs out of time, even in the middle of a Write
	done := b.done // nil once closing, so that the selects below stop seeing it
	closing := func() { done = nil }
	var batch []Point
	var runs []ownerRun
	for {
		batch, runs = b.take(batch, runs)
		if len(batch) == 0 {
			b.settleEmpty()
			if done == nil {
				return
			}
			select {
			case <-b.wake:
			case <-done:
				closing()
			}
			continue
		}
		for attempt := 1; ; attempt++ {
			wctx, cancel := context.WithTimeout(ctx, b.opts.WriteTimeout)
			err := b.inner.Write(wctx, batch)
			cancel()
			if err == nil {
				b.settle(len(batch), runs, 0, false)
				break
			}
			var partly *RefusedError
			if errors.As(err, &partly) {
				// The store has the batch's other points: a retry would store nothing more.
				n := min(max(partly.Points, 0), len(batch))
				b.log.Warn("the store refused some points of a batch for good; the others are stored", "refused", n, "points", len(batch), "err", err)
				b.settle(len(batch), runs, n, false)
				break
			}
			b.failed(err)
			if errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) {
				b.log.Warn("dropping a batch the store refused", "points", len(batch), "err", err)
				if errors.Is(err, ErrClosed) {
					b.settle(len(batch), runs, 0, true)
				} else {
					b.settle(len(batch), runs, len(batch), false)
				}
				break
			}
			if ctx.Err() != nil { // Close ran out of time
				b.settle(len(batch), runs, 0, true)
				b.dropRest()
				return
			}
			wait := backoff.Schedule(b.opts.MinBackoff, b.opts.MaxBackoff)(attempt)
			if attempt == 1 || attempt%10 == 0 {
				b.log.Warn("store write failed, retrying", "points", len(batch), "attempt", attempt, "retry_in", wait, "err", err)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-done:
				closing()
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
}

// settleEmpty wakes Flush waiters when nothing is queued or in flight.
func (b *Buffered) settleEmpty() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idleLocked() {
		b.signalEmpty()
	}
}

// dropRest drops whatever is still queued when Close runs out of time. A batch another
// writer has in flight is settled by that writer.
func (b *Buffered) dropRest() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		q, ok := b.queue.PopFront()
		if !ok {
			break
		}
		b.counters.Dropped++
		if q.owner != nil { // its ack is never called: the source delivers it again
			b.counters.Unacked++
		}
	}
	if b.idleLocked() {
		b.signalEmpty()
	}
}

// Refresh waits until every point queued so far has been written or dropped (Flush), then
// refreshes the inner store, so that queries see the written points.
func (b *Buffered) Refresh(ctx context.Context) error {
	if b.isClosed() {
		return ErrClosed
	}
	if err := b.Flush(ctx); err != nil {
		return err
	}
	return b.inner.Refresh(ctx)
}

// Stats queries the inner store.
func (b *Buffered) Stats(ctx context.Context, q Query) (Stats, error) {
	if b.isClosed() {
		return Stats{}, ErrClosed
	}
	return b.inner.Stats(ctx, q)
}

// Profile queries the inner store.
func (b *Buffered) Profile(ctx context.Context, q Query) (HourProfile, error) {
	if b.isClosed() {
		return HourProfile{}, ErrClosed
	}
	return b.inner.Profile(ctx, q)
}

// Nodes queries the inner store.
func (b *Buffered) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	return b.inner.Nodes(ctx, from, to)
}

// Series queries the inner store.
func (b *Buffered) Series(ctx context.Context, name string, from, to time.Time) ([]SeriesKey, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	return b.inner.Series(ctx, name, from, to)
}

// Scan reads the inner store.
func (b *Buffered) Scan(ctx context.Context, from, to time.Time, fn func([]Point) error) error {
	if b.isClosed() {
		return ErrClosed
	}
	return b.inner.Scan(ctx, from, to, fn)
}

// DeleteBefore applies retention in the inner store; queued points are unaffected.
func (b *Buffered) DeleteBefore(ctx context.Context, t time.Time) error {
	if b.isClosed() {
		return ErrClosed
	}
	return b.inner.DeleteBefore(ctx, t)
}

// WriteRecords writes to the inner store at once: records are few and small, and not
// queued behind the points.
func (b *Buffered) WriteRecords(ctx context.Context, recs []Record) error {
	if b.isClosed() {
		return ErrClosed
	}
	return b.inner.WriteRecords(ctx, recs)
}

// Records reads the inner store.
func (b *Buffered) Records(ctx context.Context, kind string) ([]Record, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	return b.inner.Records(ctx, kind)
}

func (b *Buffered) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close stops accepting points, writes what is queued for up to CloseTimeout, then
// cancels the write in progress, drops the rest, and closes the inner store. It is
// idempotent. (An inner store that ignores its context can hold Close up.)
func (b *Buffered) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.exited
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.done)
	t := time.NewTimer(b.opts.CloseTimeout)
	select {
	case <-b.exited:
	case <-t.C:
		// Out of time: cancel the write in progress; the writer drops what is left.
		b.stopLife()
		<-b.exited
	}
	t.Stop()
	b.stopLife()
	if err := b.inner.Close(); err != nil {
		return fmt.Errorf("buffered store: %w", err)
	}
	return nil
}
