package rebalance

import "math"

// Large instances. A wave over the hard threshold because of one instance far larger
// than its others can be brought under it two ways: its other instances move off, one
// by one (the step the hard threshold's goal makes first, as it lowers the wave the
// most a move), or the large one moves to a wave that can be cleared for it. On a
// seeded fleet (`binlake bench fleet -seed 3`) the first way moved 14 small instances
// off such a wave in the first plan, each lowering it by a point or less, and the next
// plan moved the large one all the same. So the goal counts both ways' moves first
// (cheaperToEvict). And once the highest wave stands within the band of where its
// largest instance alone would stand on any wave (largeFloor), and that is more than
// the band above the fleet's level, no move can lower the fleet's highest by more than
// noise nor meet the band: the spread goal sets that wave aside at once, instead of
// taking small instances off it a fraction of a point at a time (10 such moves on the
// same fleet).

// shedCount is how many of w's movable instances (the largest first, at its peak slot)
// must leave it, beside skip, for its peak with extra added to come to limit or under;
// math.MaxInt when all of them do not.
func (st *state) shedCount(w *waveState, skip *instState, extra []float64, limit float64) int {
	return st.shedUntil(w, skip, extra, func(load []float64) (int, bool) {
		k := 0
		for i, l := range load {
			if l > load[k] {
				k = i
			}
		}
		return k, load[k]/w.cap <= limit+eps
	})
}

// shedToLines is shedCount with w brought within l's lines instead of under a limit:
// the largest first at the slot where w stands furthest over them (worstSlot).
func (st *state) shedToLines(l *lines, w *waveState, skip *instState, extra []float64) int {
	out := make([]float64, len(w.load)) // what leaves w, less what extra brings
	return st.shedUntil(w, skip, extra, func(load []float64) (int, bool) {
		for k := range out {
			out[k] = w.load[k] - load[k]
		}
		return l.worstSlot(w, out), l.scoreAfter(w, out, l.none) <= 1+eps
	})
}

// shedUntil is how many of w's movable instances but skip must leave it, with extra
// added to its load, until done says the load left is enough, each the largest at the
// slot done names; math.MaxInt when all of them do not.
func (st *state) shedUntil(w *waveState, skip *instState, extra []float64, done func(load []float64) (slot int, ok bool)) int {
	load := make([]float64, len(w.load))
	for k, l := range w.load {
		load[k] = l
		if extra != nil {
			load[k] += extra[k]
		}
	}
	gone := map[*instState]bool{}
	for n := 0; ; n++ {
		k, ok := done(load)
		if ok {
			return n
		}
		var big *instState
		for _, in := range w.insts {
			if in != skip && !gone[in] && st.movable(in) && (big == nil || in.cost[k] > big.cost[k]) {
				big = in
			}
		}
		if big == nil || big.cost[k] <= eps {
			return math.MaxInt
		}
		gone[big] = true
		for i, c := range big.cost {
			load[i] -= c
		}
	}
}

// cheaperToEvict returns the eviction step (evict) for the hottest wave when moving its
// large instance, and then clearing room for it on the destination, takes fewer moves
// than moving the hottest wave's other instances off it; nil otherwise. It looks for a
// destination only when shedding would take more than two moves and the large one
// fits on no wave as it is (when it fits, the usual steps move it, to the lowest
// resulting peak), so that the usual case stays cheap.
func (st *state) cheaperToEvict(hot *waveState, live []*waveState) *step {
	limit := st.goals.HardMax
	big := largest(hot)
	if big == nil || !st.movable(big) {
		return nil
	}
	if st.shedCount(hot, big, nil, limit) <= 2 {
		return nil
	}
	for _, d := range live {
		if d != hot && d.peakAdd(big.Instance) <= limit+eps {
			return nil // it fits as it is: the usual steps move it, where it weighs least
		}
	}
	s := st.evict([]*waveState{hot}, live)
	if s == nil {
		return nil
	}
	shed := st.shedCount(hot, s.in, nil, limit)
	if clear := st.shedCount(s.dst, nil, s.cost, limit); clear < math.MaxInt && 1+clear < shed {
		return s
	}
	return nil
}

// largest is w's instance that costs it the most at its peak slot (nil: none).
func largest(w *waveState) *instState {
	k := 0
	for i, l := range w.load {
		if l > w.load[k] {
			k = i
		}
	}
	var big *instState
	for _, in := range w.insts {
		if big == nil || in.cost[k] > big.cost[k] {
			big = in
		}
	}
	return big
}

// largeFloor is the lowest peak the wave carrying in (its largest instance) could
// have: in alone, beside a wave's base, on the wave where that is lowest.
func (st *state) largeFloor(in *instState, live []*waveState) float64 {
	if f, ok := st.floors[in]; ok {
		return f
	}
	floor := math.Inf(1)
	for _, d := range live {
		c := st.costOn(in.Instance, d)
		p := math.Inf(-1)
		for k := range d.load {
			p = max(p, (d.baseAt(k)+c[k])/d.cap)
		}
		floor = min(floor, p)
	}
	if st.floors == nil {
		st.floors = map[*instState]float64{}
	}
	st.floors[in] = floor
	return floor
}

// heldByLarge reports whether w's peak stands within the band of its largest
// instance's floor while that floor stands more than the band above the fleet's level
// (its total load over its total capacity at its busiest slot, which the lowest wave
// cannot rise above however the others move): no assignment can then bring w within
// the band, and none can lower it, and so the fleet's highest, by more than the band.
// Where the floor is within the band of the level, moving the small instances off can
// still meet the band, and they move. lo, the lowest peak, makes a cheap first test.
func (st *state) heldByLarge(w *waveState, live []*waveState, lo float64) bool {
	if len(w.insts) < 2 {
		return false // alone, the spread goal's own test sets it aside
	}
	big := largest(w)
	// Its floor is at most where it stands alone on w: a cheap test first, as a plan on
	// a thousand waves asks this of its top wave at every step.
	alone := math.Inf(-1)
	for k := range w.load {
		alone = max(alone, (w.baseAt(k)+big.cost[k])/w.cap)
	}
	if alone <= lo+st.goals.Band+eps {
		return false
	}
	floor := st.largeFloor(big, live)
	return floor > level(live)+st.goals.Band+eps && w.peak <= floor+st.goals.Band+eps
}
