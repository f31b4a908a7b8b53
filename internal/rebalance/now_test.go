package rebalance

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// nowFleet: three waves level at their daily peaks (0.5 each, slots 1 and 2), uneven
// now (slot 0): a runs two instances busy only now (0.2 each) beside its day-long one,
// b and c only their day-long ones. busy is the now-instances' cost per slot; giant,
// when above 0, adds a wave g that runs one instance costing that much in every slot.
func nowFleet(busy []float64, giant float64) ([]Wave, []Instance) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1},
		{Node: "c", Alive: true, Capacity: 1, Row: 1}}
	day := []float64{0.1, 0.5 - 2*busy[1], 0.5 - 2*busy[2]}
	insts := []Instance{
		{ID: "pa", Node: "a", Rows: day}, {ID: "n1", Node: "a", Rows: busy}, {ID: "n2", Node: "a", Rows: busy},
		{ID: "pb", Node: "b", Rows: []float64{0.1, 0.5, 0.5}}, {ID: "pc", Node: "c", Rows: []float64{0.1, 0.5, 0.5}},
	}
	if giant > 0 {
		ws = append(ws, Wave{Node: "g", Alive: true, Capacity: 1, Row: 1})
		insts = append(insts, Instance{ID: "giant", Node: "g", Rows: []float64{giant}})
	}
	return ws, insts
}

// TestLevelNow: the level's second pass evens the load now out among waves level at
// their daily peaks, with moves that raise no daily peak; only once the highest stands
// a band above the fleet's level now; and not when a wave set aside (one large
// instance) is the highest now anyway.
func TestLevelNow(t *testing.T) {
	g := Goals{HardMax: 0.95, Band: 0.03, LevelGain: 0.01, LevelSettle: 24 * time.Hour, NoShare: true}
	ws, insts := nowFleet([]float64{0.2, 0, 0}, 0)
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 || !p.Balanced {
		t.Fatalf("without LevelNow %+v: want no move, balanced (the daily peaks are level)", p)
	}
	g.LevelNow = []int{0}
	p := Make(ws, insts, g, now)
	if len(p.Moves) != 1 || p.Moves[0].From != "a" || p.Moves[0].Instance[0] != 'n' || !p.Balanced {
		t.Fatalf("plan %+v: want one move of a's now-instances off a, balanced", p)
	}
	for n, u := range p.After {
		if math.Abs(u-0.5) > 1e-9 {
			t.Errorf("%s's daily peak %.3f after the plan: want it left at 0.5", n, u)
		}
	}

	// Busy now and a little at hour 1: moved anywhere, it would raise that wave's daily
	// peak above the level the first pass reached (0.5); nor can a swap help.
	ws, insts = nowFleet([]float64{0.2, 0.1, 0}, 0)
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Errorf("moves that raise a daily peak %+v: want none", p.Moves)
	}

	// Hysteresis: a's excess now (0.5 against the level 0.233) is within a band of 0.3.
	ws, insts = nowFleet([]float64{0.2, 0, 0}, 0)
	wide := g
	wide.Band, wide.LevelGain = 0.3, 0.1
	if p := Make(ws, insts, wide, now); len(p.Moves) != 0 {
		t.Errorf("highest now within a band of the level %+v: want none", p.Moves)
	}

	// A giant alone on g (0.9 in every slot) is set aside by the spread goal and stands
	// highest now: evening a, b and c out now would not lower the fleet's highest.
	ws, insts = nowFleet([]float64{0.2, 0, 0}, 0.9)
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Errorf("a wave set aside highest now %+v: want no move", p.Moves)
	}

	// Slots the loads do not have: nothing to level, and no panic.
	g.LevelNow = []int{0, 7}
	ws, insts = nowFleet([]float64{0.2, 0, 0}, 0)
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Errorf("a window outside the loads' slots %+v: want no move", p.Moves)
	}
}

// TestLevelNowTakesBackWhatDidNotLower: a (0.505) and b (0.5) are busy now, c and d
// not, all level at their daily peaks. The second level can lower a (one of its
// now-instances to c or d) but not b, whose now-instances moved an hour ago: the
// window's highest would fall by half a point, less than a step's gain, so the pass
// takes its move back and the plan is empty.
func TestLevelNowTakesBackWhatDidNotLower(t *testing.T) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1},
		{Node: "c", Alive: true, Capacity: 1, Row: 1}, {Node: "d", Alive: true, Capacity: 1, Row: 1}}
	day, busy := []float64{0.1, 0.5, 0.5}, []float64{0.2025, 0, 0}
	insts := []Instance{
		{ID: "pa", Node: "a", Rows: day}, {ID: "n1", Node: "a", Rows: busy}, {ID: "n2", Node: "a", Rows: busy},
		{ID: "pb", Node: "b", Rows: day}, {ID: "nb1", Node: "b", Rows: []float64{0.2, 0, 0}, MovedAt: now.Add(-time.Hour)},
		{ID: "nb2", Node: "b", Rows: []float64{0.2, 0, 0}, MovedAt: now.Add(-time.Hour)},
		{ID: "pc", Node: "c", Rows: day}, {ID: "pd", Node: "d", Rows: day},
	}
	g := Goals{HardMax: 0.9, Band: 0.03, LevelGain: 0.01, LevelSettle: 24 * time.Hour, LevelNow: []int{0}, NoShare: true}
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Errorf("b cannot come down now: moves %+v: want none", p.Moves)
	}
}

// TestLevelNowMustPay: n waves stand 3.5 points above the fleet's level now (two
// now-only instances of 0.035 beside a day-long one), n others as far below. One move
// from each high wave to a low one levels them all, lowering the highest by 3.5 gains
// of 0.01: 10 moves for 10 waves, 40 for 40, kept, since the price is per wave above
// the start (with a flat price of nowMovesPerGain a gain the 40 were taken back, and
// the 200-wave fleet's load now stayed at 1.11× greedy). One wave 4.5 points above and
// 39 at 2.5 (above the stop, below the start: the hour's drift lifting one wave over)
// take 40 moves too, for the one wave: they do not pay.
func TestLevelNowMustPay(t *testing.T) {
	fleet := func(high, mid int) ([]Wave, []Instance) {
		var ws []Wave
		var insts []Instance
		day := []float64{0.1, 0.5, 0.5}
		for i := range 2 * (high + mid) {
			node := fmt.Sprintf("w%02d", i)
			ws = append(ws, Wave{Node: node, Alive: true, Capacity: 1, Row: 1})
			insts = append(insts, Instance{ID: node + "-day", Node: node, Rows: day})
			piece := []float64{0.035, 0, 0}
			if i >= high {
				piece = []float64{0.025, 0, 0}
			}
			if i < high+mid {
				insts = append(insts, Instance{ID: node + "-a", Node: node, Rows: piece}, Instance{ID: node + "-b", Node: node, Rows: piece})
			}
		}
		return ws, insts
	}
	g := Goals{HardMax: 0.9, Band: 0.03, LevelGain: 0.01, LevelSettle: 24 * time.Hour, LevelNow: []int{0}, NoShare: true, MaxMoves: 1000}
	for _, n := range []int{10, 40} {
		ws, insts := fleet(n, 0)
		if p := Make(ws, insts, g, now); len(p.Moves) != n {
			t.Errorf("%d high waves: %d moves, want the %d that level them", n, len(p.Moves), n)
		}
	}
	ws, insts := fleet(1, 39)
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Errorf("one wave above the start, 39 below it: %d moves, want none (40 for 3.5 gains of one wave)", len(p.Moves))
	}
}
