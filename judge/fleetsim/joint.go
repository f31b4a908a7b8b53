package fleetsim

import (
	"fmt"
	"io"
	"slices"
)

// Joint counts the moves to the goal the judge plans for: the peak now and every wave's
// daily peak within their targets at once. The descent reference on either measure
// alone can undercount what must move for both (on the seeded fleets by little: the
// 200-wave fleet's joint descent takes 468 moves, its descent on now alone 466).
type Joint struct {
	// Descent is the descent reference on the joint measure (each wave's utilisation
	// now over the target now, or at its daily peak over the daily target, the larger):
	// from the initial assignment, one move at a time off the wave furthest over, until
	// every wave is within both targets.
	Descent Descent `json:"descent"`
	// JudgeMovesToTarget is after how many of the judge's moves, replayed in order,
	// both targets first held; -1 when never.
	JudgeMovesToTarget int `json:"judge_moves_to_target"`
	// JudgeOffWithin and JudgeOffFilled are, of those moves, the ones off a wave then
	// within both targets, and off a wave over them that started within them (the
	// judge's moves onto it had filled it past them): what LeastMoves does not count.
	// A plan makes the first where its predictions, or its lines, put the wave over
	// them; the second where they put an arrival's cost too low.
	JudgeOffWithin int `json:"judge_moves_off_within"`
	JudgeOffFilled int `json:"judge_moves_off_filled"`
	// LeastMoves is a lower bound of how many instances must move for both targets
	// (leastMoves): the descent's count is an upper one.
	LeastMoves int `json:"least_moves"`
}

// jointMeasure is a wave's load now over the target now or at its daily peak over the
// daily target, whichever is further: at most the wave's capacity when both hold.
func jointMeasure(h, targetNow, targetDay float64) measure {
	return func(l load) float64 { return max(l.at(h)/targetNow, l.peak()/targetDay) }
}

// joint is the Joint figures of the judge's moves against the descent reference's.
func joint(f *Fleet, moves [][2]int, h, targetNow, targetDay float64) Joint {
	m := jointMeasure(h, targetNow, targetDay)
	_, d := descent(f, f.Initial, m, 1)
	r := replay(f, moves, m, 1)
	return Joint{Descent: d, JudgeMovesToTarget: r.toTarget, JudgeOffWithin: r.offWithin, JudgeOffFilled: r.offFilled,
		LeastMoves: leastMoves(f, h, targetNow, targetDay)}
}

// dayHours is how many evenly spaced hours of the day leastMoves holds the daily target
// at: the day's peak is at least the load at any of them.
const dayHours = 96

// leastMoves is a lower bound of the moves that bring every wave within targetNow at
// hour h and within targetDay at its daily peak: the sum, over the waves, of the fewest
// of a wave's own instances that must leave it. Each wave must be within both at every
// hour, so it must shed at least as many as the hardest of these hours asks, and at one
// hour the fewest are its costliest at that hour (instances arriving only add load). An
// instance starts on one wave, so no move is counted twice.
func leastMoves(f *Fleet, h, targetNow, targetDay float64) int {
	on := instancesOn(f, f.Initial)
	ls := loads(f, f.Initial)
	total := 0
	costs := []float64{}
	for w, wave := range f.Waves {
		cores := float64(wave.Cores)
		// fewest is how many of w's instances must leave for its load at hour hr to be
		// within target.
		fewest := func(hr, target float64) int {
			excess := ls[w].at(hr) - target*cores
			if excess <= 0 {
				return 0
			}
			costs = costs[:0]
			for _, i := range on[w] {
				costs = append(costs, contrib(wave, f.Instances[i]).at(hr))
			}
			slices.Sort(costs)
			n := 0
			for k := len(costs) - 1; k >= 0 && excess > 0; k-- {
				excess -= costs[k]
				n++
			}
			return n
		}
		need := fewest(h, targetNow)
		for k := range dayHours {
			need = max(need, fewest(24*float64(k)/dayHours, targetDay))
		}
		total += need
	}
	return total
}

func (j Joint) write(out io.Writer, moves int) {
	fmt.Fprintf(out, "\nboth at once (now and the daily peaks within %.2f× greedy)\n", TargetFactor)
	fmt.Fprintf(out, "  judge: %s of its %d moves to the target; descent reference: %s (%d in all, %d distinct); at least %d must move\n",
		toTarget(j.JudgeMovesToTarget), moves, toTarget(j.Descent.MovesToTarget), j.Descent.Moves, j.Descent.Distinct, j.LeastMoves)
	if j.JudgeMovesToTarget > 0 {
		fmt.Fprintf(out, "  of the judge's moves to the target, %d off waves then within both targets, %d off waves its moves had filled past them\n",
			j.JudgeOffWithin, j.JudgeOffFilled)
	}
}
