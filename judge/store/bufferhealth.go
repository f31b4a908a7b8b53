package store

import (
	"errors"
	"time"
)

// BufferHealth is whether the inner store takes the buffer's writes now, for a readiness
// check (the judge's GET /readyz). Counters says how many points went where since the
// start, which does not tell a store that is down now from one that failed once.
type BufferHealth struct {
	// Err is the inner store's error on the last write while none has succeeded since
	// (nil when the last write succeeded or none failed yet): the store is failing, and
	// has been since FailingSince.
	Err          error
	FailingSince time.Time
	// Waiting is how long points have waited with no write finishing: since the last
	// write finished, or since points arrived in an empty buffer; 0 when nothing is
	// queued or being written. A write that hangs (an engine that takes connections and
	// does not answer) fails only after BufferOptions.WriteTimeout; this grows meanwhile.
	Waiting time.Duration
	// Full: the queue holds Capacity points, or has not yet room for the last Write
	// refused for want of it (ErrFull), and nothing fitted since.
	Full bool
	// Closed: Close has been called.
	Closed bool
}

// writeHealth is what Health reads of the writers; Buffered.mu guards it.
type writeHealth struct {
	err          error
	failingSince time.Time
	progress     time.Time // a write finished, or points arrived in an empty buffer
	refused      int       // points of the last Write refused with ErrFull; 0 once one fits
}

// Health reports whether the inner store takes writes now.
func (b *Buffered) Health() BufferHealth {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	h := BufferHealth{Err: b.health.err, FailingSince: b.health.failingSince,
		Full: b.queue.Cap()-b.queue.Len() < max(b.health.refused, 1), Closed: b.closed}
	if b.queue.Len()+b.inflight > 0 {
		h.Waiting = now.Sub(b.health.progress)
	}
	return h
}

// refusedLocked records a Write of n points refused for want of room: the buffer is full
// for them until the queue has room for n (or another Write fits). A Write larger than
// the whole buffer never fits, and says nothing of the store. b.mu is held.
func (b *Buffered) refusedLocked(n int) {
	if n <= b.queue.Cap() {
		b.health.refused = n
	}
}

// failedLocked records a failed write of the inner store. A batch it refused as invalid
// (or because it is closed) is not the store failing: it answered. b.mu is held.
func (b *Buffered) failedLocked(err error) {
	b.counters.Errors++
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) {
		return
	}
	if b.health.err == nil {
		b.health.failingSince = time.Now()
	}
	b.health.err = err
}

// settledLocked records that a write finished, stored or not (lost: dropped at Close,
// which says nothing of the store). b.mu is held.
func (b *Buffered) settledLocked(lost bool) {
	b.health.progress = time.Now()
	if !lost {
		b.health.err, b.health.failingSince = nil, time.Time{}
	}
}
