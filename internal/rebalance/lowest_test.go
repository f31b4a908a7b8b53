package rebalance

import (
	"fmt"
	"testing"
)

// TestALargeInstanceGoesWhereItWeighsLeast: one instance costs more than the hard
// threshold on every wave, and most on the slow host it runs on alone (1.22 of its
// cores there, 0.75 on the fast host, 0.94 on the others). No wave holds it within its
// lines, nor under the threshold, so before, the plan set its wave aside and left the
// fleet's highest at 1.22; the greedy assignment puts it on the fast host. The plan moves
// it there, and the fast host's small instances off: the fleet's highest is then where
// the large instance weighs least, within its line.
func TestALargeInstanceGoesWhereItWeighsLeast(t *testing.T) {
	ws := []Wave{{Node: "slow", Alive: true, Capacity: 8, Row: 1.3}, {Node: "fast", Alive: true, Capacity: 8, Row: 0.8},
		{Node: "a", Alive: true, Capacity: 8, Row: 1}, {Node: "b", Alive: true, Capacity: 8, Row: 1}}
	insts := []Instance{{ID: "big", Node: "slow", Rows: []float64{7.5}}}
	for _, n := range []string{"fast", "a", "b"} {
		for i := range 6 {
			insts = append(insts, Instance{ID: fmt.Sprintf("%s-%d", n, i), Node: n, Rows: []float64{0.4}})
		}
	}
	g := linesGoals()
	g.HardMax = 0.7
	p := Make(ws, insts, g, now)
	to := map[string]string{}
	for _, m := range p.Moves {
		to[m.Instance] = m.To
	}
	if to["big"] != "fast" {
		t.Fatalf("plan %+v: want big moved to fast, where it weighs least", p.Moves)
	}
	// fast then sheds its small instances to where there is room (the emptied slow host
	// among them) until it stands within its line, Enough times the large one alone.
	if line := g.Enough * 0.75; p.PeakAfter > line+1e-9 || p.After["fast"] < 0.75-1e-9 {
		t.Errorf("after %v (peak %.3f): want fast the highest, at most %.3f, the big instance alone beside what its line leaves room for", p.After, p.PeakAfter, line)
	}
}
