// Package rebalance plans moves of binlog instances between waves so that every wave
// carries a comparable load, in the manner of Kafka Cruise Control: goals in priority
// order, each move predicted from what the instance costs, and a plan that says why it
// makes each move. It only plans; executing a plan (one move at a time, each waiting
// until the instance runs again on its new wave) is the balancer's job.
//
// The goals, highest first:
//
//  1. Every instance on a live wave: the instances of a dead wave go where the load is
//     lowest, one after the other, so that consecutive placements spread.
//  2. No wave above the hard threshold.
//  3. The spread of load across waves (the most loaded minus the least loaded) within
//     the band.
//  4. The fewest moves: each move is the one that helps the current goal most, and
//     planning stops as soon as the goals hold.
//
// Pinned instances never move, and an instance moved less than the cooldown ago stays
// put (unless its wave is dead). A plan holds at most MaxMoves moves.
package rebalance

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Wave is one wave as the planner sees it.
type Wave struct {
	Node string
	// Base is the wave's load that no instance explains (the process, the host's other
	// work): its measured load minus the costs of the instances it runs.
	Base float64
	// Alive: the wave is registered. A dead wave's instances must move.
	Alive bool
}

// Instance is one binlog instance.
type Instance struct {
	ID   string
	Node string // the wave it runs on (or is assigned to)
	// Cost is the load the instance puts on a wave (the same unit as Wave.Base).
	Cost float64
	// Pinned instances stay where they are.
	Pinned bool
	// MovedAt is when the instance last moved; zero when never.
	MovedAt time.Time
}

// Goals are the planner's thresholds.
type Goals struct {
	// HardMax is the load no wave should exceed; 0 disables the goal.
	HardMax float64
	// Band is the spread (most minus least loaded wave) the plan aims to stay within.
	Band float64
	// MaxMoves bounds the plan's length; 0 means 100.
	MaxMoves int
	// Cooldown keeps an instance that moved recently where it is.
	Cooldown time.Duration
}

// Move is one planned move and why.
type Move struct {
	Instance string  `json:"instance"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	Cost     float64 `json:"cost"`
	// Reason names the goal the move serves: "failover", "hard_max" or "spread".
	Reason string `json:"reason"`
	// FromLoad and ToLoad are the two waves' predicted loads before and after the move.
	FromLoad [2]float64 `json:"from_load"`
	ToLoad   [2]float64 `json:"to_load"`
}

// Plan is the planner's answer.
type Plan struct {
	Moves []Move `json:"moves"`
	// Before and After are every live wave's predicted load without and with the moves.
	Before map[string]float64 `json:"before"`
	After  map[string]float64 `json:"after"`
	// SpreadBefore and SpreadAfter are the most minus the least loaded live wave.
	SpreadBefore float64 `json:"spread_before"`
	SpreadAfter  float64 `json:"spread_after"`
	// Balanced: after the moves every goal holds. When false, Unmet says which goal
	// the plan could not reach and why (no live wave, pinned or cooling instances, the
	// move limit, an instance larger than the band).
	Balanced bool   `json:"balanced"`
	Unmet    string `json:"unmet,omitempty"`
}

// Reasons of a move.
const (
	ReasonFailover = "failover"
	ReasonHardMax  = "hard_max"
	ReasonSpread   = "spread"
)

// state is the planner's working copy: each wave's load and instances.
type state struct {
	waves []*waveState
	by    map[string]*waveState
	now   time.Time
	goals Goals
	moves []Move
}

type waveState struct {
	Wave
	load  float64
	insts []*Instance
}

// Make plans the moves that bring the waves to the goals. It does not change its
// arguments.
func Make(waves []Wave, insts []Instance, g Goals, now time.Time) Plan {
	if g.MaxMoves <= 0 {
		g.MaxMoves = 100
	}
	st := &state{by: make(map[string]*waveState, len(waves)), now: now, goals: g}
	for _, w := range waves {
		ws := &waveState{Wave: w, load: w.Base}
		st.waves = append(st.waves, ws)
		st.by[w.Node] = ws
	}
	var orphans []*Instance
	for i := range insts {
		in := insts[i] // a copy: the plan moves it
		ws, ok := st.by[in.Node]
		if !ok || !ws.Alive {
			orphans = append(orphans, &in)
			continue
		}
		ws.insts = append(ws.insts, &in)
		ws.load += in.Cost
	}
	live := st.live()
	p := Plan{Before: st.loads(), SpreadBefore: spread(live)}
	unmet := ""
	switch {
	case len(live) == 0:
		unmet = "no live wave"
	default:
		st.failover(orphans)
		unmet = st.hardMax()
		if unmet == "" {
			unmet = st.spread()
		}
	}
	p.Moves = st.moves
	p.After = st.loads()
	p.SpreadAfter = spread(live)
	p.Balanced = unmet == ""
	p.Unmet = unmet
	return p
}

func (st *state) live() []*waveState {
	var out []*waveState
	for _, w := range st.waves {
		if w.Alive {
			out = append(out, w)
		}
	}
	return out
}

func (st *state) loads() map[string]float64 {
	out := map[string]float64{}
	for _, w := range st.waves {
		if w.Alive {
			out[w.Node] = w.load
		}
	}
	return out
}

func spread(ws []*waveState) float64 {
	if len(ws) == 0 {
		return 0
	}
	lo, hi := ws[0].load, ws[0].load
	for _, w := range ws[1:] {
		lo, hi = min(lo, w.load), max(hi, w.load)
	}
	return hi - lo
}

// failover places every instance of a dead (or unknown) wave on the least loaded live
// wave, the most costly first, so that the placements spread.
func (st *state) failover(orphans []*Instance) {
	slices.SortFunc(orphans, func(a, b *Instance) int { return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(a.ID, b.ID)) })
	live := st.live()
	for _, in := range orphans { // not bounded by MaxMoves: each must run somewhere
		to := slices.MinFunc(live, byLoad)
		st.move(in, nil, to, ReasonFailover)
	}
}

// hardMax moves instances off every wave above the hard threshold, each to the least
// loaded wave, as long as that wave stays under it.
func (st *state) hardMax() string {
	if st.goals.HardMax <= 0 {
		return ""
	}
	live := st.live()
	for {
		from := slices.MaxFunc(live, byLoad)
		if from.load <= st.goals.HardMax {
			return ""
		}
		if len(st.moves) >= st.goals.MaxMoves {
			return fmt.Sprintf("hard_max: %s is at %.3g, above %.3g, and the plan reached its %d moves", from.Node, from.load, st.goals.HardMax, st.goals.MaxMoves)
		}
		to := slices.MinFunc(live, byLoad)
		// The instance that brings from nearest under the threshold without taking to
		// over it: the smallest that suffices, else the largest that fits.
		var best *Instance
		need := from.load - st.goals.HardMax
		for _, in := range from.insts {
			if !st.movable(in) || to.load+in.Cost > st.goals.HardMax || to == from {
				continue
			}
			switch {
			case best == nil:
				best = in
			case best.Cost >= need && in.Cost >= need && in.Cost < best.Cost:
				best = in
			case best.Cost < need && in.Cost > best.Cost:
				best = in
			}
		}
		if best == nil {
			return fmt.Sprintf("hard_max: %s is at %.3g, above %.3g, and none of its instances can move (pinned, cooling down, or too large for %s)", from.Node, from.load, st.goals.HardMax, to.Node)
		}
		st.move(best, from, to, ReasonHardMax)
	}
}

// spread moves, from the most to the least loaded wave, the instance that narrows the
// spread the most, until it is within the band or no move narrows it.
func (st *state) spread() string {
	live := st.live()
	for {
		from, to := slices.MaxFunc(live, byLoad), slices.MinFunc(live, byLoad)
		gap := from.load - to.load
		if gap <= st.goals.Band {
			return ""
		}
		if len(st.moves) >= st.goals.MaxMoves {
			return fmt.Sprintf("spread: %.3g, above the band %.3g, and the plan reached its %d moves", gap, st.goals.Band, st.goals.MaxMoves)
		}
		// Moving cost c makes the pair's gap |gap - 2c|: best when c is nearest gap/2,
		// and only a move that narrows it (0 < c < gap) helps.
		var best *Instance
		for _, in := range from.insts {
			if !st.movable(in) || in.Cost <= 0 || in.Cost >= gap {
				continue
			}
			if st.goals.HardMax > 0 && to.load+in.Cost > st.goals.HardMax {
				continue
			}
			if best == nil || abs(gap-2*in.Cost) < abs(gap-2*best.Cost) {
				best = in
			}
		}
		if best == nil {
			return fmt.Sprintf("spread: %.3g, above the band %.3g, and no instance of %s can narrow it (pinned, cooling down, or each as large as the gap)", gap, st.goals.Band, from.Node)
		}
		st.move(best, from, to, ReasonSpread)
	}
}

func (st *state) movable(in *Instance) bool {
	return !in.Pinned && (in.MovedAt.IsZero() || st.now.Sub(in.MovedAt) >= st.goals.Cooldown)
}

// move records a move of in from (nil for a dead wave) to to.
func (st *state) move(in *Instance, from, to *waveState, reason string) {
	m := Move{Instance: in.ID, From: in.Node, To: to.Node, Cost: in.Cost, Reason: reason}
	if from != nil {
		m.FromLoad = [2]float64{from.load, from.load - in.Cost}
		from.load -= in.Cost
		from.insts = slices.DeleteFunc(from.insts, func(x *Instance) bool { return x == in })
	}
	m.ToLoad = [2]float64{to.load, to.load + in.Cost}
	to.load += in.Cost
	in.Node, in.MovedAt = to.Node, st.now
	to.insts = append(to.insts, in)
	st.moves = append(st.moves, m)
}

// byLoad orders waves by load, then by instance count (so that instances that cost
// nothing, idle ones with no floor, still spread), then by node.
func byLoad(a, b *waveState) int {
	return cmp.Or(cmp.Compare(a.load, b.load), cmp.Compare(len(a.insts), len(b.insts)), cmp.Compare(a.Node, b.Node))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
