package agent

import (
	"fmt"
	"slices"
	"testing"

	"github.com/binlake/binlake/internal/metric"
)

// TestQueueAccounting runs the sender's moves on a small queue and checks, after every
// one, that pushed = delivered + dropped + waiting + inflight, then what was delivered
// (oldest first) and the final figures.
func TestQueueAccounting(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  int
		moves     string // p: push a new batch, d: take and deliver, t: take and hold, b: put the held batch back
		delivered []string
		pending   int
		dropped   uint64
	}{
		{"delivers oldest first", 3, "pppddd", []string{"b1", "b2", "b3"}, 0, 0},
		{"a full queue drops the oldest", 2, "ppppdd", []string{"b3", "b4"}, 0, 2},
		{"a failed batch goes back to the front", 3, "pptpbddd", []string{"b1", "b2", "b3"}, 0, 0},
		{"a failed batch is dropped when newer ones filled the queue", 2, "pptpbdd", []string{"b2", "b3"}, 0, 1},
		{"taking from an empty queue is nothing", 2, "dpd", []string{"b1"}, 0, 0},
		{"waiting and in-flight batches are pending", 3, "ppppdt", []string{"b2"}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(tc.capacity)
			var pushed int
			var delivered []string
			var held metric.Batch
			for i, m := range tc.moves {
				switch m {
				case 'p':
					pushed++
					q.push(metric.Batch{Node: fmt.Sprint("b", pushed)})
				case 'd':
					if b, ok := q.take(); ok {
						delivered = append(delivered, b.Node)
						q.done()
					}
				case 't':
					var ok bool
					if held, ok = q.take(); !ok {
						t.Fatalf("move %d: nothing to take", i)
					}
				case 'b':
					q.putBack(held)
				}
				pending, dropped := q.stats()
				if got := len(delivered) + int(dropped) + pending; got != pushed {
					t.Fatalf("move %d: delivered %d + dropped %d + pending %d != pushed %d", i, len(delivered), dropped, pending, pushed)
				}
			}
			if !slices.Equal(delivered, tc.delivered) {
				t.Errorf("delivered %v, want %v", delivered, tc.delivered)
			}
			if pending, dropped := q.stats(); pending != tc.pending || dropped != tc.dropped {
				t.Errorf("stats() = %d pending, %d dropped; want %d, %d", pending, dropped, tc.pending, tc.dropped)
			}
		})
	}
}
