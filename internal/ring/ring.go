// Package ring is the bounded FIFO behind the agent's batch queue and the judge's store
// buffer. Both must hold what waits for a far side that may be down without their memory
// growing, and both do it by keeping a fixed number of entries, so the wrap-around
// arithmetic lives here once. It does no locking and keeps no counters: its owners guard
// it with the lock that also guards their accounting, and decide what a drop means.
package ring

import "fmt"

// Ring is a FIFO of at most Cap elements in one slice allocated up front, so that a busy
// ring allocates nothing per element. A slot is zeroed when its element leaves, so that
// the ring does not keep alive what it no longer holds (a batch's points, label maps).
//
// Push, PopFront and PushFront move whole elements. The judge's are some ninety bytes, a
// hundred thousand of them a second, so it uses PushZero, Front and DropFront, which work
// in place: moving each element through temporaries made its buffer half again as slow.
type Ring[T any] struct {
	buf     []T
	head, n int // the elements are the n slots from buf[head], wrapping at len(buf)
}

// New returns an empty ring of capacity elements; capacity must be at least 1.
func New[T any](capacity int) *Ring[T] {
	if capacity < 1 {
		panic(fmt.Sprintf("ring: capacity %d, want at least 1", capacity))
	}
	return &Ring[T]{buf: make([]T, capacity)}
}

// Len is how many elements the ring holds.
func (r *Ring[T]) Len() int { return r.n }

// Cap is how many elements the ring can hold.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Push appends v at the back. A full ring drops its oldest element to make room, and
// Push reports that it did, for the caller to count.
func (r *Ring[T]) Push(v T) (dropped bool) {
	slot, dropped := r.PushZero()
	*slot = v
	return dropped
}

// PushZero is Push of a zero element that it returns to be filled in place; the pointer
// is good until the ring next changes.
func (r *Ring[T]) PushZero() (slot *T, dropped bool) {
	if r.n < len(r.buf) {
		slot = &r.buf[r.slot(r.n)]
		r.n++
		return slot, false
	}
	// The oldest's slot becomes the newest's once head moves past it.
	slot = &r.buf[r.head]
	var zero T
	*slot = zero
	r.head = r.slot(1)
	return slot, true
}

// PushFront puts v at the front, as the oldest element: it is how an element taken with
// PopFront goes back when its delivery failed. A full ring is left as it is and PushFront
// returns false: newer elements have taken the room, and v, older than all of them, is
// the one a drop-oldest policy gives up.
func (r *Ring[T]) PushFront(v T) bool {
	if r.n == len(r.buf) {
		return false
	}
	r.head = r.slot(len(r.buf) - 1)
	r.buf[r.head] = v
	r.n++
	return true
}

// PopFront removes and returns the oldest element; ok is false when the ring is empty.
func (r *Ring[T]) PopFront() (v T, ok bool) {
	if r.n == 0 {
		return v, false
	}
	v = r.buf[r.head]
	r.DropFront()
	return v, true
}

// Front is the oldest element, in place, or nil when the ring is empty: owners whose
// policy depends on what is oldest look at it before they drop it. The pointer is good
// until the ring next changes.
func (r *Ring[T]) Front() *T {
	if r.n == 0 {
		return nil
	}
	return &r.buf[r.head]
}

// DropFront removes the oldest element without copying it out; it reports false when the
// ring is empty.
func (r *Ring[T]) DropFront() bool {
	if r.n == 0 {
		return false
	}
	var zero T
	r.buf[r.head] = zero
	r.head = r.slot(1)
	r.n--
	return true
}

// Clear removes every element.
func (r *Ring[T]) Clear() {
	clear(r.buf)
	r.head, r.n = 0, 0
}

// slot is the index in buf of the i-th slot from the front, 0 ≤ i < len(buf): a compare
// instead of a modulo, whose division the hot paths would pay on every element.
func (r *Ring[T]) slot(i int) int {
	i += r.head
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}
