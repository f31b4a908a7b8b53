package fleetsim

import (
	"cmp"
	"math"
	"slices"
)

// The references a judge's plans are measured against. They know the truth (every
// wave's prices, every instance's rates and diurnal cycle), which the judge must learn
// from what the agents report.

// meanWave is a wave with the fleet's mean prices, weighted by cores: what the greedy
// reference orders instances by.
func meanWave(f *Fleet) Wave {
	var w Wave
	var cores float64
	for _, x := range f.Waves {
		c := float64(x.Cores)
		w.RowPrice += x.RowPrice * c
		w.BytePrice += x.BytePrice * c
		w.ReadPrice += x.ReadPrice * c
		cores += c
	}
	w.RowPrice /= cores
	w.BytePrice /= cores
	w.ReadPrice /= cores
	return w
}

// greedy assigns from scratch: instances by descending true cost (at the fleet's mean
// prices, by m), each to the wave whose utilisation by m is lowest once it has it (the
// lower index on a tie). This is the longest-processing-time rule for machines of
// different speeds, a good and simple assignment that a planner in utilisation should
// approach.
func greedy(f *Fleet, m measure) []int {
	mw := meanWave(f)
	order := make([]int, len(f.Instances))
	for i := range order {
		order[i] = i
	}
	cost := func(i int) float64 { return m(contrib(mw, f.Instances[i])) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cost(b), cost(a)) })
	ls := make([]load, len(f.Waves))
	for w, wave := range f.Waves {
		ls[w].c = wave.fixed()
	}
	assign := make([]int, len(f.Instances))
	for _, i := range order {
		best, bestU := -1, math.Inf(1)
		for w, wave := range f.Waves {
			if u := m(ls[w].plus(contrib(wave, f.Instances[i]))) / float64(wave.Cores); u < bestU {
				best, bestU = w, u
			}
		}
		assign[i] = best
		ls[best] = ls[best].plus(contrib(f.Waves[best], f.Instances[i]))
	}
	return assign
}

// Bound is a lower bound of the peak utilisation by a measure that any assignment of
// the fleet has: the largest of its parts.
type Bound struct {
	// Fluid is the fleet's least possible total demand (every instance at its cheapest
	// wave's prices, every wave's idle process) over its total cores: the peak cannot be
	// below the cores-weighted mean.
	Fluid float64 `json:"fluid"`
	// Instance is the utilisation of the instance that is hardest to place, where it
	// costs least in utilisation (with that wave's idle process): some wave carries it.
	Instance float64 `json:"instance"`
	// Idle is the highest utilisation of a wave's idle process alone.
	Idle float64 `json:"idle"`
	// Dual is the best Lagrangian bound found (dualBound), which approaches the
	// fractional assignment's optimum: it accounts for the cheap waves being few.
	Dual  float64 `json:"dual"`
	Value float64 `json:"value"`
}

// lowerBound is the Bound of f by m; hours are those the dual bound is computed at (the
// day's peak is at least the utilisation at any hour). The other parts hold by the day's
// peak too: every instance's cost is non-negative at every hour, so adding instances
// never lowers a wave's peak.
func lowerBound(f *Fleet, m measure, hours ...float64) Bound {
	var b Bound
	var fluid load
	var cores float64
	for _, w := range f.Waves {
		fluid.c += w.fixed()
		cores += float64(w.Cores)
		b.Idle = max(b.Idle, w.fixed()/float64(w.Cores))
	}
	for _, in := range f.Instances {
		cheapest, placed := load{}, math.Inf(1)
		for k, w := range f.Waves {
			l := contrib(w, in)
			if k == 0 || w.Base(in) < cheapest.c {
				cheapest = l
			}
			placed = min(placed, m(l.plus(load{c: w.fixed()}))/float64(w.Cores))
		}
		fluid = fluid.plus(cheapest)
		b.Instance = max(b.Instance, placed)
	}
	b.Fluid = m(fluid) / cores
	for _, h := range hours {
		b.Dual = max(b.Dual, dualBound(f, h))
	}
	b.Value = max(b.Fluid, b.Instance, b.Idle, b.Dual)
	return b
}

// fluidPeakHour is the hour at which the fleet's least total demand (as in
// Bound.Fluid) peaks: where a bound at one hour is most telling for the day.
func fluidPeakHour(f *Fleet) float64 {
	var fluid load
	for _, in := range f.Instances {
		best := contrib(f.Waves[0], in)
		for _, w := range f.Waves[1:] {
			if l := contrib(w, in); l.c < best.c {
				best = l
			}
		}
		fluid = fluid.plus(best)
	}
	if fluid.x == 0 && fluid.y == 0 {
		return 0
	}
	return math.Mod(math.Atan2(fluid.y, fluid.x)/omega+24, 24)
}

// dualBound is a Lagrangian lower bound of the peak utilisation at hour h. For weights
// λ_w ≥ 0 with Σ λ_w·cores_w = 1, any assignment's peak T satisfies
// T ≥ Σ_w λ_w·load_w ≥ Σ_w λ_w·idle_w + Σ_i min_w λ_w·cost_iw: a valid bound for every λ
// (uniform λ gives the fluid bound), whose maximum over λ is the fractional assignment's
// optimum. Exponentiated gradient ascent moves weight toward the waves that the bound's
// own assignment fills beyond it; the best bound seen is returned.
func dualBound(f *Fleet, h float64) float64 {
	n := len(f.Waves)
	cost := make([][]float64, len(f.Instances)) // cost[i][w] at h, over the wave's cores
	for i, in := range f.Instances {
		cost[i] = make([]float64, n)
		for w, wave := range f.Waves {
			cost[i][w] = contrib(wave, in).at(h) / float64(wave.Cores)
		}
	}
	// mu_w = λ_w·cores_w: a distribution over the waves.
	mu := make([]float64, n)
	var cores float64
	for _, w := range f.Waves {
		cores += float64(w.Cores)
	}
	for w, wave := range f.Waves {
		mu[w] = float64(wave.Cores) / cores
	}
	best := 0.0
	u := make([]float64, n)
	// 600 steps of 1/√t: on the 200-wave preset the bound is within a tenth of greedy
	// (more steps add little), and costs under a second.
	for it := range 600 {
		bound := 0.0
		for w, wave := range f.Waves {
			u[w] = wave.fixed() / float64(wave.Cores)
			bound += mu[w] * u[w]
		}
		for i := range cost {
			k, v := 0, math.Inf(1)
			for w, c := range cost[i] {
				if x := mu[w] * c; x < v {
					k, v = w, x
				}
			}
			bound += v
			u[k] += cost[i][k]
		}
		best = max(best, bound)

		// u is the bound's gradient in mu: exponentiated gradient ascent, with a step
		// that shrinks as it goes.
		var spread float64
		for w := range u {
			spread = max(spread, math.Abs(u[w]-bound))
		}
		if spread == 0 {
			break // every wave at the bound: it is the optimum
		}
		eta := 1 / math.Sqrt(float64(it+1)) / spread
		var z float64
		for w := range mu {
			mu[w] *= math.Exp(eta * (u[w] - bound))
			z += mu[w]
		}
		for w := range mu {
			mu[w] /= z
		}
	}
	return best
}

// Descent is the move-by-move reference: from the initial assignment, each step moves
// the one instance off the most utilised wave whose move lowers the higher of the two
// waves' utilisations the most, until no move lowers it. It says how many moves a good
// plan needs, which greedy (an assignment from scratch) cannot.
type Descent struct {
	Figures
	Moves    int `json:"moves"`
	Distinct int `json:"distinct_instances"`
	// MovesToTarget is the moves after which the peak was first within the target (the
	// greedy peak times the factor the report names); -1 when never.
	MovesToTarget int `json:"moves_to_target"`
}

// descent runs the move-by-move reference by m from initial, noting when the peak
// first reaches target.
func descent(f *Fleet, initial []int, m measure, target float64) ([]int, Descent) {
	assign := slices.Clone(initial)
	ls := loads(f, assign)
	u := utils(f, ls, m)
	on := instancesOn(f, assign)
	d := Descent{MovesToTarget: -1}
	moved := map[int]bool{}
	const eps = 1e-12
	limit := 10 * len(f.Instances) // the order of the utilisations falls at each move: a guard
	for d.Moves < limit {
		p := 0
		for w := range u {
			if u[w] > u[p] {
				p = w
			}
		}
		if d.MovesToTarget < 0 && u[p] <= target {
			d.MovesToTarget = d.Moves
		}
		bestK, bestTo, bestPair, bestTo2 := -1, -1, u[p]-eps, math.Inf(1)
		pc := float64(f.Waves[p].Cores)
		for k, i := range on[p] {
			newP := m(ls[p].minus(contrib(f.Waves[p], f.Instances[i]))) / pc
			if newP >= bestPair {
				continue
			}
			for w, wave := range f.Waves {
				if w == p {
					continue
				}
				newW := m(ls[w].plus(contrib(wave, f.Instances[i]))) / float64(wave.Cores)
				if pair := max(newP, newW); pair < bestPair || (pair == bestPair && newW < bestTo2) {
					bestK, bestTo, bestPair, bestTo2 = k, w, pair, newW
				}
			}
		}
		if bestK < 0 {
			break
		}
		i := on[p][bestK]
		on[p] = slices.Delete(on[p], bestK, bestK+1)
		on[bestTo] = append(on[bestTo], i)
		ls[p] = ls[p].minus(contrib(f.Waves[p], f.Instances[i]))
		ls[bestTo] = ls[bestTo].plus(contrib(f.Waves[bestTo], f.Instances[i]))
		u[p], u[bestTo] = m(ls[p])/pc, m(ls[bestTo])/float64(f.Waves[bestTo].Cores)
		assign[i] = bestTo
		moved[i] = true
		d.Moves++
	}
	if d.MovesToTarget < 0 && slices.Max(u) <= target {
		d.MovesToTarget = d.Moves
	}
	d.Distinct = len(moved)
	d.Figures = figures(f, u)
	return assign, d
}

// instancesOn is each wave's instances under assign (instance → wave index), in
// instance order.
func instancesOn(f *Fleet, assign []int) [][]int {
	on := make([][]int, len(f.Waves))
	for i, w := range assign {
		on[w] = append(on[w], i)
	}
	return on
}
