package random_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
	"github.com/binlake/binlake/lbplugins/random"
)

func TestRandom(t *testing.T) {
	p, err := random.New(lbplugins.Settings{Seed: 1})
	require.NoError(t, err)

	t.Run("one node", func(t *testing.T) {
		d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{}, []*lbplugins.NodeView{cluster.Node("only", nil)}, cluster.Now)
		require.NoError(t, err)
		require.Equal(t, "only", d.Node)
		require.Len(t, d.Scores, 1)
		require.Equal(t, d.Scores[0].Value, d.Scores[0].Parts.Map()["random"])
	})

	t.Run("every live node is chosen, stale and excluded never", func(t *testing.T) {
		nodes := []*lbplugins.NodeView{
			cluster.Node("a", nil), cluster.Node("b", nil), cluster.Node("c", nil),
			cluster.Stale(cluster.Node("stale", nil), time.Hour), cluster.Node("excl", nil),
		}
		counts := map[string]int{}
		for range 600 {
			d, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{Exclude: []string{"excl"}}, nodes, cluster.Now)
			require.NoError(t, err)
			require.Len(t, d.Scores, 3)
			require.Len(t, d.Filtered, 2)
			require.Equal(t, d.Scores[0].Node, d.Node)
			counts[d.Node]++
		}
		require.Len(t, counts, 3)
		for n, c := range counts {
			// Uniform: 200 expected each; the seed is fixed, so this cannot flake.
			require.Greater(t, c, 120, "node %s chosen %d times of 600", n, c)
		}
	})

	t.Run("all filtered", func(t *testing.T) {
		_, err := lbplugins.Decide(p, lbplugins.Filters{}, lbplugins.Request{Exclude: []string{"a"}}, []*lbplugins.NodeView{cluster.Node("a", nil)}, cluster.Now)
		require.ErrorIs(t, err, lbplugins.ErrNoCandidates)
		require.EqualError(t, err, "no live node can take the instance: all 1 nodes filtered (a: excluded)")
	})
}
