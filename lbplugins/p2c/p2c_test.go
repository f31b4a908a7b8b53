package p2c_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
	"github.com/binlake/binlake/lbplugins/p2c"
)

type N = map[string]float64

var cpuOnly = map[string]float64{"cpu": 1, "memory": 0, "load": 0, "network": 0, "tps": 0, "instances": 0}

func TestP2C(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  []*lbplugins.NodeView
		want   string
		scores map[string]float64
		err    bool
	}{
		{
			name: "two nodes: both drawn, the less loaded wins",
			nodes: []*lbplugins.NodeView{
				cluster.Node("busy", N{"cpu.util": 80}),
				cluster.Node("calm", N{"cpu.util": 20}),
			},
			want:   "calm",
			scores: map[string]float64{"busy": 20.8, "calm": 80.2},
		},
		{
			name:   "one node",
			nodes:  []*lbplugins.NodeView{cluster.Node("only", N{"cpu.util": 100})},
			want:   "only",
			scores: map[string]float64{"only": 1},
		},
		{
			name: "tie between the drawn goes to the first name",
			nodes: []*lbplugins.NodeView{
				cluster.Node("y", N{"cpu.util": 50}),
				cluster.Node("x", N{"cpu.util": 50}),
			},
			want:   "x",
			scores: map[string]float64{"x": 50.5, "y": 50.5},
		},
		{
			name: "stale third node is never drawn",
			nodes: []*lbplugins.NodeView{
				cluster.Node("busy", N{"cpu.util": 80}),
				cluster.Stale(cluster.Node("idle", N{"cpu.util": 0}), time.Hour),
				cluster.Node("calm", N{"cpu.util": 20}),
			},
			want:   "calm",
			scores: map[string]float64{"busy": 20.8, "calm": 80.2},
		},
		{
			name:  "all filtered",
			nodes: []*lbplugins.NodeView{cluster.Stale(cluster.Node("gone", nil), time.Hour)},
			err:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := p2c.New(lbplugins.Settings{Weights: cpuOnly, Seed: 7})
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
				require.Equal(t, 1.0, s.Parts.Map()["drawn"])
			}
			require.Equal(t, tc.scores, got)
		})
	}
}

// With many nodes, exactly two are drawn; the winner is the less loaded of the two,
// not the least loaded overall, and over many decisions every node gets drawn.
func TestP2CDrawsTwo(t *testing.T) {
	nodes := make([]*lbplugins.NodeView, 10)
	for i := range nodes {
		nodes[i] = cluster.Node(string(rune('a'+i)), N{"cpu.util": float64(10 * i)})
	}
	p, err := p2c.New(lbplugins.Settings{Weights: cpuOnly, Seed: 42})
	require.NoError(t, err)
	drawnEver := map[string]bool{}
	notBest := 0
	for range 200 {
		d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{}, nodes, cluster.Now)
		require.NoError(t, err)
		var drawn []lbplugins.Score
		for _, s := range d.Scores {
			if s.Parts.Map()["drawn"] == 1 {
				drawn = append(drawn, s)
				drawnEver[s.Node] = true
			} else {
				require.Equal(t, 0.0, s.Value)
			}
		}
		require.Len(t, drawn, 2)
		require.NotEqual(t, drawn[0].Node, drawn[1].Node)
		require.Equal(t, d.Node, drawn[0].Node)
		require.Greater(t, drawn[0].Value, drawn[1].Value)
		if d.Node != "a" {
			notBest++
		}
	}
	require.Len(t, drawnEver, 10)
	require.Positive(t, notBest, "p2c is not a global minimum search")
}

func TestP2CSeedRepeats(t *testing.T) {
	nodes := cluster.Random(50, 3)
	run := func() []string {
		p, err := p2c.New(lbplugins.Settings{Seed: 99})
		require.NoError(t, err)
		var out []string
		for range 20 {
			d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{}, nodes, cluster.Now)
			require.NoError(t, err)
			out = append(out, d.Node)
		}
		return out
	}
	require.Equal(t, run(), run())
}
