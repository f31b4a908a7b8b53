package rebalance

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestEnoughStopsTheBand: with Goals.Enough the band and the levels make no move while
// the highest peak stands within that ratio (plus a step's gain, the hysteresis) of the
// fleet's level, though the spread is wider than the band; above that line a plan
// brings the highest under it and stops there, short of the band. Without it the band
// decides, as before. On the seeded fleets (binlake bench fleet) the moves after the
// peak was near greedy's were half of all the plans' moves (issue 30).
func TestEnoughStopsTheBand(t *testing.T) {
	// Four waves: a at 0.44, b 0.42, c and d 0.30 (level 0.365, spread 0.14).
	ws := waves(true, "a", "b", "c", "d")
	var insts []Instance
	for _, w := range []struct {
		node string
		n    int
	}{{"a", 22}, {"b", 21}, {"c", 15}, {"d", 15}} {
		for i := range w.n {
			insts = append(insts, Instance{ID: fmt.Sprintf("%s-%02d", w.node, i), Node: w.node, Cost: 0.02})
		}
	}
	g := Goals{Band: 0.03, LevelGain: 0.01, NoShare: true}
	if p := Make(ws, insts, g, now); len(p.Moves) == 0 || p.SpreadAfter > 0.03+1e-9 {
		t.Fatalf("without Enough %+v: want the spread narrowed to the band", p)
	}
	g.Enough = 1.25 // 0.456: a at 0.44 is good enough
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 || !p.Balanced {
		t.Fatalf("Enough 1.25 %+v: want no move, balanced", p)
	}
	g.Enough = 1.19 // 0.434, and a start a gain higher, 0.444: a, over the line but under the start, is not worth a plan
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 || !p.Balanced {
		t.Fatalf("Enough 1.19 %+v: want no move (the hysteresis), balanced", p)
	}
	g.Enough = 1.15 // 0.41975: a and b come under it, and the plan stops there
	p := Make(ws, insts, g, now)
	if len(p.Moves) != 3 || p.PeakAfter > 1.15*0.365+1e-9 || !p.Balanced {
		t.Fatalf("Enough 1.15 %+v: want the highest brought under 0.41975 in 3 moves", p)
	}
	if p.SpreadAfter <= 0.03+1e-9 {
		t.Errorf("Enough 1.15: spread after %.3f: want the plan stopped at the line, short of the band", p.SpreadAfter)
	}
}

// TestEnoughNowGoesToItsStop: with Goals.Enough the second level starts only once the
// highest excess in its hours stands over the line (the ratio of those hours' level),
// and, once started, goes down to its own stop, half a band over the level, not just
// under the line: a pass cut short at the line left the next plans, as the hours
// drifted, to start it again for a move or two (on the 200-wave fleet, 780 moves in all
// against 723). A wave's excess counts less half its error (Wave.Err) against the start.
func TestEnoughNowGoesToItsStop(t *testing.T) {
	// a runs six instances busy only now (0.05 each) beside a day-long one (0.1 now,
	// 0.5 at slots 1 and 2); b, c and d their day-long ones: the level now is 0.175 and
	// a's excess 0.225.
	ws := waves(true, "a", "b", "c", "d")
	for i := range ws {
		ws[i].Capacity, ws[i].Row = 1, 1
	}
	var insts []Instance
	for _, n := range []string{"a", "b", "c", "d"} {
		insts = append(insts, Instance{ID: "day-" + n, Node: n, Rows: []float64{0.1, 0.5, 0.5}})
	}
	for i := range 6 {
		insts = append(insts, Instance{ID: fmt.Sprintf("now-%d", i), Node: "a", Rows: []float64{0.05, 0, 0}})
	}
	g := Goals{HardMax: 0.95, Band: 0.03, LevelGain: 0.01, LevelSettle: 24 * time.Hour, LevelNow: []int{0}, NoShare: true}
	g.Enough = 2.5 // the line: 1.5 × 0.175 = 0.2625 over the level, above a's excess
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Fatalf("Enough 2.5 %+v: want no move, a's excess within the line", p.Moves)
	}
	g.Enough = 1.5 // the line 0.0875 over the level: a starts, and comes down to 0.025 over it
	p := Make(ws, insts, g, now)
	if len(p.Moves) != 4 {
		t.Fatalf("Enough 1.5 %+v: want 4 moves off a (its excess 0.225 to 0.025, under its stop's next step), not 3 (0.075, just under the line)", p.Moves)
	}
	for _, m := range p.Moves {
		if m.From != "a" || m.Instance[:4] != "now-" {
			t.Errorf("move %+v: want a's now-instances only", m)
		}
	}

	// a's fit is poor (Wave.Err 0.3 cores on 1): its excess, 0.225, less half that
	// error stands under the start (0.0875): no pass for it. A nonsensical error counts
	// as none.
	for _, e := range []struct {
		err   float64
		moves int
	}{{0.3, 0}, {0.2, 4}, {-1, 4}, {math.NaN(), 4}} {
		ws[0].Err = e.err
		if p := Make(ws, insts, g, now); len(p.Moves) != e.moves {
			t.Errorf("a's Err %v: %d moves %+v, want %d", e.err, len(p.Moves), p.Moves, e.moves)
		}
	}
}
