package rebalance

import (
	"cmp"
	"math"
	"slices"
)

// Packing: the lines goal's first pass. The descent (holdToLines) lowers the highest
// wave one move at a time, each to where the pair ends lowest; it fills a destination
// with whatever the hottest wave sheds first, and a large instance of a wave that comes
// later finds no room left under any line: it goes over one, which sheds again (on the
// seeded 24-wave fleets, most of the moves the planner took beyond the exact minimum,
// BENCHMARKS.md). Packing decides first which instances must leave (per wave over its
// lines, the fewest that bring it within them, of the least load among such sets), then
// places them the largest first, each on the wave it leaves lowest, within packFill of
// its lines (worst fit decreasing, as bin packing does it). An instance that fits
// nowhere stays, its wave sheds others in its place, and what packing leaves over its
// lines the descent takes on.

// packItem is an instance packing moves off src.
type packItem struct {
	in   *instState
	src  *waveState
	size float64 // its load on src at its costliest slot
}

// packToLines moves off every wave due for the lines goal (as holdToLines starts: the
// highest over linesStart, each over half of it) the fewest instances that bring it
// within its lines, where they keep their destinations within theirs. It decides every
// destination first, the largest instance first; then it moves them the furthest over
// its lines first (each wave's largest first), so that a plan cut short by MaxMoves
// makes the moves that matter most, and the waves just over their lines come last.
func (st *state) packToLines() {
	live := st.live()
	if len(live) < 2 {
		return
	}
	l := st.newLines(live)
	var pk peaks
	scores := make([]float64, len(live))
	for i, w := range live {
		l.peaksOf(w, &pk)
		scores[i] = l.score(&pk)
	}
	if slices.Max(scores) <= 1+linesStart {
		return
	}
	st.emit(l, st.decide(l, live, scores))
}

// packFill is how near its lines packing fills a destination: half of linesStart under
// them, as the figures drift by about linesStart between plans.
const packFill = 1 - linesStart/2

// decision is a move packing decided on.
type decision struct {
	packItem
	dst  *waveState
	cost []float64
}

// decide places the instances that must leave the waves due (scores[i] is live[i]'s),
// the largest first, each on the wave it leaves lowest within packFill of its lines.
// An instance that fits nowhere stays, and its wave sheds others in its place when
// others can. Each source's decisions come in the order decided.
func (st *state) decide(l *lines, live []*waveState, scores []float64) []decision {
	var items []packItem
	src := map[*waveState]bool{}
	failed := map[*instState]bool{}
	for i, w := range live {
		if scores[i] <= 1+linesStart/2 {
			continue
		}
		set := st.shedSet(l, w, failed, nil)
		items = appendItems(items, set, w)
		src[w] = len(set) > 0
	}
	sortItems(items)
	limit := math.Inf(1)
	if st.goals.HardMax > 0 {
		limit = st.goals.HardMax
	}
	var dsts []int // live's indices of the waves that may receive
	for i, w := range live {
		if !src[w] {
			dsts = append(dsts, i)
		}
	}
	added := make([][]float64, len(live)) // what the decisions so far bring each destination
	gone := map[*waveState][]*instState{}
	var decided []decision
	c, in := make([]float64, st.slots), make([]float64, st.slots)
	for len(items) > 0 && !st.outOfTime() {
		it := items[0]
		items = items[1:]
		dst, best := -1, packFill+eps
		var dstCost []float64
		for _, i := range dsts {
			d := live[i]
			st.costInto(c, it.in.Instance, d)
			copy(in, c)
			if added[i] != nil {
				addTo(in, added[i], 1)
			}
			if s := l.scoreWithin(d, l.none, in, best, limit); s < best-eps || dst >= 0 && s <= best+eps && byCount(d, live[dst]) < 0 {
				dst, best, dstCost = i, s, slices.Clone(c)
			}
		}
		if dst < 0 {
			failed[it.in] = true
			items = slices.DeleteFunc(items, func(x packItem) bool { return x.src == it.src })
			items = appendItems(items, st.shedSet(l, it.src, failed, gone[it.src]), it.src)
			sortItems(items)
			continue
		}
		if added[dst] == nil {
			added[dst] = make([]float64, st.slots)
		}
		addTo(added[dst], dstCost, 1)
		gone[it.src] = append(gone[it.src], it.in)
		decided = append(decided, decision{packItem: it, dst: live[dst], cost: dstCost})
	}
	return decided
}

// emit makes the decided moves: each wave's in the order decided, the wave furthest
// over its lines first, until the plan's MaxMoves.
func (st *state) emit(l *lines, decided []decision) {
	bySrc := map[*waveState][]decision{}
	var srcs []*waveState
	for _, d := range decided {
		if bySrc[d.src] == nil {
			srcs = append(srcs, d.src)
		}
		bySrc[d.src] = append(bySrc[d.src], d)
	}
	score := make([]float64, len(srcs))
	for i, w := range srcs {
		score[i] = l.scoreAfter(w, l.none, l.none)
	}
	for len(st.moves) < st.goals.MaxMoves {
		pick := -1
		for i, w := range srcs {
			if len(bySrc[w]) > 0 && (pick < 0 || score[i] > score[pick]+eps) {
				pick = i
			}
		}
		if pick < 0 {
			return
		}
		w := srcs[pick]
		d := bySrc[w][0]
		bySrc[w] = bySrc[w][1:]
		reason := ReasonSpread
		if st.goals.HardMax > 0 && w.peak > st.goals.HardMax+eps {
			reason = ReasonHardMax
		}
		st.move(d.in, w, d.dst, d.cost, reason, "")
		score[pick] = l.scoreAfter(w, l.none, l.none)
	}
}

// appendItems appends set's instances, off src, to items.
func appendItems(items []packItem, set []*instState, src *waveState) []packItem {
	for _, in := range set {
		items = append(items, packItem{in: in, src: src, size: slices.Max(in.cost)})
	}
	return items
}

// sortItems orders items the largest first.
func sortItems(items []packItem) {
	slices.SortStableFunc(items, func(a, b packItem) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.in.ID, b.in.ID))
	})
}

// shedSet is the fewest of w's movable instances (but skip's and gone's) whose leaving,
// beside gone's, brings it within its lines, and of such sets one of the least load: the
// largest first at the slot furthest over its line, then each replaced, the smallest
// first, by the smallest instance left that still does; nil when all of them do not.
func (st *state) shedSet(l *lines, w *waveState, skip map[*instState]bool, gone []*instState) []*instState {
	out := make([]float64, st.slots)
	chosen := map[*instState]bool{}
	for _, in := range gone {
		chosen[in] = true
		addTo(out, in.cost, 1)
	}
	within := func() bool { return l.scoreAfter(w, out, l.none) <= 1 }
	var set []*instState
	for !within() {
		k := l.worstSlot(w, out)
		var big *instState
		for _, in := range w.insts {
			if !chosen[in] && !skip[in] && st.movable(in) && (big == nil || in.cost[k] > big.cost[k]) {
				big = in
			}
		}
		if big == nil || big.cost[k] <= eps {
			return nil
		}
		chosen[big] = true
		set = append(set, big)
		addTo(out, big.cost, 1)
	}
	var rest []*instState
	for _, in := range w.insts {
		if !chosen[in] && !skip[in] && st.movable(in) {
			rest = append(rest, in)
		}
	}
	bySize := func(a, b *instState) int { return cmp.Compare(slices.Max(a.cost), slices.Max(b.cost)) }
	slices.SortStableFunc(rest, bySize)
	for j := len(set) - 1; j >= 0; j-- {
		for r, in := range rest {
			if bySize(in, set[j]) >= 0 {
				break
			}
			addTo(out, set[j].cost, -1)
			addTo(out, in.cost, 1)
			if within() {
				rest[r] = set[j]
				set[j] = in
				slices.SortStableFunc(rest, bySize)
				break
			}
			addTo(out, in.cost, -1)
			addTo(out, set[j].cost, 1)
		}
	}
	return set
}

// worstSlot is the slot where w, with out's load gone, stands furthest over its lines.
func (l *lines) worstSlot(w *waveState, out []float64) int {
	e := w.surely()
	k, s := 0, math.Inf(-1)
	for i, x := range w.load {
		if v := (x - out[i] + e) / w.cap / l.day; v > s {
			k, s = i, v
		}
	}
	for i, slot := range l.win {
		if v := (w.load[slot] - out[slot] + e) / w.cap / l.now[i]; v > s {
			k, s = slot, v
		}
	}
	return k
}

// addTo adds sign times c to v.
func addTo(v, c []float64, sign float64) {
	for k := range v {
		v[k] += sign * c[k]
	}
}
