package predictive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
	"github.com/binlake/binlake/lbplugins/predictive"
)

type N = map[string]float64

// withProfile gives a node a cpu and memory profile whose hour 14 (the hour after
// cluster.Now) has the given avg and p95, and a flat 10 % elsewhere.
func withProfile(n *lbplugins.NodeView, avg, p95 float64) *lbplugins.NodeView {
	var h lbplugins.History
	for i := range h.Profile {
		h.Profile[i] = lbplugins.Window{Count: 100, Avg: 10, Max: 10, P95: 10}
	}
	h.Profile[14] = lbplugins.Window{Count: 100, Avg: avg, Max: p95, P95: p95}
	n.History[lbplugins.CPUUtil] = h
	n.History[lbplugins.MemUsedPct] = h
	return n
}

func TestPredictive(t *testing.T) {
	spread := func(n *lbplugins.NodeView, metric string, sd float64) *lbplugins.NodeView {
		c := n.Current[metric]
		c.Stddev = sd
		n.Current[metric] = c
		return n
	}
	for _, tc := range []struct {
		name   string
		nodes  []*lbplugins.NodeView
		want   string
		scores map[string]float64
		parts  map[string]map[string]float64
		err    bool
		noData []string // nodes filtered for having no data
	}{
		{
			// quiet-now: current 20, profile 80 (σ 0) → mean 50. steady: 40 and 40 → 40.
			name: "a node quiet now but busy next hour loses",
			nodes: []*lbplugins.NodeView{
				withProfile(cluster.Node("quiet-now", N{"cpu.util": 20, "mem.used_pct": 20}), 80, 80),
				withProfile(cluster.Node("steady", N{"cpu.util": 40, "mem.used_pct": 40}), 40, 40),
			},
			want:   "steady",
			scores: map[string]float64{"quiet-now": 50, "steady": 60},
			parts: map[string]map[string]float64{"steady": {
				"cpu_mean": 40, "cpu_stddev": 0, "cpu_risk": 40, "memory_mean": 40, "memory_stddev": 0, "memory_risk": 40,
			}},
		},
		{
			// Same mean 40; "jumpy" has σ 20 in the current hour, blended half and half with the
			// profile's σ 0 → σ 10, risk 40 + 0.5·10 = 45; "flat" is busier (44) but certain.
			name: "variance is penalised",
			nodes: []*lbplugins.NodeView{
				spread(withProfile(cluster.Node("jumpy", N{"cpu.util": 40, "mem.used_pct": 10}), 40, 40), "cpu.util", 20),
				withProfile(cluster.Node("flat", N{"cpu.util": 44, "mem.used_pct": 10}), 44, 44),
			},
			want:   "flat",
			scores: map[string]float64{"jumpy": 55, "flat": 56},
		},
		{
			// Profile p95 − avg = 1.6449·σ → σ = 10 at hour 14; no current data: profile alone,
			// risk 30 + 0.5·10 = 35.
			name: "profile alone, stddev from its p95",
			nodes: []*lbplugins.NodeView{
				withProfile(cluster.Node("hist-only", nil), 30, 30+1.6449*10),
				withProfile(cluster.Node("hot", nil), 60, 60),
			},
			want:   "hist-only",
			scores: map[string]float64{"hist-only": 65, "hot": 40},
		},
		{
			name: "no data at all is filtered, not scored as full",
			nodes: []*lbplugins.NodeView{
				cluster.Node("blind", nil),
				cluster.Node("seen", N{"cpu.util": 85, "mem.used_pct": 85}),
			},
			want:   "seen",
			scores: map[string]float64{"seen": 15},
			noData: []string{"blind"},
		},
		{
			name: "memory without data is risk 100",
			nodes: []*lbplugins.NodeView{
				cluster.Node("half", N{"cpu.util": 10}),
				cluster.Node("seen", N{"cpu.util": 85, "mem.used_pct": 85}),
			},
			want:   "seen",
			scores: map[string]float64{"half": 0, "seen": 15},
		},
		{
			name: "tie goes to the first name",
			nodes: []*lbplugins.NodeView{
				cluster.Node("n2", N{"cpu.util": 30, "mem.used_pct": 10}),
				cluster.Node("n1", N{"cpu.util": 10, "mem.used_pct": 30}),
			},
			want:   "n1",
			scores: map[string]float64{"n1": 70, "n2": 70},
		},
		{
			name: "stale and all filtered",
			nodes: []*lbplugins.NodeView{
				cluster.Stale(cluster.Node("gone", N{"cpu.util": 1}), time.Hour),
			},
			err: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := 0.5
			p, err := predictive.New(lbplugins.Settings{K: &k})
			require.NoError(t, err)
			d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{}, tc.nodes, cluster.Now)
			if tc.err {
				require.ErrorIs(t, err, lbplugins.ErrNoCandidates)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, d.Node)
			got := map[string]float64{}
			for _, s := range d.Scores {
				got[s.Node] = s.Value
				if want, ok := tc.parts[s.Node]; ok {
					require.Equal(t, want, s.Parts.Map())
				}
			}
			require.Equal(t, tc.scores, got)
			var noData []string
			for _, f := range d.Filtered {
				require.Equal(t, "no data: the node reports none of the levels predictive reads", f.Reason)
				noData = append(noData, f.Node)
			}
			require.Equal(t, tc.noData, noData)
			require.Equal(t, len(tc.noData), d.FilteredBy.NoData)
		})
	}
}

// TestForecastCarried: at xx:00 the current hour has no sample yet; the forecast uses the
// level and spread carried from the previous hour.
func TestForecastCarried(t *testing.T) {
	p, err := predictive.New(lbplugins.Settings{})
	require.NoError(t, err)
	n := cluster.Node("wave-1", nil)
	n.Current[lbplugins.CPUUtil] = lbplugins.Current{EWMA: 30, Last: 31, Stddev: 4, Carried: true}
	d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{}, []*lbplugins.NodeView{n}, cluster.Now)
	require.NoError(t, err)
	parts := d.Scores[0].Parts.Map()
	require.Equal(t, 30.0, parts["cpu_mean"])
	require.Equal(t, 4.0, parts["cpu_stddev"])
}
