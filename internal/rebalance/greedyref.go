package rebalance

import (
	"cmp"
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
	r.day, r.now, r.drawn = st.greedyPeak(live, -1), make([]float64, len(win)), true
	for i, k := range win {
		r.now[i] = st.greedyPeak(live, k)
	}
}

// On up to exactWaves waves the greedy assignment weighs every instance on every wave,
// and a plan tries both searches (trial.go); on more, the greedy assignment weighs each
// instance on the greedyCandidates least loaded (every wave of a thousand would make
// each plan's reference cost seconds; 8 of them, 15–25 ms), and the descent alone plans.
const (
	exactWaves       = 64
	greedyCandidates = 8
)

// greedyPeak is the peak utilisation the greedy assignment reaches, in slot (-1: over
// every slot, the day).
func (st *state) greedyPeak(live []*waveState, slot int) float64 {
	if len(live) == 0 {
		return 0
	}
	width := st.slots // the slots weighed: every one, or slot alone
	if slot >= 0 {
		width = 1
	}
	costInto := func(c []float64, in *Instance, w *waveState) {
		if slot < 0 {
			st.costInto(c, in, w)
			return
		}
		c[0] = costAt(in, w, slot)
	}
	// peakWith is the highest of l with in's cost on w added, in one pass: the greedy
	// assignment weighs every instance on several waves.
	peakWith := func(l []float64, in *Instance, w *waveState) float64 {
		if slot >= 0 {
			return l[0] + costAt(in, w, slot)
		}
		m := math.Inf(-1)
		if pricedOn(in, &w.Wave) {
			for k, x := range l {
				m = max(m, x+workCost(in, &w.Wave, k))
			}
			return m
		}
		for _, x := range l {
			m = max(m, x+in.Cost)
		}
		return m
	}
	type item struct {
		in   *Instance
		size float64
		n    int // the order met in, for a sort as stable and faster
	}
	var items []item
	for _, w := range live {
		for _, in := range w.insts {
			var size float64
			if slot >= 0 {
				size = in.cost[slot]
			} else {
				size = slices.Max(in.cost)
			}
			items = append(items, item{in.Instance, size, len(items)})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.n, b.n)) })
	g := &greedyWaves{util: make([]float64, len(live))}
	load := make([][]float64, len(live))
	for i, w := range live {
		load[i] = make([]float64, width)
		for k := range load[i] {
			load[i][k] = w.baseAt(max(k, slot))
		}
		g.util[i] = slices.Max(load[i]) / w.cap
		g.order = append(g.order, i)
	}
	g.init()
	c := make([]float64, width)
	var tried []int
	n := len(live)
	if n > exactWaves {
		n = greedyCandidates
	}
	for _, it := range items {
		tried = tried[:0]
		best, bestU := -1, math.Inf(1)
		for range n {
			i := g.pop()
			tried = append(tried, i)
			if u := peakWith(load[i], it.in, live[i]) / live[i].cap; u < bestU {
				best, bestU = i, u
			}
		}
		costInto(c, it.in, live[best])
		addTo(load[best], c, 1)
		g.util[best] = bestU
		for _, i := range tried {
			g.push(i)
		}
	}
	return slices.Max(g.util)
}

// greedyWaves is a binary heap of the waves' indices, the least utilised on top (ties:
// the lower index), written out: container/heap's interface calls and boxing took most
// of a plan's time on a thousand waves.
type greedyWaves struct {
	util  []float64
	order []int
}

func (g *greedyWaves) less(a, b int) bool {
	x, y := g.order[a], g.order[b]
	return g.util[x] < g.util[y] || g.util[x] == g.util[y] && x < y
}

func (g *greedyWaves) init() {
	for i := len(g.order)/2 - 1; i >= 0; i-- {
		g.down(i)
	}
}

func (g *greedyWaves) pop() int {
	top := g.order[0]
	last := len(g.order) - 1
	g.order[0] = g.order[last]
	g.order = g.order[:last]
	g.down(0)
	return top
}

func (g *greedyWaves) push(i int) {
	g.order = append(g.order, i)
	for j := len(g.order) - 1; j > 0; {
		parent := (j - 1) / 2
		if !g.less(j, parent) {
			break
		}
		g.order[j], g.order[parent] = g.order[parent], g.order[j]
		j = parent
	}
}

func (g *greedyWaves) down(j int) {
	for {
		l := 2*j + 1
		if l >= len(g.order) {
			return
		}
		m := l
		if r := l + 1; r < len(g.order) && g.less(r, l) {
			m = r
		}
		if !g.less(m, j) {
			return
		}
		g.order[j], g.order[m] = g.order[m], g.order[j]
		j = m
	}
}
