package judge

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
)

// A restarted judge rebuilds the current hour from the store and answers as the judge
// before it did: the same node, the same scores, the same statistics; and a batch the
// bus delivers again after the restart is not counted twice.
func TestRestartRebuildsCurrentHour(t *testing.T) {
	path := filepath.Join(t.TempDir(), "judge.db")
	start := time.Date(2026, 11, 29, 13, 52, 0, 0, time.UTC) // the previous hour's last minutes too
	c := &clock{t: start}
	var st *sqlite.Store
	open := func() *Judge {
		var err error
		st, err = sqlite.Open(sqlite.Options{Path: path, Now: c.Now})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		j, err := New(Options{Store: st, Now: c.Now, Algorithm: "leastload", Logger: quiet,
			Filters: lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90}}})
		require.NoError(t, err)
		return j
	}
	before := open()
	for step := range 90 { // every 10 s from 13:52 to 14:06:50
		for n := range 4 {
			cpu := float64(20+15*n) + float64((step*7+n*3)%11)
			require.NoError(t, before.Ingest(wave(fmt.Sprintf("wave-%d", n), c.Now(), cpu, float64(n+1)), sourceHTTP))
		}
		c.Add(10 * time.Second)
	}
	req := api.PlacementRequest{Instance: "orders", DryRun: true, Explain: api.ExplainAll}
	want, err := before.Place(req)
	require.NoError(t, err)
	wantNodes := before.inc.Nodes()
	require.NoError(t, before.Close()) // writes what is buffered
	require.NoError(t, st.Close())     // the process ends: its store file is free

	after := open()
	after.rebuildCurrentHour(context.Background())
	got, err := after.Place(req)
	require.NoError(t, err)
	require.Equal(t, want.Node, got.Node)
	require.Equal(t, want.Scores, got.Scores)
	gotNodes := after.inc.Nodes()
	require.Len(t, gotNodes, len(wantNodes))
	for i := range wantNodes {
		require.Equal(t, wantNodes[i].Node, gotNodes[i].Node)
		require.Equal(t, wantNodes[i].LastSeen, gotNodes[i].LastSeen)
		for k, s := range wantNodes[i].Series {
			g := gotNodes[i].Series[k]
			require.Equal(t, s.Name, g.Name)
			require.Equal(t, s.Count, g.Count, "%s %s", wantNodes[i].Node, s.Name)
			require.InDelta(t, s.Mean, g.Mean, 1e-9)
			require.InDelta(t, s.EWMA, g.EWMA, 1e-9)
			require.InDelta(t, s.Stddev, g.Stddev, 1e-9)
		}
	}

	// The bus delivers the last batch again: the analysis does not move.
	require.NoError(t, after.Ingest(wave("wave-0", c.Now().Add(-10*time.Second), 99, 1), sourceHTTP))
	n, _ := after.inc.Node("wave-0")
	require.Equal(t, wantNodes[0].Series[0].Count, n.Series[0].Count)
	require.NoError(t, after.Close())
}
