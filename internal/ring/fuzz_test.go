package ring

import (
	"fmt"
	"slices"
	"testing"
)

// FuzzRing runs random operations on a Ring and on a plain slice that does the same the
// obvious way, and compares them after every operation. The first byte picks the
// capacity (1–8, small so that the ring wraps and fills often); each further byte is one
// operation.
func FuzzRing(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 5, 4, 0, 5, 5, 5})
	f.Add([]byte{0, 0, 0, 3, 3})
	f.Add([]byte{7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 6, 2})
	ops := []int{push, push, pushZero, pushFront, pop, pop, dropFront, clearAll}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		capacity := int(in[0])%8 + 1
		r := New[int](capacity)
		var model []int
		for i, b := range in[1:] {
			s := step{op: ops[int(b)%len(ops)], v: i + 1} // nonzero: check tells a stale slot from a free one
			var want string
			switch s.op {
			case push, pushZero:
				if len(model) == capacity {
					want = "drop"
					model = model[1:]
				}
				model = append(model, s.v)
			case pushFront:
				if len(model) == capacity {
					want = fmt.Sprint("refuse ", s.v)
				} else {
					model = slices.Insert(model, 0, s.v)
				}
			case pop, dropFront:
				switch {
				case len(model) == 0:
					want = "empty"
				case s.op == pop:
					want = fmt.Sprint("pop ", model[0])
				default:
					want = "drop"
				}
				if len(model) > 0 {
					model = model[1:]
				}
			case clearAll:
				model = nil
			}
			if got := apply(r, s); got != want {
				t.Fatalf("operation %d (%+v): got %q, want %q", i, s, got, want)
			}
			check(t, r, model)
		}
	})
}
