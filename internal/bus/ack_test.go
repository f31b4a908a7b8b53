package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
)

// TestAckTrackerOrder: a partition's position moves only over messages that are done,
// in order; a deferred message holds back the ones after it until its ack.
func TestAckTrackerOrder(t *testing.T) {
	tr := bus.NewAckTracker()
	ctx := context.Background()
	var acks []func()
	for off := int64(10); off < 14; off++ {
		hctx, e := tr.Add(ctx, 0, off)
		if off%2 == 0 { // 10 and 12 defer
			acks = append(acks, bus.Defer(hctx))
		}
		e.Handled()
	}
	_, e := tr.Add(ctx, 1, 5)
	e.Handled()

	require.Equal(t, map[int]int64{1: 5}, tr.Ready(), "partition 0 waits for the ack of 10")
	require.Equal(t, map[int]int64{1: 5}, tr.Ready(), "ready until committed")
	tr.Committed(map[int]int64{1: 5})
	acks[1]() // 12: still behind 10
	require.Nil(t, tr.Ready())
	acks[0]()
	acks[0]() // a second call changes nothing
	select {
	case <-tr.Signal():
	default:
		t.Fatal("no signal once the head of partition 0 is done")
	}
	require.Equal(t, map[int]int64{0: 13}, tr.Ready())
	tr.Committed(map[int]int64{0: 13})
	require.Nil(t, tr.Ready(), "nothing new")
}

// TestAckTrackerHandlerNotReturned: an ack before the handler's return does not complete
// the message.
func TestAckTrackerHandlerNotReturned(t *testing.T) {
	tr := bus.NewAckTracker()
	hctx, e := tr.Add(context.Background(), 0, 1)
	bus.Defer(hctx)()
	require.Nil(t, tr.Ready())
	e.Handled()
	require.Equal(t, map[int]int64{0: 1}, tr.Ready())
}

// TestAckTrackerRedelivery: a partition delivered again from an older offset (after a
// rebalance) forgets its earlier entries, whose late acks then change nothing.
func TestAckTrackerRedelivery(t *testing.T) {
	tr := bus.NewAckTracker()
	ctx := context.Background()
	hctx, e := tr.Add(ctx, 0, 7)
	late := bus.Defer(hctx)
	e.Handled()
	_, e = tr.Add(ctx, 0, 7)
	e.Handled()
	late()
	require.Equal(t, map[int]int64{0: 7}, tr.Ready())
	tr.Committed(map[int]int64{0: 7})
	require.Nil(t, tr.Ready())
}

// TestDeferOutsideHandler returns a harmless ack.
func TestDeferOutsideHandler(t *testing.T) {
	bus.Defer(context.Background())()
}

// TestAckTrackerCommitAfterRedelivery: a commit of what was ready before the partition
// was delivered again does not forget the new, unfinished entries.
func TestAckTrackerCommitAfterRedelivery(t *testing.T) {
	tr := bus.NewAckTracker()
	ctx := context.Background()
	_, e := tr.Add(ctx, 0, 3)
	e.Handled()
	ready := tr.Ready()
	_, again := tr.Add(ctx, 0, 3) // delivered again while the commit was under way
	tr.Committed(ready)
	_, next := tr.Add(ctx, 0, 4)
	next.Handled()
	require.Nil(t, tr.Ready(), "offset 3 is delivered again and not done")
	again.Handled()
	require.Equal(t, map[int]int64{0: 4}, tr.Ready())
}
