package alarm

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/metric"
)

// The rules' evaluation lag reads binlake_alarm_newest_batch_timestamp_seconds: it follows
// the newest batch evaluated, and a redelivered older batch leaves it alone.
func TestNewestBatchGauge(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c, Logger: quiet})
	require.NoError(t, err)
	t1 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, ts := range []time.Time{t1, t1.Add(-time.Minute)} {
		b, err := metric.Encode(metric.Batch{Node: "n1", TS: ts, IntervalS: 10, Points: []metric.Point{{Name: "cpu.util", Value: 1}}})
		require.NoError(t, err)
		require.NoError(t, a.ObserveRaw(b))
	}
	require.Equal(t, float64(t1.Unix()), testutil.ToFloat64(a.m.newestBatch))
}
