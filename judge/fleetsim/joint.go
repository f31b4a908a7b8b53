package fleetsim

import (
	"fmt"
	"io"
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
	return Joint{Descent: d, JudgeMovesToTarget: movesToTarget(f, moves, m, 1)}
}

func (j Joint) write(out io.Writer, moves int) {
	fmt.Fprintf(out, "\nboth at once (now and the daily peaks within %.2f× greedy)\n", TargetFactor)
	fmt.Fprintf(out, "  judge: %s of its %d moves to the target; descent reference: %s (%d in all, %d distinct)\n",
		toTarget(j.JudgeMovesToTarget), moves, toTarget(j.Descent.MovesToTarget), j.Descent.Moves, j.Descent.Distinct)
}
