package bus

import (
	"context"
	"sync"
)

// Defer lets the Handler that was given ctx acknowledge its message later than its
// return: the message is then committed only once the handler has returned nil and ack
// has been called, which may happen on another goroutine after the handler returned (a
// consumer that hands messages to a batching writer acks when the writer has made them
// durable). A message never acked is never committed, nor is any later message of its
// partition: commits follow the partition's order, so a restarted subscriber of the same
// group resumes at the oldest message not yet acked, and redelivers what followed it.
// Only the first call of ack counts.
//
// On a bus whose positions do not outlive the process (bus/memory), and outside a
// Handler, Defer returns an ack that does nothing: the message counts as handled when
// the handler returns nil.
func Defer(ctx context.Context) (ack func()) {
	e, _ := ctx.Value(ackKey{}).(*AckEntry)
	if e == nil {
		return func() {}
	}
	return e.deferred()
}

type ackKey struct{}

// AckTracker is for Subscriber implementations that commit positions: it orders the
// completion of one subscription's delivered messages per partition, so that a position
// is committed only when every message before it is done (its handler returned nil and
// any ack taken with Defer was called). Deliver each message's handler the context of
// Add, call Handled when the handler returned nil, and when Signal fires commit what
// Ready returns, then tell Committed.
type AckTracker struct {
	mu     sync.Mutex
	parts  map[int]*ackQueue
	signal chan struct{}
}

// ackQueue is one partition's delivered messages not yet committed, oldest first.
type ackQueue struct {
	entries []*AckEntry
	last    int64 // offset of the newest delivered message
}

// AckEntry is one delivered message in an AckTracker.
type AckEntry struct {
	t      *AckTracker
	q      *ackQueue
	offset int64
	left   int // guarded by t.mu: the handler's return plus a deferred ack
}

// NewAckTracker returns an empty tracker.
func NewAckTracker() *AckTracker {
	return &AckTracker{parts: map[int]*ackQueue{}, signal: make(chan struct{}, 1)}
}

// Add registers a delivered message and returns the context its handler gets, through
// which the handler may Defer. A partition's messages must be added in delivery order; an
// offset at or below the previous one (the partition was handed back after a rebalance
// and is delivered again from its committed position) forgets the partition's earlier
// entries: what they covered is delivered again.
func (t *AckTracker) Add(ctx context.Context, partition int, offset int64) (context.Context, *AckEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.parts[partition]
	if q == nil || offset <= q.last {
		q = &ackQueue{}
		t.parts[partition] = q
	}
	q.last = offset
	e := &AckEntry{t: t, q: q, offset: offset, left: 1}
	q.entries = append(q.entries, e)
	return context.WithValue(ctx, ackKey{}, e), e
}

// Handled records that the message's handler returned nil.
func (e *AckEntry) Handled() { e.done() }

func (e *AckEntry) deferred() func() {
	e.t.mu.Lock()
	e.left++
	e.t.mu.Unlock()
	var once sync.Once
	return func() { once.Do(e.done) }
}

func (e *AckEntry) done() {
	e.t.mu.Lock()
	e.left--
	finished := e.left == 0
	e.t.mu.Unlock()
	if finished {
		select {
		case e.t.signal <- struct{}{}:
		default:
		}
	}
}

// Signal receives a value when a message became done: Ready may have something new to
// commit.
func (t *AckTracker) Signal() <-chan struct{} { return t.signal }

// Ready returns, per partition, the offset of the newest message up to which every
// message is done: the group's position may move past it. Partitions with nothing done
// since the last Committed are left out. Ready changes nothing: call Committed once the
// position is stored, so that a failed commit is tried again.
func (t *AckTracker) Ready() map[int]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out map[int]int64
	for p, q := range t.parts {
		i := 0
		for i < len(q.entries) && q.entries[i].left == 0 {
			i++
		}
		if i == 0 {
			continue
		}
		if out == nil {
			out = map[int]int64{}
		}
		out[p] = q.entries[i-1].offset
	}
	return out
}

// Committed forgets the messages up to the offsets that Ready returned and that are now
// committed.
func (t *AckTracker) Committed(offsets map[int]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, off := range offsets {
		q := t.parts[p]
		if q == nil {
			continue
		}
		i := 0
		// Only done entries: the partition may have been delivered again since Ready.
		for i < len(q.entries) && q.entries[i].left == 0 && q.entries[i].offset <= off {
			i++
		}
		clear(q.entries[:i])
		q.entries = q.entries[i:]
	}
}
