package rebalance

import (
	"fmt"
	"testing"
	"time"
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

// rowInstance is an instance of rows/s and bytes/s in one slot, on node.
func rowInstance(id, node string, rows, bytes float64) Instance {
	return Instance{ID: id, Node: node, Rows: []float64{rows}, Bytes: []float64{bytes}}
}

// TestLinesEvictALoneLargeInstance: B alone on a slow wave stands at 0.6, far over the
// lines (about 0.32): on every other wave it would cost 0.3 beside a load that raises the
// pair as high, and no swap helps (what roomy holds costs ten times more on slow). Set
// aside, the fleet would stay at 0.6. The lines' eviction moves B where it alone fits
// and the fewest must make room; the waves then shed, and the peak comes to 0.38.
func TestLinesEvictALoneLargeInstance(t *testing.T) {
	ws := []Wave{
		{Node: "slow", Alive: true, Capacity: 1, Row: 2, Byte: 10},
		{Node: "roomy", Alive: true, Capacity: 1, Row: 1, Byte: 0.01},
		{Node: "spare", Alive: true, Capacity: 1, Row: 2, Byte: 0.01},
		{Node: "other", Alive: true, Capacity: 1, Row: 1, Byte: 0.01},
	}
	insts := []Instance{rowInstance("B", "slow", 0.3, 0), rowInstance("s", "spare", 0.01, 0), rowInstance("x", "other", 0.3, 0)}
	for i := range 4 {
		insts = append(insts, rowInstance(fmt.Sprint("t", i), "roomy", 0.07, 1))
	}
	g := linesGoals()
	g.MaxMoves, g.Budget = 100, time.Minute
	p := Make(ws, insts, g, now)
	moved := map[string]bool{}
	for _, m := range p.Moves {
		if moved[m.Instance] {
			t.Fatalf("%s moved twice: %+v", m.Instance, p.Moves)
		}
		moved[m.Instance] = true
	}
	if !moved["B"] {
		t.Fatalf("B stayed on slow: moves %+v, unmet %q", p.Moves, p.Unmet)
	}
	if p.PeakAfter > 0.38+1e-9 {
		t.Errorf("peak %.3f after the plan (%v): want at most 0.38", p.PeakAfter, p.After)
	}
}
