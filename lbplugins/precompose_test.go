package lbplugins_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

// TestPrecomposedIsComposite checks leastload's fast path against the node-by-node
// composite, bit for bit, in the rounds that take each branch of CompositeAll: the
// precomputed scope, a scope changed by excluding the busiest node, a few candidates
// with reservations (fixed up one by one, one of them raised above the busiest) and
// many (raised resource by resource).
func TestPrecomposedIsComposite(t *testing.T) {
	w := lbplugins.WeightsOf(lbplugins.DefaultWeights())
	for seed := uint64(1); seed <= 5; seed++ {
		snap, busiest := leastloadGolden(t, seed)
		few, many := lbplugins.NewReserved(snap), lbplugins.NewReserved(snap)
		for i := 0; i < 5; i++ {
			few.Add(i*7, 1)
		}
		few.Add(11, 500) // far above the busiest: the scope's largest levels move
		for i := 0; i < snap.Len(); i += 2 {
			many.Add(i, int32(1+i%3))
		}
		for name, req := range map[string]lbplugins.Request{
			"precomputed scope": {},
			"busiest excluded":  {Exclude: []string{busiest}},
			"few pending":       {Reserved: few},
			"many pending":      {Reserved: many},
		} {
			t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) {
				all, each := lbplugins.Composites(snap, req, w)
				require.NotEmpty(t, all)
				require.Equal(t, each, all)
			})
		}
	}
}

// leastloadGolden is leastload's snapshot of the 300-node golden cluster of seed, with the
// production thresholds, and the cluster's busiest node.
func leastloadGolden(t *testing.T, seed uint64) (*lbplugins.Snapshot, string) {
	t.Helper()
	filters := lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90, "mem.used_pct": 95}}
	nodes := goldenCluster(300, seed)
	p, err := lbplugins.New("leastload", lbplugins.Settings{})
	require.NoError(t, err)
	return lbplugins.NewSnapshot(nodes, filters, cluster.Now, p), busiestTPS(nodes)
}

// busiestTPS is the node with the highest wave.tps, which sets the relative scale.
func busiestTPS(nodes []*lbplugins.NodeView) string {
	best, top := "", -1.0
	for _, n := range nodes {
		if v, ok := n.Load(lbplugins.WaveTPS); ok && v > top {
			best, top = n.Node, v
		}
	}
	return best
}

// TestCompositeCacheFollowsReservations: under a burst of placements (reservations on
// most nodes, one more or one fewer between rounds, now and then the busiest node
// excluded or raised far above the rest so that the scope moves), the composites a Round
// keeps from round to round stay bit for bit what Composite computes node by node.
func TestCompositeCacheFollowsReservations(t *testing.T) {
	w := lbplugins.WeightsOf(lbplugins.DefaultWeights())
	for seed := uint64(1); seed <= 3; seed++ {
		snap, busiest := leastloadGolden(t, seed)
		rv := lbplugins.NewReserved(snap)
		for i := 0; i < snap.Len(); i++ {
			rv.Add(i, int32(1+i%4))
		}
		reqOf := func(it int) lbplugins.Request {
			node := (it * 37) % snap.Len()
			switch {
			case it%17 == 0:
				rv.Add(node, 300) // far above the busiest: the scope moves
			case it%17 == 1:
				rv.Add((it-1)*37%snap.Len(), -300)
			case it%3 == 0:
				rv.Add(node, -1)
			default:
				rv.Add(node, 1)
			}
			req := lbplugins.Request{Reserved: rv}
			if it%11 == 0 {
				req.Exclude = []string{busiest}
			}
			return req
		}
		all, each := lbplugins.CompositeStorm(snap, w, 120, reqOf)
		for it := range all {
			require.NotEmpty(t, all[it])
			require.Equal(t, each[it], all[it], "seed %d, round %d", seed, it)
		}
	}
}
