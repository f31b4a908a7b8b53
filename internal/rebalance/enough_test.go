package rebalance

import (
	"fmt"
	"testing"
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
