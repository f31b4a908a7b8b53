package wave

import (
	"sync"
	"sync/atomic"
)

// resumeSignal wakes the lanes waiting out a publish backoff as soon as one lane's
// publish succeeds: the sink is back for all of them. Each lane backs off on its own, up
// to publish_max_backoff, and right after a broker restart its first answers can still be
// Not Leader, which doubles the wait again; without the signal the last lane resumed (and
// the offset moved) up to two backoffs after the broker served again.
type resumeSignal struct {
	gen atomic.Uint64 // successes so far
	mu  sync.Mutex
	ch  chan struct{} // closed by the next success; nil until a lane waits
}

// seen is the count of successes, taken before an attempt.
func (r *resumeSignal) seen() uint64 { return r.gen.Load() }

// since returns a channel closed at the first success after gen (already closed when
// there was one): a success between a lane's failed attempt and its wait is not missed.
func (r *resumeSignal) since(gen uint64) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen.Load() != gen {
		return closedChan
	}
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// resumed records a success and wakes every lane waiting now.
func (r *resumeSignal) resumed() {
	r.gen.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
