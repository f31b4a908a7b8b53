package rebalance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func waves(alive bool, nodes ...string) []Wave {
	out := make([]Wave, len(nodes))
	for i, n := range nodes {
		out[i] = Wave{Node: n, Alive: alive}
	}
	return out
}

func instances(node string, n int, cost float64) []Instance {
	out := make([]Instance, n)
	for i := range out {
		out[i] = Instance{ID: fmt.Sprintf("%s-%02d", node, i), Node: node, Cost: cost}
	}
	return out
}

// counts is how many instances each wave runs after the plan.
func counts(insts []Instance, p Plan) map[string]int {
	at := map[string]string{}
	for _, in := range insts {
		at[in.ID] = in.Node
	}
	for _, m := range p.Moves {
		at[m.Instance] = m.To
	}
	out := map[string]int{}
	for _, n := range at {
		out[n]++
	}
	return out
}

// TestFailover: a dead wave's twelve instances spread over the two survivors, six each.
func TestFailover(t *testing.T) {
	ws := append(waves(true, "b", "c"), Wave{Node: "a"})
	insts := instances("a", 12, 0.05)
	p := Make(ws, insts, Goals{Band: 0.2}, now)
	if !p.Balanced || len(p.Moves) != 12 {
		t.Fatalf("plan %+v: want 12 failover moves, balanced", p)
	}
	for _, m := range p.Moves {
		if m.Reason != ReasonFailover || m.From != "a" || m.To == "a" {
			t.Errorf("move %+v: want a failover off a", m)
		}
	}
	if c := counts(insts, p); c["b"] != 6 || c["c"] != 6 {
		t.Errorf("after the failover: %v, want 6 and 6", c)
	}
	if _, ok := p.After["a"]; ok {
		t.Errorf("the dead wave has a predicted load: %v", p.After)
	}
}

// TestFailoverSpreadsIdleInstances: instances that cost nothing (no floor, no rows) still
// spread over the survivors, by count.
func TestFailoverSpreadsIdleInstances(t *testing.T) {
	ws := append(waves(true, "b", "c", "d"), Wave{Node: "a"})
	insts := instances("a", 10, 0)
	p := Make(ws, insts, Goals{}, now)
	c := counts(insts, p)
	if c["b"]+c["c"]+c["d"] != 10 || max(c["b"], c["c"], c["d"])-min(c["b"], c["c"], c["d"]) > 1 {
		t.Errorf("after the failover of 10 idle instances: %v, want counts within 1 of each other", c)
	}
}

// TestFailoverSpreadsByLoad: the survivor with less load gets more of the instances.
func TestFailoverSpreadsByLoad(t *testing.T) {
	ws := []Wave{{Node: "b", Alive: true, Base: 0.3}, {Node: "c", Alive: true}, {Node: "a"}}
	insts := instances("a", 10, 0.1)
	p := Make(ws, insts, Goals{Band: 1}, now)
	if c := counts(insts, p); c["c"] != 6+1 && c["c"] != 6 {
		t.Errorf("after the failover: %v: want c (idle) to take three more than b (0.3 loaded), ±1", c)
	}
	if math.Abs(p.After["b"]-p.After["c"]) > 0.1+1e-9 {
		t.Errorf("loads after %v: want within one instance's cost", p.After)
	}
}

func TestHardMax(t *testing.T) {
	ws := waves(true, "hot", "cool")
	insts := append(instances("hot", 3, 0.3), Instance{ID: "small", Node: "hot", Cost: 0.05})
	// hot: 0.95, cool: 0. Above 0.9 by 0.05: the smallest instance that suffices moves.
	p := Make(ws, insts, Goals{HardMax: 0.9, Band: 10}, now)
	if len(p.Moves) != 1 || p.Moves[0].Instance != "small" || p.Moves[0].Reason != ReasonHardMax {
		t.Fatalf("moves %+v: want the small instance off the hot wave", p.Moves)
	}
	if got := p.After["hot"]; got > 0.9 {
		t.Errorf("hot after: %.3f, above the threshold", got)
	}
}

// TestSpreadConverges: skewed costs on one wave, three empty ones: the plan reaches the
// band, every move narrows the spread, and the loads add up.
func TestSpreadConverges(t *testing.T) {
	ws := waves(true, "w1", "w2", "w3", "w4")
	var insts []Instance
	for i, c := range []float64{0.4, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05} {
		insts = append(insts, Instance{ID: fmt.Sprint("i", i), Node: "w1", Cost: c})
	}
	p := Make(ws, insts, Goals{Band: 0.15}, now)
	if !p.Balanced || p.SpreadAfter > 0.15+1e-9 {
		t.Fatalf("plan %+v: want within the band 0.15", p)
	}
	if p.SpreadBefore < 1.39 || p.SpreadBefore > 1.41 {
		t.Errorf("spread before %.3f, want 1.4", p.SpreadBefore)
	}
	var sum float64
	for _, l := range p.After {
		sum += l
	}
	if math.Abs(sum-1.4) > 1e-9 {
		t.Errorf("loads after add up to %.3f, want 1.4 (%v)", sum, p.After)
	}
	for _, m := range p.Moves {
		if m.Reason != ReasonSpread || m.FromLoad[1] != m.FromLoad[0]-m.Cost || m.ToLoad[1] != m.ToLoad[0]+m.Cost {
			t.Errorf("move %+v: want a spread move whose predicted loads follow its cost", m)
		}
	}
	if len(p.Moves) > 5 {
		t.Errorf("%d moves: more than the five the greedy needs here", len(p.Moves))
	}
}

// TestScaleOut: a wave that joins empty takes instances until the spread is in band.
func TestScaleOut(t *testing.T) {
	ws := waves(true, "a", "b", "new")
	insts := append(instances("a", 6, 0.1), instances("b", 6, 0.1)...)
	p := Make(ws, insts, Goals{Band: 0.15}, now)
	c := counts(insts, p)
	if !p.Balanced || c["new"] != 4 || c["a"] != 4 || c["b"] != 4 {
		t.Fatalf("after scale-out %v (plan %+v): want 4 each", c, p)
	}
}

func TestPinnedAndCooldown(t *testing.T) {
	ws := waves(true, "a", "b")
	insts := []Instance{
		{ID: "pinned", Node: "a", Cost: 0.5, Pinned: true},
		{ID: "recent", Node: "a", Cost: 0.5, MovedAt: now.Add(-time.Minute)},
		{ID: "old", Node: "a", Cost: 0.2, MovedAt: now.Add(-time.Hour)},
	}
	p := Make(ws, insts, Goals{Band: 0.1, Cooldown: 10 * time.Minute}, now)
	if len(p.Moves) != 1 || p.Moves[0].Instance != "old" {
		t.Fatalf("moves %+v: want only the instance past its cooldown", p.Moves)
	}
	if p.Balanced || !strings.Contains(p.Unmet, "spread") {
		t.Errorf("balanced %v, unmet %q: want the spread goal unmet and said", p.Balanced, p.Unmet)
	}
	// A dead wave's pinned instance still moves: availability comes first.
	p = Make([]Wave{{Node: "b", Alive: true}, {Node: "a"}}, insts[:1], Goals{Band: 1}, now)
	if len(p.Moves) != 1 || p.Moves[0].Reason != ReasonFailover {
		t.Errorf("moves %+v: want the pinned instance moved off its dead wave", p.Moves)
	}
}

func TestMaxMovesAndNoWave(t *testing.T) {
	insts := instances("a", 20, 0.1)
	p := Make(waves(true, "a", "b"), insts, Goals{Band: 0.05, MaxMoves: 3}, now)
	if len(p.Moves) != 3 || p.Balanced || !strings.Contains(p.Unmet, "3 moves") {
		t.Errorf("plan %+v: want three moves and the limit named", p)
	}
	p = Make(waves(false, "a"), insts, Goals{}, now)
	if len(p.Moves) != 0 || p.Unmet != "no live wave" {
		t.Errorf("plan %+v: want no move and \"no live wave\"", p)
	}
}

// TestMakeKeepsItsArguments: planning twice gives the same plan.
func TestMakeKeepsItsArguments(t *testing.T) {
	ws := waves(true, "a", "b", "c")
	insts := instances("a", 9, 0.1)
	first := Make(ws, insts, Goals{Band: 0.05}, now)
	if insts[0].Node != "a" || !insts[0].MovedAt.IsZero() {
		t.Fatalf("Make changed its argument: %+v", insts[0])
	}
	if second := Make(ws, insts, Goals{Band: 0.05}, now); fmt.Sprint(second) != fmt.Sprint(first) {
		t.Errorf("two plans differ:\n%+v\n%+v", first, second)
	}
}

// fleet is n instances of random costs on w waves, skewed: a tenth of the waves hold
// half of them.
func fleet(w, n int) ([]Wave, []Instance) {
	r := rand.New(rand.NewPCG(1, 2))
	ws := make([]Wave, w)
	for i := range ws {
		ws[i] = Wave{Node: fmt.Sprintf("wave-%04d", i), Alive: true, Base: 0.05 * r.Float64()}
	}
	insts := make([]Instance, n)
	for i := range insts {
		node := r.IntN(w)
		if i%2 == 0 {
			node = r.IntN(max(1, w/10))
		}
		insts[i] = Instance{ID: fmt.Sprintf("inst-%05d", i), Node: ws[node].Node, Cost: 0.001 + 0.02*r.ExpFloat64()}
	}
	return ws, insts
}

// BenchmarkMake: a plan for 10,000 instances on 1,000 waves.
func BenchmarkMake(b *testing.B) {
	ws, insts := fleet(1000, 10000)
	var p Plan
	for b.Loop() {
		p = Make(ws, insts, Goals{HardMax: 0.9, Band: 0.1, MaxMoves: 100000}, now)
	}
	b.ReportMetric(float64(len(p.Moves)), "moves")
	if !p.Balanced {
		b.Fatalf("unbalanced: %s", p.Unmet)
	}
}
