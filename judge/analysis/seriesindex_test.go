package analysis

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeriesIndexCollision puts two series under one hash, as a collision would: lookups
// walk the chain and compare, and a rollover drops only the stale one.
func TestSeriesIndexCollision(t *testing.T) {
	seed := maphash.MakeSeed()
	x := newSeriesIndex()
	orders := map[string]string{"instance": "orders"}
	s := x.get(seed, "wave.tps", orders)
	s.add(1, 0.5)
	h := labelsHash(seed, "wave.tps", orders)
	other := newSeries("wave.tps", map[string]string{"instance": "billing"})
	other.next = x.labelled[h]
	x.labelled[h] = other // the chain: other → s
	x.size++

	require.Same(t, s, x.get(seed, "wave.tps", map[string]string{"instance": "orders"}))
	require.Equal(t, 2, x.size)

	x.roll() // other has no sample this hour: dropped; s is carried
	require.Equal(t, 1, x.size)
	require.Same(t, s, x.labelled[h])
	require.Nil(t, s.next)
	x.roll() // s had none in its carried hour either
	require.Zero(t, x.size)
	require.Empty(t, x.labelled)
}

func TestSeriesIndexKeys(t *testing.T) {
	seed := maphash.MakeSeed()
	x := newSeriesIndex()
	ab := x.get(seed, "m", map[string]string{"a": "1", "b": "2"})
	require.Same(t, ab, x.get(seed, "m", map[string]string{"b": "2", "a": "1"}), "a new map, the same labels")
	for _, other := range []*seriesState{
		x.get(seed, "m", map[string]string{"a": "2", "b": "1"}),
		x.get(seed, "m", map[string]string{"a": "1"}),
		x.get(seed, "m", map[string]string{"a": "1", "b": "2", "c": "3"}),
		x.get(seed, "n", map[string]string{"a": "1", "b": "2"}),
		x.get(seed, "m", nil),
	} {
		require.NotSame(t, ab, other)
	}
	require.Equal(t, 6, x.size)

	caller := map[string]string{"k": "v"}
	s := x.get(seed, "m", caller)
	caller["k"] = "changed"
	require.Equal(t, map[string]string{"k": "v"}, s.labels, "the series keeps its own copy")
}
