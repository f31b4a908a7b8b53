package fleetsim

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// handFleet is a fleet whose costs are rows × the wave's row price: waves are given as
// cores and row price, instances as daily mean rows, flat over the day.
func handFleet(waves [][2]float64, rows ...float64) *Fleet {
	f := &Fleet{}
	for k, w := range waves {
		f.Waves = append(f.Waves, Wave{Node: fmt.Sprint("w", k), Cores: int(w[0]), RowPrice: w[1]})
	}
	for k, r := range rows {
		f.Instances = append(f.Instances, Instance{ID: fmt.Sprint("i", k), Rows: r, RowBytes: 100})
	}
	f.Initial = make([]int, len(rows))
	return f
}

const tol = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

// TestGreedyAndBound checks the greedy reference and the lower bound on fleets small
// enough to work out by hand.
func TestGreedyAndBound(t *testing.T) {
	at := atHour(0)
	for _, tc := range []struct {
		name   string
		f      *Fleet
		assign []int   // greedy's
		peak   float64 // greedy's, now
		fluid  float64
		inst   float64
		dual   float64 // the fractional optimum the dual bound approaches (from below)
	}{
		{
			// Costs 1, .75, .75, .5 on two 2-core waves: 1 → w0, .75 → w1, .75 → w1 (.75
			// there against .875 on w0), .5 → w0 (.75 against 1).
			name: "equal waves", f: handFleet([][2]float64{{2, 0.25}, {2, 0.25}}, 4, 3, 3, 2),
			assign: []int{0, 1, 1, 0}, peak: 0.75, fluid: 0.75, inst: 0.5, dual: 0.75,
		},
		{
			// Costs 3, 2, 1 on 2 and 4 cores: 3 → w1 (.75 against 1.5), 2 → w0 (1 against
			// 1.25), 1 → w1 (1 against 1.5): the optimum, at the fluid bound.
			name: "capacities", f: handFleet([][2]float64{{2, 1}, {4, 1}}, 3, 2, 1),
			assign: []int{1, 0, 1}, peak: 1, fluid: 1, inst: 0.75, dual: 1,
		},
		{
			// w1 is a slower host (twice the price): .3 → w0, .3 → w0 (a tie: .6 on
			// either), .3 → w1 (.6 against .9). The fluid bound prices everything at w0's
			// .9/2; the fractional optimum puts x on w0 and .9 − x there at twice the
			// cost: x = T, 2(.9 − x) = T, T = .6, which the dual bound finds.
			name: "prices", f: handFleet([][2]float64{{1, 1}, {1, 2}}, 0.3, 0.3, 0.3),
			assign: []int{0, 0, 1}, peak: 0.6, fluid: 0.45, inst: 0.3, dual: 0.6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.f.Instances {
				tc.f.Instances[i].RowBytes = 0
			}
			got := greedy(tc.f, at)
			if !slices.Equal(got, tc.assign) {
				t.Errorf("greedy %v, want %v", got, tc.assign)
			}
			if p := figuresOf(tc.f, got, at).Peak; !near(p, tc.peak) {
				t.Errorf("greedy peak %v, want %v", p, tc.peak)
			}
			b := lowerBound(tc.f, at, 0)
			if !near(b.Fluid, tc.fluid) || !near(b.Instance, tc.inst) {
				t.Errorf("bound fluid %v instance %v, want %v and %v", b.Fluid, b.Instance, tc.fluid, tc.inst)
			}
			if b.Dual > tc.dual+tol || b.Dual < tc.dual-0.01 {
				t.Errorf("dual bound %v, want just under the fractional optimum %v", b.Dual, tc.dual)
			}
			if b.Value > tc.peak+tol || b.Value < max(b.Fluid, b.Instance, b.Dual) {
				t.Errorf("bound %v above greedy's %v, or below its parts", b.Value, tc.peak)
			}
		})
	}
}

// TestBoundIdle: a wave's idle process alone bounds the peak from below.
func TestBoundIdle(t *testing.T) {
	f := handFleet([][2]float64{{1, 1}, {4, 1}}, 0.1)
	f.Waves[0].Idle = 0.5
	b := lowerBound(f, atHour(0), 0)
	if !near(b.Idle, 0.5) || !near(b.Value, 0.5) {
		t.Fatalf("bound %+v, want idle 0.5 and value 0.5", b)
	}
	// The instance is cheapest in utilisation on the 4-core wave: 0.1/4.
	if !near(b.Instance, 0.025) {
		t.Fatalf("instance part %v, want 0.025", b.Instance)
	}
}

// TestDayMeasure: over the day, two instances that peak 12 hours apart fill one wave
// evenly; greedy, placing by the day's peak, still spreads them, and the bound is the
// larger one's peak.
func TestDayMeasure(t *testing.T) {
	f := handFleet([][2]float64{{1, 1}, {1, 1}}, 0.4, 0.4)
	for i := range f.Instances {
		f.Instances[i].RowBytes = 0
		f.Instances[i].Amp = 0.5
		f.Instances[i].PeakHour = 12 * float64(i)
	}
	both := figuresOf(f, []int{0, 0}, dayPeak)
	if !near(both.Peak, 0.8) || !near(both.Min, 0) {
		t.Fatalf("both on one wave: %+v, want a flat 0.8 (the cycles cancel) beside 0", both)
	}
	if p := figuresOf(f, []int{0, 0}, atHour(0)).Peak; !near(p, 0.8) {
		t.Fatalf("now: %v, want 0.8", p)
	}
	if g := greedy(f, dayPeak); !slices.Equal(g, []int{0, 1}) || !near(figuresOf(f, g, dayPeak).Peak, 0.6) {
		t.Fatalf("greedy by the day's peak: %v, want [0 1] at 0.6", g)
	}
	b := lowerBound(f, dayPeak, 0)
	if !near(b.Fluid, 0.4) || !near(b.Instance, 0.6) || !near(b.Value, 0.6) {
		t.Fatalf("day bound %+v, want fluid 0.4 (0.8 flat over 2 cores), instance 0.6", b)
	}
	if h := fluidPeakHour(handFleet([][2]float64{{1, 1}}, 1)); h != 0 {
		t.Fatalf("fluid peak hour of a flat fleet: %v", h)
	}
	f.Instances = f.Instances[1:]
	if h := fluidPeakHour(f); !near(h, 12) {
		t.Fatalf("fluid peak hour %v, want 12", h)
	}
}

// TestDescent: the move-by-move reference from everything on one wave.
func TestDescent(t *testing.T) {
	// .1 .2 .3 .4 on w0, w1 empty, 1 core each. Step 1: the .4 (pair max .6, the
	// lowest; the .1 would leave w1 lowest, but w0 at .9). Step 2 from w0 at .6: .3
	// gives .7, .2 gives .6 (not lower), .1 gives .5. Then w0 at .5 (.2, .3): .3 → .8,
	// .2 → .7, no move lowers it.
	f := handFleet([][2]float64{{1, 1}, {1, 1}}, 0.1, 0.2, 0.3, 0.4)
	for _, tc := range []struct {
		target float64
		to     int
	}{{0.6, 1}, {0.55, 2}, {0.4, -1}, {1, 0}} {
		assign, d := descent(f, f.Initial, atHour(0), tc.target)
		if !slices.Equal(assign, []int{1, 0, 0, 1}) || d.Moves != 2 || d.Distinct != 2 || !near(d.Peak, 0.5) || !near(d.Spread, 0) {
			t.Fatalf("descent: %v %+v, want [1 0 0 1] in 2 moves at 0.5", assign, d)
		}
		if d.MovesToTarget != tc.to {
			t.Errorf("target %v: reached after %d moves, want %d", tc.target, d.MovesToTarget, tc.to)
		}
	}
}

// TestMovesToTarget: the judge's applied moves replayed in order, counted to the first
// peak within the target.
func TestMovesToTarget(t *testing.T) {
	// .1 .2 .3 .4 on w0 (peak 1.0), w1 empty. Moving .4 then .1 gives .6 then .5;
	// moving .1 first gives .9, then .4 gives .5.
	f := handFleet([][2]float64{{1, 1}, {1, 1}}, 0.1, 0.2, 0.3, 0.4)
	for _, tc := range []struct {
		moves  [][2]int
		target float64
		want   int
	}{
		{[][2]int{{3, 1}, {0, 1}}, 0.6, 1},
		{[][2]int{{3, 1}, {0, 1}}, 0.55, 2},
		{[][2]int{{0, 1}, {3, 1}}, 0.6, 2},
		{[][2]int{{0, 1}, {3, 1}}, 0.4, -1},
		{nil, 1, 0},
		{nil, 0.9, -1},
		{[][2]int{{3, 1}, {3, 0}, {3, 1}}, 0.7, 1}, // a move back does not undo the count
	} {
		if got := movesToTarget(f, tc.moves, atHour(0), tc.target); got != tc.want {
			t.Errorf("moves %v to %v: %d, want %d", tc.moves, tc.target, got, tc.want)
		}
	}
}

// TestReplayCountsMovesBeyondTheBound: of the moves to the target, those off a wave then
// within it, and off a wave over it that started within it, are counted apart.
func TestReplayCountsMovesBeyondTheBound(t *testing.T) {
	// w0 holds .1, .2, .3 and .4 (1.0); w1 and w2 nothing. Target .5.
	f := handFleet([][2]float64{{1, 1}, {1, 1}, {1, 1}}, 0.1, 0.2, 0.3, 0.4)
	for _, tc := range []struct {
		moves [][2]int
		want  replayed
	}{
		// .4 to w1 (w0 .6), .3 to w1 (w0 .3, w1 .7: filled past it), .1 off w0 within
		// it, .4 off w1 to w2: w0 .2, w1 .3, w2 .5.
		{[][2]int{{3, 1}, {2, 1}, {0, 2}, {3, 2}}, replayed{toTarget: 4, offWithin: 1, offFilled: 1}},
		// .4 to w1 and .2 to w2: only what w0 must shed.
		{[][2]int{{3, 1}, {1, 2}}, replayed{toTarget: 2}},
		// moves after the target are not counted.
		{[][2]int{{3, 1}, {2, 2}, {0, 2}}, replayed{toTarget: 2}},
		{[][2]int{{0, 1}}, replayed{toTarget: -1}},
	} {
		if got := replay(f, tc.moves, atHour(0), 0.5); got != tc.want {
			t.Errorf("moves %v: %+v, want %+v", tc.moves, got, tc.want)
		}
	}
}

// TestJoint: a fleet within its target now but not at its daily peaks needs the move
// the day asks for, which the descent on "now" alone does not count.
func TestJoint(t *testing.T) {
	// w0 holds a flat .4 and a .3 that swings ±50 % peaking at noon: .55 at 0h, .85 at
	// 12h. Targets .6 now (met) and .7 by the day (not): one move, the swinging one.
	f := handFleet([][2]float64{{1, 1}, {1, 1}}, 0.4, 0.3)
	f.Instances[1].RowBytes, f.Instances[0].RowBytes = 0, 0
	f.Instances[1].Amp, f.Instances[1].PeakHour = 0.5, 12
	if _, d := descent(f, f.Initial, atHour(0), 0.6); d.MovesToTarget != 0 {
		t.Fatalf("now alone: %d moves to the target, want 0", d.MovesToTarget)
	}
	for _, tc := range []struct {
		moves [][2]int
		want  int
	}{{[][2]int{{1, 1}}, 1}, {[][2]int{{0, 1}}, 1}, {nil, -1}, {[][2]int{{0, 1}, {1, 1}}, 1}} {
		j := joint(f, tc.moves, 0, 0.6, 0.7)
		if j.Descent.MovesToTarget != 1 {
			t.Errorf("joint descent: %d moves to the target, want 1", j.Descent.MovesToTarget)
		}
		if j.JudgeMovesToTarget != tc.want {
			t.Errorf("moves %v: both targets after %d, want %d", tc.moves, j.JudgeMovesToTarget, tc.want)
		}
	}
	if m := jointMeasure(0, 0.6, 0.7); !near(m(loads(f, []int{0, 0})[0]), 0.85/0.7) {
		t.Errorf("joint measure of w0: %v, want the day's .85 over .7", m(loads(f, []int{0, 0})[0]))
	}
}

// TestLeastMoves: the fewest instances that must leave each wave, by its costliest
// first, summed over the waves, now and by the day.
func TestLeastMoves(t *testing.T) {
	// w0 (1 core) holds .5, .3 and .2 flat; w1 (1 core) holds .1; w2 is empty.
	f := handFleet([][2]float64{{1, 1}, {1, 1}, {1, 1}}, 0.5, 0.3, 0.2, 0.1)
	for i := range f.Instances {
		f.Instances[i].RowBytes = 0
	}
	f.Initial = []int{0, 0, 0, 1}
	for _, tc := range []struct {
		now, day float64
		want     int
	}{
		{1, 1, 0},       // every wave within both
		{0.6, 1, 1},     // w0 sheds its .5: one move, not the .3 and the .2
		{0.25, 1, 2},    // w0 keeps .2 at most: .5 and .3 leave
		{1, 0.55, 1},    // by the day alike
		{0.05, 0.05, 4}, // every instance, w1's too
		{0.6, 0.25, 2},  // the harder of the two
		{0.25, 0.6, 2},  // whichever it is
	} {
		if got := leastMoves(f, 0, tc.now, tc.day); got != tc.want {
			t.Errorf("targets %v now, %v by the day: %d must move, want %d", tc.now, tc.day, got, tc.want)
		}
	}
	// A swinging instance: .3 that peaks at noon at .45 (±50 %), beside a flat .4.
	// At hour 0 it costs .15: the wave is within .6 now, but at noon .85 is over .7.
	g := handFleet([][2]float64{{1, 1}, {1, 1}}, 0.4, 0.3)
	g.Instances[0].RowBytes, g.Instances[1].RowBytes = 0, 0
	g.Instances[1].Amp, g.Instances[1].PeakHour = 0.5, 12
	if got := leastMoves(g, 0, 0.6, 0.7); got != 1 {
		t.Errorf("the day's peak: %d must move, want 1", got)
	}
	// Each wave must be within its target at every hour, each of which asks the fewest
	// costliest at that hour: the day's bound is the hardest hour's.
	if got := leastMoves(g, 0, 0.6, 0.3); got != 2 {
		t.Errorf("under .3 all day: %d must move, want 2 (the flat .4 and the swinging one)", got)
	}
}
