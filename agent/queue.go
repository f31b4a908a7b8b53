package agent

import (
	"sync"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/ring"
)

// queue is the bounded buffer between collection and the sink. Push never blocks: when
// the queue is full the oldest waiting batch is dropped and counted. The sender takes
// the oldest batch out (in flight) and, if delivery fails, puts it back at the front
// when there is room, else drops it: it is then the oldest. So at every instant
//
//	pushed = delivered + rejected + dropped + waiting + inflight
//
// which is what makes the drop counter exact.
type queue struct {
	mu       sync.Mutex
	waiting  *ring.Ring[metric.Batch]
	inflight int
	dropped  uint64
	ready    chan struct{} // capacity 1: "there may be something to send"
}

func newQueue(capacity int) *queue {
	return &queue{waiting: ring.New[metric.Batch](capacity), ready: make(chan struct{}, 1)}
}

// push appends b, dropping the oldest waiting batch if the queue is full.
func (q *queue) push(b metric.Batch) {
	q.mu.Lock()
	if q.waiting.Push(b) {
		q.dropped++
	}
	q.mu.Unlock()
	q.signal()
}

// take removes the oldest batch and marks it in flight.
func (q *queue) take() (metric.Batch, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b, ok := q.waiting.PopFront()
	if ok {
		q.inflight++
	}
	return b, ok
}

// done ends the flight of a delivered or rejected batch.
func (q *queue) done() {
	q.mu.Lock()
	q.inflight--
	q.mu.Unlock()
}

// putBack returns an undelivered batch to the front, or drops it when newer batches
// have filled the queue meanwhile (it is the oldest).
func (q *queue) putBack(b metric.Batch) {
	q.mu.Lock()
	q.inflight--
	if !q.waiting.PushFront(b) {
		q.dropped++
	}
	q.mu.Unlock()
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// stats returns the batches not yet delivered (waiting and in flight) and the drops.
func (q *queue) stats() (pending int, dropped uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.Len() + q.inflight, q.dropped
}
