package balanced_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/balanced"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

type N = map[string]float64

func TestBalanced(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nodes    []*lbplugins.NodeView
		want     string
		scores   map[string]float64
		parts    map[string]map[string]float64
		filtered int
		err      bool
	}{
		{
			name: "uneven resources: the even node wins although it is busier",
			nodes: []*lbplugins.NodeView{
				cluster.Node("skewed", N{"cpu.util": 20, "mem.used_pct": 60}),
				cluster.Node("even", N{"cpu.util": 50, "mem.used_pct": 50}),
			},
			want:   "even",
			scores: map[string]float64{"skewed": 80, "even": 100},
			parts: map[string]map[string]float64{
				"skewed": {"cpu_after": 20, "memory_after": 60, "stddev": 20},
				"even":   {"cpu_after": 50, "memory_after": 50, "stddev": 0},
			},
		},
		{
			// Demand per instance = (0.6+0.2 cpu, 0.2+0.4 memory) / 4 instances = (0.2, 0.15).
			// After placement: a (0.8, 0.35) σ 0.225; b (0.4, 0.55) σ 0.075.
			name: "the instance's estimated demand is added before comparing",
			nodes: []*lbplugins.NodeView{
				cluster.Node("a", N{"cpu.util": 60, "mem.used_pct": 20, "wave.instances": 2}),
				cluster.Node("b", N{"cpu.util": 20, "mem.used_pct": 40, "wave.instances": 2}),
			},
			want:   "b",
			scores: map[string]float64{"a": 77.5, "b": 92.5},
			parts: map[string]map[string]float64{
				"b": {"cpu_after": 40, "memory_after": 55, "stddev": 7.5},
			},
		},
		{
			name: "tie goes to the first name",
			nodes: []*lbplugins.NodeView{
				cluster.Node("wave-2", N{"cpu.util": 30, "mem.used_pct": 50}),
				cluster.Node("wave-1", N{"cpu.util": 50, "mem.used_pct": 30}),
			},
			want:   "wave-1",
			scores: map[string]float64{"wave-1": 90, "wave-2": 90},
		},
		{
			name:   "one node",
			nodes:  []*lbplugins.NodeView{cluster.Node("only", N{"cpu.util": 10, "mem.used_pct": 70})},
			want:   "only",
			scores: map[string]float64{"only": 70},
		},
		{
			name: "stale node filtered",
			nodes: []*lbplugins.NodeView{
				cluster.Stale(cluster.Node("even", N{"cpu.util": 50, "mem.used_pct": 50}), time.Minute),
				cluster.Node("skewed", N{"cpu.util": 10, "mem.used_pct": 50}),
			},
			want: "skewed", scores: map[string]float64{"skewed": 80}, filtered: 1,
		},
		{
			name:     "all filtered",
			nodes:    []*lbplugins.NodeView{cluster.Stale(cluster.Node("gone", nil), time.Hour)},
			filtered: 1, err: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := balanced.New(lbplugins.Settings{})
			require.NoError(t, err)
			d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{}, tc.nodes, cluster.Now)
			require.Len(t, d.Filtered, tc.filtered)
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
		})
	}
}
