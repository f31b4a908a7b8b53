package history

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// Stored points come back as one batch per node and time, in time then node order, each
// with its node's measured interval: the first interval given (the agents' default) before its second batch, then
// the median of its last five gaps, which one outage does not move. A fixed interval (alarm test's -interval) replaces it.
func TestBatcherRebuildsBatches(t *testing.T) {
	// wave-1 every 2 s, with a 60 s outage after 8 s; wave-2 every 5 s.
	var pts []store.Point
	for _, s := range []int{0, 2, 4, 6, 8, 68, 70} {
		pts = append(pts, store.Point{Node: "wave-1", Name: "cpu.util", TS: hat(s), Value: float64(s)},
			store.Point{Node: "wave-1", Name: "wave.lag_s", Labels: map[string]string{"instance": "orders"}, TS: hat(s), Value: 1})
	}
	for _, s := range []int{0, 5, 10} {
		pts = append(pts, store.Point{Node: "wave-2", Name: "mem.used_pct", TS: hat(s), Value: 50})
	}
	// store.Scan's order: by time, nodes in any order within one.
	sortByTime := func(p []store.Point) []store.Point {
		out := slices.Clone(p)
		slices.SortStableFunc(out, func(a, b store.Point) int {
			if c := a.TS.Compare(b.TS); c != 0 {
				return c
			}
			return -strings.Compare(a.Node, b.Node) // nodes out of order within a time
		})
		return out
	}
	type got struct {
		node     string
		s        int
		interval float64
		points   int
	}
	replay := func(fixed time.Duration) []got {
		var out []got
		b := NewBatcher(fixed, 10*time.Second, func(batch metric.Batch) error {
			require.NoError(t, batch.Validate())
			out = append(out, got{batch.Node, int(batch.TS.Sub(histBase).Seconds()), batch.IntervalS, len(batch.Points)})
			return nil
		})
		sorted := sortByTime(pts)
		require.NoError(t, b.Add(sorted[:7])) // chunks end anywhere, even inside a time
		require.NoError(t, b.Add(sorted[7:]))
		require.NoError(t, b.Flush())
		require.Equal(t, []string{"cpu.util", "mem.used_pct", "wave.lag_s"}, b.Seen())
		return out
	}
	def := 10.0 // the first interval given
	require.Equal(t, []got{
		{"wave-1", 0, def, 2}, {"wave-2", 0, def, 1},
		{"wave-1", 2, 2, 2},
		{"wave-1", 4, 2, 2},
		{"wave-2", 5, 5, 1},
		{"wave-1", 6, 2, 2},
		{"wave-1", 8, 2, 2}, {"wave-2", 10, 5, 1},
		{"wave-1", 68, 2, 2}, // gaps 2 2 2 2 60: the median is 2
		{"wave-1", 70, 2, 2},
	}, replay(0))
	for _, g := range replay(3 * time.Second) {
		require.Equal(t, 3.0, g.interval, "fixed 3s: %+v", g)
	}
}

var histBase = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

func hat(s int) time.Time { return histBase.Add(time.Duration(s) * time.Second) }
