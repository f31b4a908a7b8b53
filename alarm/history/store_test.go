package history

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// Store reads every node's points from the lookback before the first message's time, or
// now when earlier, widened by the clock skew on both sides: a node whose clock runs 6
// minutes behind has its history read, and one running ahead its last points (an
// outside trial: both were cut off by the first batch's own time, and the node paged on
// its first point alone). What lies beyond the skew is not read.
func TestStoreReadsAcrossClockSkew(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	at := func(node string, min float64) store.Point {
		return store.Point{Node: node, Name: "wave.lag_s", TS: now.Add(time.Duration(min * float64(time.Minute))), Value: min}
	}
	require.NoError(t, st.Write(context.Background(), []store.Point{
		at("behind", -11), at("behind", -7), // 6 minutes behind: its last 5 minutes
		at("ahead", 0.5), at("ahead", 9.5), // ahead of the clock, within the judge's 10 minutes
		at("far", -16), at("far", 10.5), // beyond the skew on either side
	}))
	h := Store{Store: st, Path: "judge.db", FirstInterval: 10 * time.Second, Now: func() time.Time { return now }}
	var got []string
	_, err = h.ReadBack(context.Background(), bus.Message{Time: now.Add(-time.Second)}, 5*time.Minute, func(b metric.Batch) error {
		got = append(got, b.Node+" "+b.TS.Sub(now).String())
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"behind -11m0s", "behind -7m0s", "ahead 30s", "ahead 9m30s"}, got)
}
