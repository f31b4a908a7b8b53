package rebalance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// linesGoals are the judge's goals in the utilisation model, on two slots: slot 0 is
// now (the window), and the day's line covers both.
func linesGoals() Goals {
	return Goals{HardMax: 0.95, Band: 0.03, LevelGain: 0.01, Enough: 1.08, LevelNow: []int{0}, NoShare: true}
}

// TestLinesMixTheCycles: peaks within the band can all stand above what the fleet can
// run at. Two waves peak at opposite slots (0.6 each) beside a flat one (0.58): the
// spread, 0.02, is within the band of 0.03, yet swapping a morning for an evening
// instance brings both to 0.4 (the fleet's level is 0.46, its lines 0.497). The band
// alone plans nothing; the lines make that swap, and then nothing more: no step lowers
// the flat wave, which the lines set aside, and the plan says so (unmet, naming it).
func TestLinesMixTheCycles(t *testing.T) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1},
		{Node: "c", Alive: true, Capacity: 1, Row: 1}}
	morning, evening, flat := []float64{0.3, 0.1}, []float64{0.1, 0.3}, []float64{0.29, 0.29}
	insts := []Instance{
		{ID: "m1", Node: "a", Rows: morning}, {ID: "m2", Node: "a", Rows: morning},
		{ID: "e1", Node: "b", Rows: evening}, {ID: "e2", Node: "b", Rows: evening},
		{ID: "f1", Node: "c", Rows: flat}, {ID: "f2", Node: "c", Rows: flat},
	}
	band := Goals{HardMax: 0.7, Band: 0.03, NoShare: true}
	if p := Make(ws, insts, band, now); len(p.Moves) != 0 || !p.Balanced {
		t.Fatalf("the band alone %+v: want no move, balanced (the spread is within the band)", p)
	}
	p := Make(ws, insts, linesGoals(), now)
	if len(p.Moves) != 2 || p.Moves[1].Swap == "" || p.Balanced || !strings.Contains(p.Unmet, "lines: c over its lines") {
		t.Fatalf("plan %+v: want one swap of a morning and an evening instance, unmet for c", p)
	}
	if math.Abs(p.After["a"]-0.4) > 1e-9 || math.Abs(p.After["b"]-0.4) > 1e-9 || math.Abs(p.PeakAfter-0.58) > 1e-9 {
		t.Errorf("after %v: want a and b at 0.4, the flat wave's 0.58 the highest", p.After)
	}
}

// nowFleet: three waves level at their daily peaks (0.5 each, slots 1 and 2), uneven
// now (slot 0): a runs two instances busy only now (busy: their cost per slot) beside
// its day-long one, b and c only their day-long ones.
func nowFleet(busy []float64) ([]Wave, []Instance) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1},
		{Node: "c", Alive: true, Capacity: 1, Row: 1}}
	day := []float64{0.1, 0.5 - 2*busy[1], 0.5 - 2*busy[2]}
	return ws, []Instance{
		{ID: "pa", Node: "a", Rows: day}, {ID: "n1", Node: "a", Rows: busy}, {ID: "n2", Node: "a", Rows: busy},
		{ID: "pb", Node: "b", Rows: []float64{0.1, 0.5, 0.5}}, {ID: "pc", Node: "c", Rows: []float64{0.1, 0.5, 0.5}},
	}
}

// TestLinesLevelTheHourItIsIn: a fleet level at its daily peaks can be uneven at the hour
// it is in. With now in the window, a's load now (0.5, its line 0.252: the fleet's level
// now is 0.233, its largest instance now 0.2) sends one of its now-instances to another
// wave, where it raises no daily peak; a second move would only shift the excess to the
// third wave. Without the window the same fleet is within the day's line: no move.
func TestLinesLevelTheHourItIsIn(t *testing.T) {
	ws, insts := nowFleet([]float64{0.2, 0, 0})
	g := linesGoals()
	g.LevelNow = nil
	if p := Make(ws, insts, g, now); len(p.Moves) != 0 {
		t.Fatalf("without the window %+v: want no move (the daily peaks are level)", p.Moves)
	}
	p := Make(ws, insts, linesGoals(), now)
	if len(p.Moves) != 1 || p.Moves[0].From != "a" || p.Moves[0].Instance[0] != 'n' {
		t.Fatalf("plan %+v: want one move of a's now-instances off a", p.Moves)
	}
	for n, u := range p.After {
		if math.Abs(u-0.5) > 1e-9 {
			t.Errorf("%s's daily peak %.3f after the plan: want it left at 0.5", n, u)
		}
	}
	// Busy now and at slot 1 too: moved anywhere, it would raise a daily peak over the
	// day's line (0.54) as much as it lowers a's load now; a's score stays the highest.
	ws, insts = nowFleet([]float64{0.2, 0.1, 0})
	if p := Make(ws, insts, linesGoals(), now); len(p.Moves) > 1 {
		t.Errorf("moves %+v: want at most one", p.Moves)
	}
}

// TestLinesOverTheLargestInstance: the lines stand over the floor of the hardest instance
// to place, not only over the fleet's level: beside a wave that one instance holds at
// 0.9, every wave at 0.5 is within the lines (0.972) and nothing moves, as moving them
// could not lower the fleet's highest. A wave that carries small instances beside such a
// large one sheds them down to its lines, however small each (a wave well over its lines
// takes moves of a fraction of a LevelGain).
func TestLinesOverTheLargestInstance(t *testing.T) {
	ws, insts := nowFleet([]float64{0.2, 0, 0})
	ws = append(ws, Wave{Node: "g", Alive: true, Capacity: 1, Row: 1})
	insts = append(insts, Instance{ID: "giant", Node: "g", Rows: []float64{0.9}})
	if p := Make(ws, insts, linesGoals(), now); len(p.Moves) != 0 {
		t.Fatalf("beside a giant at 0.9 %+v: want no move", p.Moves)
	}

	// A 10-core wave holding one instance of 5 cores (pinned: else it would move, alone,
	// to an empty wave) and 40 of 0.05 (0.7), beside three empty ones: the floor is 0.5,
	// the lines 0.54, and each small instance lowers the wave by half a point, under the
	// LevelGain of a point.
	ws = []Wave{{Node: "big", Alive: true, Capacity: 10, Row: 1}}
	insts = []Instance{{ID: "large", Node: "big", Rows: []float64{5}, Pinned: true}}
	for i := range 40 {
		insts = append(insts, Instance{ID: "small-" + string(rune('a'+i/26)) + string(rune('a'+i%26)), Node: "big", Rows: []float64{0.05}})
	}
	for _, n := range []string{"x", "y", "z"} {
		ws = append(ws, Wave{Node: n, Alive: true, Capacity: 10, Row: 1})
	}
	g := linesGoals()
	g.MaxMoves = 100
	p := Make(ws, insts, g, now)
	if p.After["big"] > 0.54+1e-9 || len(p.Moves) == 0 {
		t.Fatalf("plan of %d moves, big at %.3f after: want it within its lines (0.54)", len(p.Moves), p.After["big"])
	}
	for _, m := range p.Moves {
		if m.Instance == "large" {
			t.Errorf("the large instance moved: want only small ones")
		}
	}
	if len(p.Moves) > 33 {
		t.Errorf("%d moves: want the fewest that bring big within its lines (32: 16 points at half a point each)", len(p.Moves))
	}
}

// TestLinesMoveLimit: a plan cut short by its move limit says so.
func TestLinesMoveLimit(t *testing.T) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1}}
	var insts []Instance
	for i := range 10 {
		insts = append(insts, Instance{ID: fmt.Sprintf("a-%02d", i), Node: "a", Rows: []float64{0.08}})
	}
	g := linesGoals()
	g.MaxMoves = 2
	p := Make(ws, insts, g, now)
	if len(p.Moves) != 2 || p.Balanced || !strings.Contains(p.Unmet, "a stands") || !strings.Contains(p.Unmet, "reached its 2 moves") {
		t.Fatalf("plan %+v: want 2 moves, unmet for the move limit", p)
	}
	g.MaxMoves = 20
	if p := Make(ws, insts, g, now); !p.Balanced || len(p.Moves) > 5 {
		t.Fatalf("plan %+v: want at most 5 moves, balanced", p)
	}
}

// TestLinesErrAndStart: a wave stands within its lines only when it surely does (half
// its fit's error over its prediction), and a plan starts only for a wave more than
// linesStart over them, as the figures drift between plans by about that.
func TestLinesErrAndStart(t *testing.T) {
	// Three waves of 1 core of small instances: a at aLoad, b at 0.45, c at 0.505; with a
	// at 0.545 the level is 0.5 and the lines 0.54.
	mk := func(aLoad float64, err float64) ([]Wave, []Instance) {
		ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1, Err: err}, {Node: "b", Alive: true, Capacity: 1, Row: 1},
			{Node: "c", Alive: true, Capacity: 1, Row: 1}}
		var insts []Instance
		add := func(node string, n int, load float64) {
			for i := range n {
				insts = append(insts, Instance{ID: fmt.Sprintf("%s-%02d", node, i), Node: node, Rows: []float64{load / float64(n)}})
			}
		}
		add("a", 11, aLoad)
		add("b", 9, 0.45)
		add("c", 10, 0.505)
		return ws, insts
	}
	// a at 0.545, 1 % over its line: within the start, no plan.
	ws, insts := mk(0.545, 0)
	if p := Make(ws, insts, linesGoals(), now); len(p.Moves) != 0 {
		t.Fatalf("a 1 %% over its lines: %+v, want no move", p.Moves)
	}
	// The same wave with an error of 0.04 cores stands (0.545 + 0.02) / 0.54, 4.6 % over:
	// one of its instances moves, to b.
	ws, insts = mk(0.545, 0.04)
	if p := Make(ws, insts, linesGoals(), now); len(p.Moves) != 1 || p.Moves[0].From != "a" || p.Moves[0].To != "b" {
		t.Fatalf("a surely over its lines: %+v, want one move from a to b", p.Moves)
	}
	// 0.6 without an error: 10 % over, and two moves bring it within its lines (0.54 ×
	// the new level).
	ws, insts = mk(0.6, 0)
	if p := Make(ws, insts, linesGoals(), now); len(p.Moves) == 0 || len(p.Moves) > 2 || p.After["a"] > 1.08*(0.6+0.45+0.505)/3+1e-9 {
		t.Fatalf("a 10 %% over its lines: %+v, want at most two moves that bring it within them", p)
	}
}

// TestLinesLeaveWhatIsNotDue: a plan works on the waves more than half the start
// threshold over their lines when it begins and on those its moves raise; a wave a
// little over its lines that neither was nor received anything is left for a later plan. Otherwise one
// wave past the threshold set a plan to polish every wave just over its lines, and on
// the simulated homogeneous fleet a round began at 1.022× its lines to make 20 moves
// that left the true peak where it was.
func TestLinesLeaveWhatIsNotDue(t *testing.T) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1},
		{Node: "c", Alive: true, Capacity: 1, Row: 1}, {Node: "d", Alive: true, Capacity: 1, Row: 1}}
	var insts []Instance
	add := func(node string, n int, load float64) {
		for i := range n {
			insts = append(insts, Instance{ID: fmt.Sprintf("%s-%02d", node, i), Node: node, Rows: []float64{load / float64(n)}})
		}
	}
	// The level is 0.48725 and the lines 0.5262: a stands 1.18× them, c 1.005×.
	add("a", 11, 0.62)
	add("b", 9, 0.40)
	add("c", 10, 0.529)
	add("d", 8, 0.40)
	p := Make(ws, insts, linesGoals(), now)
	if len(p.Moves) == 0 {
		t.Fatalf("plan %+v: want a's excess moved", p)
	}
	for _, m := range p.Moves {
		if m.From != "a" || m.To == "c" {
			t.Errorf("move %+v: want every move off a, none to c", m)
		}
	}
	if line := 1.08 * (0.62 + 0.40 + 0.529 + 0.40) / 4; p.After["a"] > line+1e-9 || math.Abs(p.After["c"]-0.529) > 1e-9 {
		t.Errorf("after %v: want a within its line %.4f, c left at 0.529", p.After, line)
	}
}

// TestScoreWithin: the step search's early-stopping score is scoreAfter to the bit when
// that is at most the cut and the wave stays within the hard max, and +Inf otherwise, on
// random waves, moves and lines (the plans it serves must not change by a bit).
func TestScoreWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const slots = 25
	vec := func(scale float64) []float64 {
		v := make([]float64, slots)
		for k := range v {
			v[k] = scale * r.Float64()
		}
		return v
	}
	returned, refused := 0, 0
	for range 20000 {
		c := float64(1 + r.IntN(8))
		w := &waveState{Wave: Wave{Err: 0.05 * c * r.Float64()}, cap: c, load: vec(0.6 * c)}
		l := &lines{win: []int{0, 1 + r.IntN(24), 1 + r.IntN(24)}, day: 0.5 + 0.5*r.Float64(), now: []float64{0.5 + 0.5*r.Float64(), 0.5 + 0.5*r.Float64(), 0.5 + 0.5*r.Float64()}}
		out, in := vec(0.2*c), vec(0.2*c)
		if r.IntN(2) == 0 {
			out = make([]float64, slots)
		}
		cut, limit := 0.8+0.6*r.Float64(), 0.6+0.4*r.Float64()
		if r.IntN(4) == 0 {
			limit = math.Inf(1)
		}
		want := l.scoreAfter(w, out, in)
		got := l.scoreWithin(w, out, in, cut, limit)
		if want <= cut && w.peakAfter(out, in) <= limit+eps {
			returned++
			if got != want {
				t.Fatalf("scoreWithin = %v, want scoreAfter's %v (cut %v, limit %v)", got, want, cut, limit)
			}
		} else {
			refused++
			if !math.IsInf(got, 1) {
				t.Fatalf("scoreWithin = %v, want +Inf: scoreAfter %v over the cut %v, or peak %v over the limit %v", got, want, cut, w.peakAfter(out, in), limit)
			}
		}
	}
	if returned < 1000 || refused < 1000 {
		t.Fatalf("%d returned, %d refused: the draws test too little of one side", returned, refused)
	}
}

// TestLinesOverWithNoInstanceLeft: a wave whose own load (the process's base, the host's
// other work) stands over its line once its instances moved off is named as such in the
// unmet goal, not as pinned or cooling down (an outside trial read that of a wave with
// nothing left on it).
func TestLinesOverWithNoInstanceLeft(t *testing.T) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1, BaseSlots: []float64{0.6, 0.6}},
		{Node: "b", Alive: true, Capacity: 1, Row: 1}, {Node: "c", Alive: true, Capacity: 1, Row: 1}}
	insts := []Instance{{ID: "i1", Node: "a", Rows: []float64{0.1, 0.1}}, {ID: "i2", Node: "b", Rows: []float64{0.1, 0.1}}}
	p := Make(ws, insts, linesGoals(), now)
	if !strings.Contains(p.Unmet, "lines: a over its lines") || !strings.Contains(p.Unmet, "by its own load") || strings.Contains(p.Unmet, "pinned") {
		t.Fatalf("plan %+v: want a's base named as over its line with no instance left", p)
	}
}

// TestLinesKeepSmallInstancesOfAWaveOverByItsOwnLoad: three waves over their lines by
// their hosts' other work, each running four instances of a third of a point, and a new
// wave whose host reads lower. Moving the instances cannot bring the three within their
// lines (all gone would take a tenth of their excess), so they are not shed one by one
// onto the new wave (an outside trial: it took all 12; the share goal, off here, gives
// it at most its share, 3), and the goal names the three as over by their own load.
func TestLinesKeepSmallInstancesOfAWaveOverByItsOwnLoad(t *testing.T) {
	ws := []Wave{{Node: "d", Alive: true, Capacity: 1, Row: 1, BaseSlots: []float64{0.15, 0.15}}}
	var insts []Instance
	for _, n := range []string{"a", "b", "c"} {
		ws = append(ws, Wave{Node: n, Alive: true, Capacity: 1, Row: 1, BaseSlots: []float64{0.35, 0.35}})
		for i := range 4 {
			insts = append(insts, Instance{ID: fmt.Sprintf("%s%d", n, i), Node: n, Rows: []float64{0.003, 0.003}})
		}
	}
	p := Make(ws, insts, linesGoals(), now)
	onD := 0
	for _, m := range p.Moves {
		if m.To == "d" {
			onD++
		}
	}
	if onD > 3 {
		t.Fatalf("plan %+v: %d instances onto d, want at most its share, 3", p, onD)
	}
	if !strings.Contains(p.Unmet, "by its own load: without any instance") {
		t.Fatalf("plan %+v: want the three named as over by their own load", p)
	}
}

// TestLinesUnmetSaysWhatHoldsTheInstances: a wave over its lines whose instances are
// all cooling down says so, with how many and until when; it was named as over by its
// own load (the cooling instances counted as its load), which misled (an outside trial).
func TestLinesUnmetSaysWhatHoldsTheInstances(t *testing.T) {
	ws := []Wave{{Node: "a", Alive: true, Capacity: 1, Row: 1}, {Node: "b", Alive: true, Capacity: 1, Row: 1}, {Node: "c", Alive: true, Capacity: 1, Row: 1}}
	var insts []Instance
	for i := range 6 {
		insts = append(insts, Instance{ID: fmt.Sprintf("a%d", i), Node: "a", Rows: []float64{0.1, 0.1}, MovedAt: now.Add(-time.Minute)})
	}
	g := linesGoals()
	g.Cooldown = 10 * time.Minute
	p := Make(ws, insts, g, now)
	want := "lines: a over its lines (up to 2.78×), and no move or swap lowers it (a, of its instances: 6 cooling down, the first until " + now.Add(9*time.Minute).UTC().Format(time.RFC3339) + ")"
	if len(p.Moves) != 0 || p.Unmet != want {
		t.Fatalf("plan %+v,\nwant unmet %q", p, want)
	}
}
