package loadmodel

import (
	"math"
	"slices"
)

// speedRounds is how often fitAtSpeeds refits the pool, robustly, at each wave's speed.
const speedRounds = 3

// Bounds of the alternation between the waves' speeds and the pool's prices that
// converges within each round (convergeSpeeds).
const (
	speedIters = 500
	speedTol   = 1e-6 // largest relative change of a price in an iteration
)

// fitAtSpeeds fits the pooled prices to centred samples (each wave's in all[span])
// with each wave's own speed factor: its hosts differ by speed (a slower core makes
// every row and every byte dearer alike), so one price for all would weigh each wave's
// samples as if their CPU moved alike with the work. The speeds are each wave's slope of
// its CPU over its work at the prices, normalised to a median of 1; speeds and prices
// are alternated to convergence on the waves' sums of squares (convergeSpeeds), and the
// prices refitted robustly to the CPU divided by the speeds, speedRounds times.
//
// Three alternations alone, each a robust fit of every sample, stopped far from the
// fixed point: the speeds follow the split of a row's price against a byte's and the
// split the speeds, a slow spiral (on the fleet simulator's seed 4, a byte priced 1.53,
// 1.47, 1.36, 1.27 times the fleet's mean price where the alternation settles at 1.06,
// each closing about a quarter of the gap), and every wave leaning on the pool priced
// its bytes so.
func fitAtSpeeds(all []sample, spans [][2]int) fitResult {
	f := fitCentred(all)
	if len(spans) < 3 {
		return f // too few waves to tell a speed from the prices
	}
	ws := newWaveSums(all, spans)
	scaled := make([]sample, len(all))
	for range speedRounds {
		speeds := ws.convergeSpeeds(f)
		for j, sp := range spans {
			for i := sp[0]; i < sp[1]; i++ {
				scaled[i] = all[i]
				scaled[i].cpu /= speeds[j]
			}
		}
		f = fitCentred(scaled)
	}
	return f
}

// waveSums are each wave's sums of squares of its centred samples: xxᵀ and x·cpu for x
// its work. They are all the alternation of speeds and prices needs, so that it runs to
// convergence at the cost of a few products per wave rather than a pass over every
// sample.
type waveSums struct {
	xx [][dims][dims]float64
	xc [][dims]float64
}

func newWaveSums(all []sample, spans [][2]int) waveSums {
	ws := waveSums{xx: make([][dims][dims]float64, len(spans)), xc: make([][dims]float64, len(spans))}
	for j, sp := range spans {
		for _, s := range all[sp[0]:sp[1]] {
			x := s.work()
			for a := range dims {
				for b := range dims {
					ws.xx[j][a][b] += x[a] * x[b]
				}
				ws.xc[j][a] += x[a] * s.cpu
			}
		}
	}
	return ws
}

// speeds are each wave's slope of its CPU over its work at prices p (the least
// squares factor; 1 where the work costs nothing at p), bounded, over their median.
func (ws waveSums) speeds(p [dims]float64) []float64 {
	out := make([]float64, len(ws.xx))
	for j := range ws.xx {
		var ww, wc float64
		for a := range dims {
			wc += p[a] * ws.xc[j][a]
			for b := range dims {
				ww += p[a] * ws.xx[j][a][b] * p[b]
			}
		}
		out[j] = 1
		if ww > 0 {
			out[j] = min(max(wc/ww, minSpeed), maxSpeed)
		}
	}
	mid := median(slices.Clone(out))
	for j := range out {
		out[j] /= mid
	}
	return out
}

// convergeSpeeds alternates the waves' speeds and the prices, from f's prices, by
// plain least squares on the sums, until no price moves by more than speedTol of
// itself, and returns the speeds. The prices vary only where f's could: a pool fitted
// in one combined direction (collinear) or with reading left out (readCollinear) keeps
// that shape, and a price that would turn negative ends the alternation where it was
// (fitCentred's own constraint decides that case).
func (ws waveSums) convergeSpeeds(f fitResult) []float64 {
	p := f.price
	if f.collinear {
		return ws.speeds(p) // one direction: the speeds do not move the split
	}
	var free [dims + 1]bool
	for a := range dims {
		free[a] = p[a] > 0
	}
	for range speedIters {
		sp := ws.speeds(p)
		var m [dims + 1][dims + 1]float64
		var v [dims + 1]float64
		for j := range ws.xx {
			for a := range dims {
				v[a] += ws.xc[j][a] / sp[j]
				for b := range dims {
					m[a][b] += ws.xx[j][a][b]
				}
			}
		}
		next, ok := solveMasked(m, v, free)
		if !ok {
			return sp
		}
		moved := 0.0
		for a := range dims {
			if next[a] < 0 {
				return sp
			}
			if p[a] > 0 {
				moved = math.Max(moved, math.Abs(next[a]-p[a])/p[a])
			}
		}
		copy(p[:], next[:dims])
		if moved < speedTol {
			break
		}
	}
	return ws.speeds(p)
}
