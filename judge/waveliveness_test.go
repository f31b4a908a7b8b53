package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
)

// A node whose last batch carried its wave's metrics has stopped as a whole: in the
// moment where the wave's time (put on the judge's clock by a whole-second offset) has
// left the staleness window and the node's delivery has not, the wave is not "silent
// while the host reports" (an outside trial read that of a node that had stopped); a
// host whose batches go on without the wave's metrics is.
func TestAStoppedNodeIsNotASilentWave(t *testing.T) {
	j, _ := newJudge(t, nil)
	last := t0
	l := analysis.Liveness{Node: "w", Interval: 10 * time.Second, Offset: 0, Wave: true, WaveTS: last,
		LastBatchTS: last, LastSeen: last.Add(900 * time.Millisecond)}
	// Just past the window for the wave's time, within it for the delivery.
	window := metric.StaleAfter(10*time.Second, j.o.Filters.StaleIntervals)
	now := last.Add(window + 500*time.Millisecond)
	s, ok := j.waveStatus(l, now)
	require.True(t, ok)
	require.True(t, s.Live, "%+v", s)
	require.Empty(t, s.Down)

	l.LastBatchTS, l.LastSeen = last.Add(20*time.Second), last.Add(20*time.Second) // the host goes on
	s, _ = j.waveStatus(l, last.Add(window+time.Second))
	require.False(t, s.Live)
	require.Equal(t, api.WaveDownSilent, s.Down)
}
