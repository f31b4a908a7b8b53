package rebalance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// slowAndFast is two waves of 4 cores, "slow" pricing a row twice what "fast" does,
// and n instances of 5,000 rows/s on slow: each costs a core there, half a core on fast.
func slowAndFast(n int) ([]Wave, []Instance) {
	ws := []Wave{
		{Node: "slow", Alive: true, Capacity: 4, Row: 2e-4},
		{Node: "fast", Alive: true, Capacity: 4, Row: 1e-4},
	}
	var insts []Instance
	for i := range n {
		insts = append(insts, Instance{ID: fmt.Sprint("i", i), Node: "slow", Rows: []float64{5000}, Bytes: []float64{0}})
	}
	return ws, insts
}

// TestGreedyReferenceDrawsTheLines: four instances on the slow wave make a level of 0.5
// (4 cores of load on 8), but a greedy assignment from scratch runs three on fast (1.5
// cores, 0.375) and one on slow (0.25): the lines stand 1.08× that peak, not the level
// the current assignment's prices make.
func TestGreedyReferenceDrawsTheLines(t *testing.T) {
	ws, insts := slowAndFast(4)
	g := linesGoals()
	st, _ := newState(ws, insts, g, now, search{ref: &refs{}})
	live := st.live()
	if got := st.greedyPeak(live, -1); math.Abs(got-0.375) > 1e-9 {
		t.Fatalf("greedy peak %.4f, want 0.375", got)
	}
	if lv := slices.Max(levels(live)); math.Abs(lv-0.5) > 1e-9 {
		t.Fatalf("level %.4f, want 0.5", lv)
	}
	l := st.newLines(live)
	if want := 1.08 * 0.375; math.Abs(l.day-want) > 1e-9 || math.Abs(l.now[0]-want) > 1e-9 {
		t.Fatalf("lines day %.4f, now %.4f: want %.4f, 1.08× the greedy peak", l.day, l.now[0], want)
	}
	// Where the level is the lower, it draws them: the same instances split by the
	// greedy assignment already, one more on fast.
	insts[0].Node, insts[1].Node, insts[2].Node = "fast", "fast", "fast"
	insts = append(insts, Instance{ID: "extra", Node: "fast", Rows: []float64{5000}, Bytes: []float64{0}})
	st, _ = newState(ws, insts, g, now, search{ref: &refs{}})
	live = st.live()
	l = st.newLines(live)
	lv := slices.Max(levels(live)) // (1 + 4×0.5) / 8
	if gp := st.greedyPeak(live, -1); lv > gp {
		t.Fatalf("level %.4f above the greedy peak %.4f: the case needs it under", lv, gp)
	}
	if math.Abs(l.day-1.08*lv) > 1e-9 {
		t.Fatalf("lines day %.4f, want 1.08× the level %.4f", l.day, lv)
	}
}

// TestGreedyPeakOnManyWaves: on more waves than exactWaves the greedy assignment weighs
// each instance on the least loaded few, and still spreads equal instances evenly.
func TestGreedyPeakOnManyWaves(t *testing.T) {
	var ws []Wave
	for i := range 100 {
		ws = append(ws, Wave{Node: fmt.Sprintf("w%03d", i), Alive: true, Capacity: 4, Row: 1e-4})
	}
	var insts []Instance
	for i := range 400 { // 0.5 cores each: four a wave, 0.5
		insts = append(insts, Instance{ID: fmt.Sprint("i", i), Node: "w000", Rows: []float64{5000}, Bytes: []float64{0}})
	}
	st, _ := newState(ws, insts, linesGoals(), now, search{ref: &refs{}})
	if got := st.greedyPeak(st.live(), -1); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("greedy peak %.4f on 100 waves, want 0.5", got)
	}
}

// TestShedSetFewestOfLeastLoad: a wave that must shed 0.28 of its load sheds one
// instance, and of those that do it alone the smallest (0.3, not 0.5), leaving the
// destinations the most room.
func TestShedSetFewestOfLeastLoad(t *testing.T) {
	ws := []Wave{{Node: "hot", Alive: true, Capacity: 1}, {Node: "cold", Alive: true, Capacity: 1}}
	var insts []Instance
	for i, c := range []float64{0.5, 0.3, 0.25, 0.1} {
		insts = append(insts, Instance{ID: fmt.Sprint("h", i), Node: "hot", Cost: c})
	}
	insts = append(insts, Instance{ID: "c", Node: "cold", Cost: 0.05})
	st, _ := newState(ws, insts, linesGoals(), now, search{ref: &refs{}})
	l := st.newLines(st.live())
	l.day, l.now[0] = 0.87, 0.87 // hot, at 1.15, must shed 0.28
	hot := st.by["hot"]
	set := st.shedSet(l, hot, nil, nil)
	if len(set) != 1 || set[0].ID != "h1" {
		var ids []string
		for _, in := range set {
			ids = append(ids, in.ID)
		}
		t.Fatalf("shed %v, want [h1] (0.3: the least load that one instance sheds)", ids)
	}
	// Without h1 (no room for it), two must go: 0.5 alone is the fewest.
	set = st.shedSet(l, hot, map[*instState]bool{set[0]: true}, nil)
	if len(set) != 1 || set[0].ID != "h0" {
		t.Fatalf("shed %d instances, want h0 alone", len(set))
	}
}

// TestPackingSheds: a wave over its lines by a large instance and a smaller one, and a
// wave of small instances over by a little, beside two with room: packing moves the
// smaller of the first (the least load that brings it within, where the large one would
// also fit) and one small instance of the second, two moves, and every wave ends within
// its lines (1.08× the large instance alone: 0.54).
func TestPackingSheds(t *testing.T) {
	ws := []Wave{
		{Node: "big", Alive: true, Capacity: 1},
		{Node: "small", Alive: true, Capacity: 1},
		{Node: "room-a", Alive: true, Capacity: 1},
		{Node: "room-b", Alive: true, Capacity: 1},
	}
	insts := []Instance{
		{ID: "large", Node: "big", Cost: 0.5}, {ID: "b1", Node: "big", Cost: 0.3},
		{ID: "ra", Node: "room-a", Cost: 0.1}, {ID: "rb", Node: "room-b", Cost: 0.1},
	}
	for i := range 6 {
		insts = append(insts, Instance{ID: fmt.Sprint("s", i), Node: "small", Cost: 0.1})
	}
	g := linesGoals()
	g.MaxMoves, g.Budget = 100, time.Minute
	p := plan(ws, insts, g, now, search{pack: true, ref: &refs{}})
	if !p.Balanced || len(p.Moves) != 2 {
		t.Fatalf("balanced %v (%s) in %d moves, want 2: %+v", p.Balanced, p.Unmet, len(p.Moves), p.Moves)
	}
	from := map[string]string{}
	for _, m := range p.Moves {
		from[m.From] = m.Instance
		if m.To != "room-a" && m.To != "room-b" {
			t.Fatalf("a move onto a wave without room: %+v", m)
		}
	}
	if from["big"] != "b1" || from["small"] == "" {
		t.Fatalf("moves %+v: want b1 off big and one off small", p.Moves)
	}
}

// TestMakeChoosesTheSearchThatArrivesSooner: Make plans with packing where its trial
// brings every wave within reach of its lines clearly sooner than the descent's
// (trialMargin), and with the descent otherwise; on twenty random fleets each is taken.
func TestMakeChoosesTheSearchThatArrivesSooner(t *testing.T) {
	packs := 0
	for seed := range uint64(20) {
		ws, insts := randomLinesFleet(seed)
		g := linesGoals()
		g.MaxMoves, g.Budget = 20, time.Minute
		tg := g
		tg.MaxMoves, tg.Budget = trialMoves(g.MaxMoves), g.Budget/4
		d, k := &trialScore{}, &trialScore{}
		plan(ws, insts, tg, now, search{ref: &refs{}, trial: d})
		plan(ws, insts, tg, now, search{pack: true, ref: &refs{}, trial: k})
		if d.cut || k.cut {
			t.Fatalf("seed %d: a trial ran out of a 15 s budget", seed)
		}
		want := k.within >= 0 && (d.within < 0 || float64(k.within) <= (1-trialMargin)*float64(d.within))
		if s := chooseSearch(ws, insts, g, now); s.pack != want || s.trialCut {
			t.Errorf("seed %d: chose packing %v (trials cut: %v); the trials reached the lines after %d (descent) and %d (packing) moves", seed, s.pack, s.trialCut, d.within, k.within)
		}
		if want {
			packs++
		}
		// The plan names the search it took, and did not run out of time.
		name := map[bool]string{false: "descent", true: "packing"}[want]
		if p := Make(ws, insts, g, now); p.Search != name || p.OutOfTime {
			t.Errorf("seed %d: plan's search %q, out of time %v: want %q, false", seed, p.Search, p.OutOfTime, name)
		}
	}
	if packs == 0 || packs == 20 {
		t.Errorf("packing clearly sooner on %d of 20 fleets: the cases want both searches taken", packs)
	}
}

// TestPlanSaysItRanOutOfTime: a plan whose budget is up before its search is done says
// so (out_of_time), whether its trials or the search itself ran out, and plans with the
// descent; one planned in time does not say it, and a plan without lines names no search.
func TestPlanSaysItRanOutOfTime(t *testing.T) {
	ws, insts := randomLinesFleet(1)
	g := linesGoals()
	g.MaxMoves, g.Budget = 20, time.Nanosecond
	p := Make(ws, insts, g, now)
	if !p.OutOfTime || p.Search != "descent" {
		t.Errorf("plan with a budget of 1 ns: search %q, out of time %v; want the descent, out of time", p.Search, p.OutOfTime)
	}
	// The trials in time, the search out of it: a plan of the descent given no time.
	st := search{ref: &refs{}}
	g.Budget = time.Nanosecond
	if p := plan(ws, insts, g, now, st); !p.OutOfTime {
		t.Errorf("a search given 1 ns: not out of time (%d moves, unmet %q)", len(p.Moves), p.Unmet)
	}
	g.Budget = time.Minute
	if p := Make(ws, insts, g, now); p.OutOfTime || p.Search == "" {
		t.Errorf("plan with a minute: search %q, out of time %v; want a search named, in time", p.Search, p.OutOfTime)
	}
	g.Enough, g.LevelNow = 0, nil // the band instead of lines
	if p := Make(ws, insts, g, now); p.Search != "" || p.OutOfTime {
		t.Errorf("plan without lines: search %q, out of time %v; want none, in time", p.Search, p.OutOfTime)
	}
}

// randomLinesFleet is 24 waves of 2, 4 and 8 cores, priced apart by up to ±40 %, and
// 400 instances of lognormal rows/s, each on a wave drawn at random.
func randomLinesFleet(seed uint64) ([]Wave, []Instance) {
	r := rand.New(rand.NewPCG(seed, 30))
	var ws []Wave
	for i := range 24 {
		ws = append(ws, Wave{Node: fmt.Sprintf("w%02d", i), Alive: true, Capacity: float64(int(2) << (i % 3)),
			Row: 1e-4 * (0.6 + 0.8*r.Float64()), Base: 0.1})
	}
	var insts []Instance
	for i := range 400 {
		rows := 1500 * math.Exp(r.NormFloat64())
		insts = append(insts, Instance{ID: fmt.Sprintf("i%03d", i), Node: ws[r.IntN(len(ws))].Node, Rows: []float64{rows}, Bytes: []float64{0}})
	}
	return ws, insts
}
