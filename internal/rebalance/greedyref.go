package rebalance

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// A fleet whose waves price work differently has no fixed level: its total load depends
// on where each instance runs, and the current assignment's (instances on slow waves)
// can stand above the peak a better one reaches. The lines are then drawn from the
// lower of the two: the level, and the peak of a greedy assignment from scratch (every
// instance, the costliest first, on the wave where the resulting utilisation is
// lowest). On seed 2 of the simulated 24-wave fleets the level stood 2.4 % above that
// peak, the lines above 1.10× it, and the plans ended with a wave over it on the true
// costs.

// refs are the greedy assignment's peaks: over the day, and per slot of the window;
// drawn by a plan's first lines, and shared by its trials (the assignment they start
// from makes no difference to them).
type refs struct {
	drawn bool
	day   float64
	now   []float64
}

// draw draws r for the live waves and the window win.
func (r *refs) draw(st *state, live []*waveState, win []int) {
	r.day, r.now, r.drawn = st.greedyPeak(live, nil), make([]float64, len(win)), true
	for i, k := range win {
		r.now[i] = st.greedyPeak(live, []int{k})
	}
}

// greedyExact is how many waves the greedy assignment weighs every instance on; on more
// it weighs each on the greedyCandidates least loaded (a thousand waves would make
// every plan's reference cost seconds).
const (
	greedyExact      = 64
	greedyCandidates = 8
)

// greedyPeak is the peak utilisation the greedy assignment reaches, measured over slots
// (nil: every slot).
func (st *state) greedyPeak(live []*waveState, slots []int) float64 {
	if len(live) == 0 {
		return 0
	}
	measure := func(l []float64) float64 {
		m := math.Inf(-1)
		if slots == nil {
			for _, x := range l {
				m = max(m, x)
			}
			return m
		}
		for _, k := range slots {
			m = max(m, l[k])
		}
		return m
	}
	type item struct {
		in   *Instance
		size float64
	}
	var items []item
	for _, w := range live {
		for _, in := range w.insts {
			items = append(items, item{in.Instance, measure(in.cost)})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(b.size, a.size) })
	g := &greedyWaves{load: make([][]float64, len(live)), util: make([]float64, len(live))}
	for i, w := range live {
		g.load[i] = make([]float64, st.slots)
		for k := range g.load[i] {
			g.load[i][k] = w.baseAt(k)
		}
		g.util[i] = measure(g.load[i]) / w.cap
		g.order = append(g.order, i)
	}
	heap.Init(g)
	c, sum := make([]float64, st.slots), make([]float64, st.slots)
	var tried []int
	for _, it := range items {
		n := len(live)
		if n > greedyExact {
			n = greedyCandidates
		}
		tried = tried[:0]
		best, bestU := -1, math.Inf(1)
		for range n {
			i := heap.Pop(g).(int)
			tried = append(tried, i)
			st.costInto(c, it.in, live[i])
			for k := range sum {
				sum[k] = g.load[i][k] + c[k]
			}
			if u := measure(sum) / live[i].cap; u < bestU {
				best, bestU = i, u
			}
		}
		st.costInto(c, it.in, live[best])
		addTo(g.load[best], c, 1)
		g.util[best] = bestU
		for _, i := range tried {
			heap.Push(g, i)
		}
	}
	return slices.Max(g.util)
}

// greedyWaves is a heap of the waves' indices, the least utilised on top.
type greedyWaves struct {
	load  [][]float64
	util  []float64
	order []int
}

func (g *greedyWaves) Len() int { return len(g.order) }
func (g *greedyWaves) Less(a, b int) bool {
	return g.util[g.order[a]] < g.util[g.order[b]] || g.util[g.order[a]] == g.util[g.order[b]] && g.order[a] < g.order[b]
}
func (g *greedyWaves) Swap(a, b int) { g.order[a], g.order[b] = g.order[b], g.order[a] }
func (g *greedyWaves) Push(x any)    { g.order = append(g.order, x.(int)) }
func (g *greedyWaves) Pop() any {
	x := g.order[len(g.order)-1]
	g.order = g.order[:len(g.order)-1]
	return x
}
