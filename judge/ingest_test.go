package judge

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// wide is a batch of n labelled points.
func wide(node string, n int) metric.Batch {
	b := metric.Batch{Node: node, TS: t0, IntervalS: 10}
	for i := range n {
		b.Points = append(b.Points, metric.Point{Name: "wave.tps", Value: float64(i), Labels: map[string]string{"instance": fmt.Sprintf("i%02d", i)}})
	}
	return b
}

// By default a batch posted to a full buffer is refused with 503 and counted; nothing
// is dropped, and the batch is analysed all the same.
func TestStoreBufferFullRejectsHTTP(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{Capacity: 10, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, wide("wave-1", 18))))
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	c := j.StoreCounters()
	require.Equal(t, int64(18), c.Rejected)
	require.Zero(t, c.Dropped)
	require.Zero(t, c.Buffered)
	r = do(t, j.Handler(), "GET", "/metrics", "", nil)
	require.Contains(t, string(r.body), "binlake_judge_store_points_rejected_total 18\n")
	require.Equal(t, []string{"wave-1"}, j.Incremental().NodeIDs())
}

// A batch from the bus is acknowledged only once the store has its points; while the
// buffer is full the bus handler waits instead of dropping anything.
func TestBusBatchAckedOnceStored(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{Capacity: 10, Writers: 1, MaxBatch: 5, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	acks := bus.NewAckTracker()
	deliver := func(offset int64, b metric.Batch) error {
		ctx, e := acks.Add(context.Background(), 0, offset)
		err := j.ingestBus(ctx, bus.Message{Value: encode(t, b), Offset: offset})
		if err == nil {
			e.Handled()
		}
		return err
	}
	require.NoError(t, deliver(1, wide("wave-1", 5)))
	require.Eventually(t, func() bool { return j.StoreCounters().Errors > 0 }, 15*time.Second, 10*time.Millisecond, "the first batch in flight")
	require.Nil(t, acks.Ready(), "acked while the store is down")

	// 18 points into an empty ring of 10 (the first 5 are in flight): the handler waits.
	second := make(chan error, 1)
	go func() { second <- deliver(2, wide("wave-2", 18)) }()
	require.Eventually(t, func() bool { return j.StoreCounters().Buffered == 15 }, 15*time.Second, 10*time.Millisecond, "the buffer full")
	select {
	case err := <-second:
		t.Fatalf("the bus handler returned (%v) with points that did not fit", err)
	default:
	}
	require.Zero(t, j.StoreCounters().Dropped)

	fs.setDown(false)
	require.NoError(t, <-second)
	require.Eventually(t, func() bool {
		r := acks.Ready()
		return r[0] == 2
	}, 15*time.Second, 10*time.Millisecond, "both batches acked")
	c := j.StoreCounters()
	require.Equal(t, int64(23), c.Written)
	require.Zero(t, c.Dropped)

	// An undecodable message is acked at once: it cannot stall the group.
	ctx, e := acks.Add(context.Background(), 0, 3)
	require.NoError(t, j.ingestBus(ctx, bus.Message{Value: []byte("{garbage")}))
	e.Handled()
	require.Equal(t, map[int]int64{0: 3}, acks.Ready())
}
