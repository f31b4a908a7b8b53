package rebalance

import "testing"

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
