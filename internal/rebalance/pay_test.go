package rebalance

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestSpreadHysteresis: with a level (Goals.LevelGain) a plan starts narrowing only a
// spread a step's gain wider than the band, so that the next plans, on figures that
// drift by about that, do not move an instance or two each; once started, it narrows to
// the band. Without a level the band alone decides, as before.
func TestSpreadHysteresis(t *testing.T) {
	ws := waves(true, "a", "b")
	// a: 0.5 + 0.02 + 0.02 = 0.54, b: 0.5: a spread of 0.04, a band of 0.03 and a gain of 0.02.
	insts := []Instance{{ID: "a-big", Node: "a", Cost: 0.5}, {ID: "a-1", Node: "a", Cost: 0.02}, {ID: "a-2", Node: "a", Cost: 0.02},
		{ID: "b-big", Node: "b", Cost: 0.5}}
	g := Goals{Band: 0.03, NoShare: true}
	if p := Make(ws, insts, g, now); len(p.Moves) != 1 || !p.Balanced {
		t.Fatalf("without a level %+v: want one move into the band", p)
	}
	g.LevelGain = 0.02
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 || !p.Balanced {
		t.Fatalf("with a level, a spread within a gain of the band %+v: want no move, balanced", p)
	}
	// Wider than the band by more than a gain: the plan narrows it to the band.
	insts = append(insts, Instance{ID: "a-3", Node: "a", Cost: 0.02}, Instance{ID: "a-4", Node: "a", Cost: 0.02})
	p := Make(ws, insts, g, now)
	if len(p.Moves) == 0 || p.SpreadAfter > 0.03+1e-9 || !p.Balanced {
		t.Fatalf("a spread of 0.08 %+v: want it narrowed to the band", p)
	}
}

// morningEvening is k waves busy in the morning (0.6, one instance of theirs busy only
// then, 0.2) and k busy in the evening (0.58): the spread, 0.02, is within the band, and
// each move of a morning instance to an evening wave lowers its wave to 0.4 and leaves
// the evening wave at 0.58, so the fleet's highest comes down, from 0.6 to 0.58, only
// once every morning wave has moved one.
func morningEvening(k int) ([]Wave, []Instance) {
	var ws []Wave
	var insts []Instance
	for i := range k {
		m, e := fmt.Sprintf("morning-%02d", i), fmt.Sprintf("evening-%02d", i)
		ws = append(ws, Wave{Node: m, Alive: true, Capacity: 1, Row: 1}, Wave{Node: e, Alive: true, Capacity: 1, Row: 1})
		insts = append(insts, Instance{ID: m + "-x", Node: m, Rows: []float64{0.2, 0}},
			Instance{ID: m + "-y", Node: m, Rows: []float64{0.4, 0.2}},
			Instance{ID: e + "-z", Node: e, Rows: []float64{0.2, 0.58}})
	}
	return ws, insts
}

// TestLevelMustPay: the level's steps are best effort, and they must pay: a pass that
// lowers the fleet's highest peak by less than a step's gain, or spends more than
// nowMovesPerGain moves per gain and per wave that stood above its start, is taken back.
// On a seeded fleet (binlake bench fleet -seed 1) a pass of 21 moves, swaps among them,
// lowered the highest predicted peak by 1.7 points and the true one by 0.3. Here the
// highest comes down by 0.02, 1⅓ gains of 0.015, after a move off every morning wave:
// 11 moves for 11 waves above the start pay (on seed 1 a 16-move pass over 8 such
// waves brought the daily peak from 1.096× greedy to 1.077×). When a wave the spread
// goal set aside stands higher (pinned here), lowering the others lowers no fleet-wide
// peak, and the price is flat: 10 moves pay (at most 10⅔), 11 do not.
func TestLevelMustPay(t *testing.T) {
	// A band of 0.2, the highest's height over the fleet's level (0.4): nowMovesPerGain
	// moves a gain (the further above the level, the more a gain is worth).
	g := Goals{HardMax: 0.7, Band: 0.2, LevelGain: 0.015, LevelSettle: 24 * time.Hour, NoShare: true, MaxMoves: 100}
	ws, insts := morningEvening(11)
	if p := Make(ws, insts, g, now); len(p.Moves) != 11 || math.Abs(p.PeakAfter-0.58) > 1e-9 {
		t.Fatalf("11 morning waves: %d moves, peak after %.3f: want 11 moves, the highest at 0.58", len(p.Moves), p.PeakAfter)
	}
	aside := func(k int) ([]Wave, []Instance) {
		ws, insts := morningEvening(k)
		ws = append(ws, Wave{Node: "aside", Alive: true, Capacity: 1, Row: 1})
		return ws, append(insts, Instance{ID: "aside-big", Node: "aside", Rows: []float64{0.85, 0.85}, Pinned: true})
	}
	g.HardMax = 0.9
	ws, insts = aside(10)
	if p := Make(ws, insts, g, now); len(p.Moves) != 10 {
		t.Fatalf("10 morning waves under one set aside: %d moves: want 10", len(p.Moves))
	}
	ws, insts = aside(11)
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Fatalf("11 morning waves under one set aside: %d moves (peak after %.3f): want none: 11 moves for 1⅓ gains do not pay", len(p.Moves), p.PeakAfter)
	}
	// With a band of 0.1 the highest stands two bands above the level: a gain is worth
	// twice the moves (more than a band and a half above it: in proportion), and the 11 pay.
	g.Band = 0.1
	if p := Make(ws, insts, g, now); len(p.Moves) != 11 {
		t.Fatalf("11 morning waves two bands above the level: %d moves: want 11", len(p.Moves))
	}
}

// TestShareStopsAtTheLevel: in utilisation (with a level), the share goal fills a wave
// that runs few instances only while it stands at or below the fleet's level (a quarter
// of a band over it for the readings' noise): a wave at the level that runs few runs
// large ones, and filling it by count raises it above the others (13 such moves on a
// seeded fleet, which the next plans moved off again). Idle instances still take their
// share (TestIdleScaleOut's case, with a level).
func TestShareStopsAtTheLevel(t *testing.T) {
	ws := waves(true, "a", "b", "few")
	// a and b: 20 instances of 0.005 each, 0.1; few: one of 0.1. The fleet's level is 0.1.
	insts := append(instances("a", 20, 0.005), instances("b", 20, 0.005)...)
	insts = append(insts, Instance{ID: "few-big", Node: "few", Cost: 0.1})
	g := Goals{Band: 0.03}
	if c := counts(insts, Make(ws, insts, g, now)); c["few"] < 5 {
		t.Fatalf("without a level %v: want the share goal to fill the wave of one large instance", c)
	}
	g.LevelGain, g.LevelSettle = 0.01, 24*time.Hour
	if p := Make(ws, insts, g, now); len(p.Moves) > 1 {
		t.Fatalf("with a level %+v: want at most one move (to 0.105, within a quarter band of the level)", p.Moves)
	}
	ws = waves(true, "a", "b", "new")
	insts = append(instances("a", 6, 0), instances("b", 6, 0)...)
	if c := counts(insts, Make(ws, insts, g, now)); c["new"] != 4 || c["a"] != 4 || c["b"] != 4 {
		t.Fatalf("idle instances with a level: %v, want 4 each", c)
	}
}
