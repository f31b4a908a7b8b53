package judge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// TestJudgeBusBatchPartlyRefusedIntegration: a bus batch some of whose points the
// engine refuses for good (a real mapping conflict: "wave" after "wave.tps" on the same
// day) is committed once its other points are stored, and the refused ones are counted
// in /metrics and /healthz, not silently dropped with the rest of the batch.
func TestJudgeBusBatchPartlyRefusedIntegration(t *testing.T) {
	cfg := estest.Config(t)
	prefix := fmt.Sprintf("binlake-test-%08x-judge-", rand.Uint32())
	estest.CleanupPrefix(t, prefix)
	st, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, Logger: quiet})
	require.NoError(t, err)
	j, _ := newJudge(t, func(o *Options) { o.Store = st })

	acks := bus.NewAckTracker()
	deliver := func(offset int64, b metric.Batch) {
		ctx, e := acks.Add(context.Background(), 0, offset)
		require.NoError(t, j.ingestBus(ctx, bus.Message{Value: encode(t, b), Offset: offset}))
		e.Handled()
	}
	orders := map[string]string{"instance": "orders"}
	deliver(1, metric.Batch{Node: "wave-1", TS: t0, IntervalS: 10, Points: []metric.Point{{Name: "wave.tps", Value: 1}}})
	// Stored first, so that it decides the mapping: m.wave is an object.
	require.Eventually(t, func() bool { return acks.Ready()[0] == 1 }, 15*time.Second, 10*time.Millisecond, "the first batch acked")
	deliver(2, metric.Batch{Node: "wave-1", TS: t0.Add(10 * time.Second), IntervalS: 10, Points: []metric.Point{
		{Name: "wave", Value: 2},     // m.wave is an object: refused, but not
		{Name: "cpu.util", Value: 3}, // its document's other point
		{Name: "wave.lag_s", Value: 4, Labels: orders},
		{Name: "wave.tps", Value: 5, Labels: orders},
	}})
	require.Eventually(t, func() bool { return acks.Ready()[0] == 2 }, 15*time.Second, 10*time.Millisecond, "both batches acked")
	c := j.StoreCounters()
	require.Equal(t, store.BufferCounters{Written: 4, Dropped: 1, Refused: 1, Capacity: c.Capacity}, c)
	require.Positive(t, c.Capacity)

	r := do(t, j.Handler(), "GET", "/metrics", "", nil)
	require.Contains(t, string(r.body), "binlake_judge_store_points_refused_total 1\n")
	require.Contains(t, string(r.body), "binlake_judge_store_points_written_total 4\n")
	r = do(t, j.Handler(), "GET", "/healthz", "", nil)
	require.Contains(t, string(r.body), `"dropped":1,"written":4,"write_errors":0,"refused":1`)
	r = do(t, j.Handler(), "GET", "/", "", nil)
	require.Contains(t, string(r.body), `4 written · <span class="err">1 dropped (1 refused by the store)</span>`)
	require.NoError(t, st.Refresh(context.Background()))
	s, err := st.Stats(context.Background(), store.Query{Node: "wave-1", Name: "wave.tps", Labels: orders, From: t0, To: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(1), s.Count, "the stored part of the refused batch")
	s, err = st.Stats(context.Background(), store.Query{Node: "wave-1", Name: "cpu.util", From: t0, To: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(1), s.Count, "the point that shares a document with the refused one")
}
