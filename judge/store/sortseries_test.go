package store_test

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/binlake/binlake/judge/store"
)

// TestSortSeries: by node, then by the labels' canonical key's bytes (a node-level
// series, no labels, first; {"instance":"a","shard":"2"} before {"instance":"a"}, as ','
// sorts before '}'), whatever order they came in; CompareSeries agrees with the order.
func TestSortSeries(t *testing.T) {
	want := []store.SeriesKey{
		{Node: "w1"},
		{Node: "w1", Labels: map[string]string{"instance": "a", "shard": "2"}},
		{Node: "w1", Labels: map[string]string{"instance": "a"}},
		{Node: "w1", Labels: map[string]string{"instance": "b"}},
		{Node: "w10", Labels: map[string]string{"instance": "a"}},
		{Node: "w2"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		got := slices.Clone(want)
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		store.SortSeries(got)
		for i := range want {
			if got[i].Node != want[i].Node || !maps.Equal(got[i].Labels, want[i].Labels) {
				t.Fatalf("sorted: %v, want %v", got, want)
			}
		}
		if !slices.IsSortedFunc(got, store.CompareSeries) {
			t.Fatalf("CompareSeries does not hold the sorted order %v", got)
		}
	}
}
