package rebalance

import (
	"fmt"
	"math"
	"testing"
)

// TestUnderSetAsideStopsTheBand: while a wave that no move can lower stands highest
// (here one instance of 0.5), the band and the first level make no move among the
// others once each stands, by three of its errors (Wave.Err over its capacity), under
// it: lowering them lowers no fleet-wide peak. A wave whose error is larger, or not
// known, may stand that high in truth, and the band goes on as before (on the 200-wave
// fleet 75 moves after the target, and the second level's to undo what they did to the
// load now: 730 moves in all against 599).
func TestUnderSetAsideStopsTheBand(t *testing.T) {
	// big at 0.5 (one instance: it cannot come down), b at 0.44, c and d at 0.30: the
	// level is 0.385, the Enough line 1.08 × that = 0.4158, a plan starting a gain over
	// it (0.4258): b must come down to it, 2 moves, without the rule.
	ws := waves(true, "big", "b", "c", "d")
	insts := []Instance{{ID: "big-0", Node: "big", Cost: 0.5}}
	for _, w := range []struct {
		node string
		n    int
	}{{"b", 22}, {"c", 15}, {"d", 15}} {
		for i := range w.n {
			insts = append(insts, Instance{ID: fmt.Sprintf("%s-%02d", w.node, i), Node: w.node, Cost: 0.02})
		}
	}
	g := Goals{Band: 0.03, LevelGain: 0.01, Enough: 1.08, NoShare: true}
	for _, c := range []struct {
		name string
		err  []float64 // b's, c's and d's
		want int
	}{
		{"errors not known", []float64{0, 0, 0}, 2},
		{"b surely under big", []float64{0.02, 0.02, 0.02}, 0}, // b: 0.44 + 3·0.02 = 0.50
		{"b may stand as high", []float64{0.03, 0.02, 0.02}, 2},
		{"c's error not known", []float64{0.02, 0, 0.02}, 2},
		{"c's error NaN", []float64{0.02, math.NaN(), 0.02}, 2},
	} {
		for i, e := range c.err {
			ws[1+i].Err = e
		}
		p := Make(ws, insts, g, now)
		if len(p.Moves) != c.want {
			t.Errorf("%s: %d moves %+v, want %d", c.name, len(p.Moves), p.Moves, c.want)
		}
		for _, m := range p.Moves {
			if m.From != "b" {
				t.Errorf("%s: move %+v: want b's instances only", c.name, m)
			}
		}
		if p.Balanced {
			t.Errorf("%s: balanced, want the spread unmet with big set aside: %+v", c.name, p)
		}
	}

	// Without a level (no LevelGain) the rule is off: the lowest is raised as before.
	ws[1].Err, ws[2].Err, ws[3].Err = 0.02, 0.02, 0.02
	g = Goals{Band: 0.03, NoShare: true}
	if p := Make(ws, insts, g, now); len(p.Moves) == 0 {
		t.Errorf("no level: no move, want the band's moves as before")
	}
}
