package leastload_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
	"github.com/binlake/binlake/lbplugins/leastload"
)

type N = map[string]float64

func TestLeastLoad(t *testing.T) {
	cpuMem := map[string]float64{"cpu": 1, "memory": 1, "load": 0, "network": 0, "tps": 0, "instances": 0}
	for _, tc := range []struct {
		name     string
		weights  map[string]float64
		nodes    []*lbplugins.NodeView
		want     string
		scores   map[string]float64
		parts    map[string]map[string]float64 // of some nodes
		filtered int
		err      bool
	}{
		{
			name:    "uneven resources: lowest weighted load wins",
			weights: cpuMem,
			nodes: []*lbplugins.NodeView{
				cluster.Node("wave-1", N{"cpu.util": 80, "mem.used_pct": 20}),
				cluster.Node("wave-2", N{"cpu.util": 30, "mem.used_pct": 40}),
				cluster.Node("wave-3", N{"cpu.util": 10, "mem.used_pct": 85}),
			},
			want:   "wave-2",
			scores: map[string]float64{"wave-1": 50, "wave-2": 65, "wave-3": 52.5},
			parts:  map[string]map[string]float64{"wave-2": {"cpu": 35, "memory": 30}},
		},
		{
			name:    "weights change the answer",
			weights: map[string]float64{"cpu": 3, "memory": 1, "load": 0, "network": 0, "tps": 0, "instances": 0},
			nodes: []*lbplugins.NodeView{
				cluster.Node("wave-2", N{"cpu.util": 30, "mem.used_pct": 40}),
				cluster.Node("wave-3", N{"cpu.util": 10, "mem.used_pct": 85}),
			},
			want:   "wave-3",
			scores: map[string]float64{"wave-2": 67.5, "wave-3": 71.25},
		},
		{
			name:    "tie goes to the first name",
			weights: cpuMem,
			nodes: []*lbplugins.NodeView{
				cluster.Node("wave-b", N{"cpu.util": 40, "mem.used_pct": 40}),
				cluster.Node("wave-a", N{"cpu.util": 40, "mem.used_pct": 40}),
			},
			want:   "wave-a",
			scores: map[string]float64{"wave-a": 60, "wave-b": 60},
		},
		{
			name:    "relative parts: tps and instances against the busiest candidate",
			weights: map[string]float64{"cpu": 0, "memory": 0, "load": 0, "network": 0, "tps": 1, "instances": 1},
			nodes: []*lbplugins.NodeView{
				cluster.Node("wave-1", N{"wave.tps": 4000, "wave.instances": 2}),
				cluster.Node("wave-2", N{"wave.tps": 1000, "wave.instances": 4}),
			},
			want:   "wave-2",
			scores: map[string]float64{"wave-1": 25, "wave-2": 37.5},
			parts:  map[string]map[string]float64{"wave-1": {"tps": 0, "instances": 25}, "wave-2": {"tps": 37.5, "instances": 0}},
		},
		{
			name:    "load per core when cores are reported",
			weights: map[string]float64{"cpu": 0, "memory": 0, "load": 1, "network": 0, "tps": 0, "instances": 0},
			nodes: []*lbplugins.NodeView{
				cluster.Node("big", N{"load.1": 6, "cpu.cores": 16}),
				cluster.Node("small", N{"load.1": 3, "cpu.cores": 4}),
			},
			want:   "big",
			scores: map[string]float64{"big": 62.5, "small": 25},
		},
		{
			name:    "a node missing data counts as full on it",
			weights: cpuMem,
			nodes: []*lbplugins.NodeView{
				cluster.Node("blind", N{"cpu.util": 5}),
				cluster.Node("seen", N{"cpu.util": 50, "mem.used_pct": 50}),
			},
			want:   "seen",
			scores: map[string]float64{"blind": 47.5, "seen": 50},
			parts:  map[string]map[string]float64{"blind": {"cpu": 47.5, "memory": 0}},
		},
		{
			name:    "one node",
			weights: cpuMem,
			nodes:   []*lbplugins.NodeView{cluster.Node("only", N{"cpu.util": 89, "mem.used_pct": 89})},
			want:    "only",
			scores:  map[string]float64{"only": 11},
		},
		{
			name:    "stale node is never chosen even when idle",
			weights: cpuMem,
			nodes: []*lbplugins.NodeView{
				cluster.Stale(cluster.Node("idle", N{"cpu.util": 1, "mem.used_pct": 1}), 2*time.Minute),
				cluster.Node("busy", N{"cpu.util": 70, "mem.used_pct": 70}),
			},
			want: "busy", scores: map[string]float64{"busy": 30}, filtered: 1,
		},
		{
			name:    "all filtered",
			weights: cpuMem,
			nodes: []*lbplugins.NodeView{
				cluster.Node("hot", N{"cpu.util": 95}),
				cluster.Stale(cluster.Node("gone", nil), time.Hour),
			},
			filtered: 2, err: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := leastload.New(lbplugins.Settings{Weights: tc.weights})
			require.NoError(t, err)
			d, err := lbplugins.Decide(p, lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90}},
				lbplugins.Request{Instance: "orders"}, tc.nodes, cluster.Now)
			require.Len(t, d.Filtered, tc.filtered)
			if tc.err {
				require.ErrorIs(t, err, lbplugins.ErrNoCandidates)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, d.Node)
			require.Equal(t, "leastload", d.Algorithm)
			got := map[string]float64{}
			for _, s := range d.Scores {
				got[s.Node] = s.Value
				sum := 0.0
				for _, v := range s.Parts.Map() {
					sum += v
				}
				require.InDelta(t, s.Value, sum, 0.02, "parts of %s add up to its score", s.Node)
				if want, ok := tc.parts[s.Node]; ok {
					require.Equal(t, want, s.Parts.Map())
				}
			}
			require.Equal(t, tc.scores, got)
		})
	}
}
