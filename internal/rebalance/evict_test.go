package rebalance

import (
	"fmt"
	"testing"
)

// unitWaves are waves of capacity 1 at the same prices, by node.
func unitWaves(nodes ...string) []Wave {
	out := make([]Wave, len(nodes))
	for i, n := range nodes {
		out[i] = Wave{Node: n, Alive: true, Capacity: 1}
	}
	return out
}

// costs are instances of the given costs on node, named node-i.
func costs(node string, cs ...float64) []Instance {
	out := make([]Instance, len(cs))
	for i, c := range cs {
		out[i] = Instance{ID: fmt.Sprintf("%s-%d", node, i), Node: node, Cost: c}
	}
	return out
}

// TestEvictCountsWhatCannotLeave: x (0.65) must leave h (beside a pinned 0.35), fits on
// no wave as it is, and no swap helps (r would stand at 0.85). Its eviction goes where x
// beside what cannot leave stays under the threshold: r, whose instances can make room,
// not p or q, whose pinned instances would hold them at 1.05 and 0.95.
func TestEvictCountsWhatCannotLeave(t *testing.T) {
	insts := []Instance{
		{ID: "x", Node: "h", Cost: 0.65}, {ID: "y", Node: "h", Cost: 0.35, Pinned: true},
		{ID: "P", Node: "p", Cost: 0.4, Pinned: true}, {ID: "Q", Node: "q", Cost: 0.3, Pinned: true},
		{ID: "R1", Node: "r", Cost: 0.2}, {ID: "R2", Node: "r", Cost: 0.2},
	}
	p := Make(unitWaves("h", "p", "q", "r"), insts, Goals{HardMax: 0.7, Band: 0.5, NoShare: true}, now)
	at := map[string]string{}
	for _, m := range p.Moves {
		at[m.Instance] = m.To
	}
	if at["x"] != "r" {
		t.Fatalf("moves %+v: want x evicted to r", p.Moves)
	}
	for n, u := range p.After {
		if u > 0.7+1e-9 {
			t.Errorf("%s at %.2f after the plan, above 0.7 (moves %+v)", n, u, p.Moves)
		}
	}
}
