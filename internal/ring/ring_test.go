package ring

import (
	"fmt"
	"slices"
	"testing"
)

// Operations of the tests' small language.
const (
	push = iota
	pushZero
	pushFront
	pop
	dropFront
	clearAll
)

type step struct{ op, v int }

// apply runs s on r and says what came out of the ring, if anything: "pop v", "empty"
// (a pop or drop of an empty ring), "drop" (a push made room, or DropFront removed one;
// check tells which went) or "refuse v" (PushFront found the ring full).
func apply(r *Ring[int], s step) string {
	switch s.op {
	case push:
		if r.Push(s.v) {
			return "drop"
		}
	case pushZero:
		slot, dropped := r.PushZero()
		if *slot != 0 {
			return fmt.Sprint("PushZero gave ", *slot)
		}
		*slot = s.v
		if dropped {
			return "drop"
		}
	case pushFront:
		if !r.PushFront(s.v) {
			return fmt.Sprint("refuse ", s.v)
		}
	case pop:
		if v, ok := r.PopFront(); ok {
			return fmt.Sprint("pop ", v)
		}
		return "empty"
	case dropFront:
		if r.DropFront() {
			return "drop"
		}
		return "empty"
	case clearAll:
		r.Clear()
	}
	return ""
}

// check fails t unless r holds want, front first, and every slot outside it is zero: a
// slot that kept a departed element would keep what it references alive.
func check(t *testing.T, r *Ring[int], want []int) {
	t.Helper()
	var got []int
	for i := range r.Len() {
		got = append(got, r.buf[r.slot(i)])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ring holds %v, want %v", got, want)
	}
	switch front := r.Front(); {
	case len(want) == 0 && front != nil:
		t.Fatalf("Front() points to %d in an empty ring", *front)
	case len(want) > 0 && (front == nil || *front != want[0]):
		t.Fatalf("Front() = %v, want a pointer to %d", front, want[0])
	}
	for i := r.Len(); i < r.Cap(); i++ {
		if v := r.buf[r.slot(i)]; v != 0 {
			t.Fatalf("free slot %d still holds %d", r.slot(i), v)
		}
	}
}

func TestRing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		steps    []step
		out      []string // what came out, in order
		want     []int    // what is left, front first
	}{
		{"pushes below capacity keep their order", 3,
			[]step{{push, 1}, {push, 2}},
			nil, []int{1, 2}},
		{"a push into a full ring drops the oldest", 3,
			[]step{{push, 1}, {push, 2}, {push, 3}, {push, 4}, {push, 5}},
			[]string{"drop", "drop"}, []int{3, 4, 5}},
		{"capacity one keeps the newest", 1,
			[]step{{push, 1}, {push, 2}},
			[]string{"drop"}, []int{2}},
		{"push zero fills in place and drops the oldest when full", 2,
			[]step{{push, 1}, {pushZero, 2}, {pushZero, 3}},
			[]string{"drop"}, []int{2, 3}},
		{"pops come oldest first, then nothing", 2,
			[]step{{push, 1}, {push, 2}, {pop, 0}, {pop, 0}, {pop, 0}},
			[]string{"pop 1", "pop 2", "empty"}, nil},
		{"drop front removes the oldest, then nothing", 2,
			[]step{{push, 1}, {push, 2}, {dropFront, 0}, {push, 3}, {dropFront, 0}, {dropFront, 0}, {dropFront, 0}},
			[]string{"drop", "drop", "drop", "empty"}, nil},
		{"the ring wraps around its end", 3,
			[]step{{push, 1}, {push, 2}, {push, 3}, {pop, 0}, {pop, 0}, {push, 4}, {push, 5}},
			[]string{"pop 1", "pop 2"}, []int{3, 4, 5}},
		{"push front puts a taken element back first", 3,
			[]step{{push, 1}, {push, 2}, {pop, 0}, {pushFront, 1}},
			[]string{"pop 1"}, []int{1, 2}},
		{"push front into a full ring is refused", 2,
			[]step{{push, 1}, {pop, 0}, {push, 2}, {push, 3}, {pushFront, 1}},
			[]string{"pop 1", "refuse 1"}, []int{2, 3}},
		{"push front wraps below the first slot", 3,
			[]step{{pushFront, 1}, {pushFront, 2}, {push, 3}, {push, 4}},
			[]string{"drop"}, []int{1, 3, 4}},
		{"clear empties the ring", 3,
			[]step{{push, 1}, {push, 2}, {clearAll, 0}, {pop, 0}, {push, 3}},
			[]string{"empty"}, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New[int](tc.capacity)
			var out []string
			for _, s := range tc.steps {
				if o := apply(r, s); o != "" {
					out = append(out, o)
				}
			}
			if !slices.Equal(out, tc.out) {
				t.Errorf("out %q, want %q", out, tc.out)
			}
			if r.Cap() != tc.capacity {
				t.Errorf("Cap() = %d, want %d", r.Cap(), tc.capacity)
			}
			check(t, r, tc.want)
		})
	}
}

func TestNewRefusesNoCapacity(t *testing.T) {
	for _, capacity := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", capacity)
				}
			}()
			New[int](capacity)
		}()
	}
}
