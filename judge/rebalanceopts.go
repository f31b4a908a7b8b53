package judge

import (
	"cmp"
	"errors"
	"math"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/rebalance"
	"github.com/binlake/binlake/judge/api"
)

// RebalanceOptions are the goals GET and POST /v1/rebalance plan for (judge.yaml's
// rebalance section). Plans are in utilisation (CPU cores over each wave's cores) when
// every live wave reports its cores and the CPU to price work with, else in rows/s (the
// rows model, with its own goals).
type RebalanceOptions struct {
	// MaxUtilisation is the peak utilisation no wave should exceed (0.7: 70 % of the
	// host's cores at the wave's predicted peak hour); 0 disables the goal.
	MaxUtilisation float64
	// UtilisationBand is the spread of peak utilisations (highest minus lowest wave) the
	// plans aim within (a third of it is the least a move must gain, and the share goal
	// fills a wave only within a quarter of it over the fleet's level); UtilisationBalance
	// the ratio of every wave's lines to the least the busiest wave could stand at (0:
	// enoughOverLevel, 1.08).
	UtilisationBand    float64
	UtilisationBalance float64
	// FitWindow is how far back the samples reach that each wave's prices are fitted to.
	FitWindow time.Duration

	// The rows model's goals and costs: HardMax is the load in rows/s no wave should
	// exceed (0 disables it), Band the spread of rows/s, InstanceFloor what every
	// instance costs on top of its rows/s even idle (its binlog connection, goroutines).
	HardMax       float64
	Band          float64
	InstanceFloor float64

	// MaxMoves bounds a plan.
	MaxMoves int
	// Cooldown keeps an instance that moved recently where it is.
	Cooldown time.Duration
}

// DefaultRebalanceOptions are the defaults of the rebalance section: every wave under 70
// % of its cores at its peak hour; every wave held to its lines (1.08× the least the
// busiest wave could stand at, utilisation_balance 0), with 3 points of utilisation the
// noise of a CPU reading (a move gains at least a third of it: finer chases that noise
// with more moves); prices fitted over 6 hours; in the rows model no hard threshold, a
// band of 2000 rows/s and 100 rows/s per instance; 20 moves a plan and 10 minutes between
// two moves of an instance (long enough for its rates on the new wave to settle).
func DefaultRebalanceOptions() RebalanceOptions {
	return RebalanceOptions{MaxUtilisation: 0.7, UtilisationBand: 0.03, FitWindow: 6 * time.Hour,
		Band: 2000, InstanceFloor: 100, MaxMoves: 20, Cooldown: 10 * time.Minute}
}

// validate names the judge.yaml key of each bad value, for the config and for New alike.
func (o RebalanceOptions) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad("rebalance."+field, format, args...))
	}
	for _, f := range []struct {
		key, unit string
		v         float64
	}{{"hard_max", "rows/s", o.HardMax}, {"band", "rows/s", o.Band}, {"instance_floor", "rows/s", o.InstanceFloor},
		{"max_utilisation", "a share of the cores, 0.7 for 70 %", o.MaxUtilisation}, {"utilisation_band", "a share of the cores", o.UtilisationBand}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			bad(f.key, "%v: want a finite number ≥ 0 (%s)", f.v, f.unit)
		}
	}
	if o.UtilisationBalance != 0 && !(o.UtilisationBalance >= 1 && o.UtilisationBalance <= 10) {
		bad("utilisation_balance", "%v: want 0 (the default, 1.08) or a ratio to the fleet's level from 1 to 10 (1.05: 5 %% above it)", o.UtilisationBalance)
	}
	if o.MaxUtilisation > 1 && !math.IsInf(o.MaxUtilisation, 1) {
		bad("max_utilisation", "%v: want a share of the host's cores from 0 to 1 (0.7 for 70 %%)", o.MaxUtilisation)
	}
	if o.FitWindow < 10*time.Minute {
		bad("fit_window", "%s: want at least 10m (an hour or more to see the load move)", o.FitWindow)
	}
	if o.MaxMoves <= 0 {
		bad("max_moves", "%d: want at least 1", o.MaxMoves)
	}
	if o.Cooldown < 0 {
		bad("cooldown", "%s: want 0 or more", o.Cooldown)
	}
	return errors.Join(errs...)
}

// goals are the planner's goals in the given model, for a plan made at now.
func (o RebalanceOptions) goals(model string, now time.Time) rebalance.Goals {
	g := rebalance.Goals{MaxMoves: o.MaxMoves, Cooldown: o.Cooldown}
	if model == api.ModelUtilisation {
		g.HardMax, g.Band = o.MaxUtilisation, o.UtilisationBand
		g.LevelGain, g.Enough = o.UtilisationBand/3, cmp.Or(o.UtilisationBalance, enoughOverLevel)
		// The window of the lines: now (slot 0), this hour and the next (the load view's
		// slot of each UTC hour is 1 + the hour), so that the hour turning does not undo a
		// plan at once.
		h := now.UTC().Hour()
		g.LevelNow = []int{0, 1 + h, 1 + (h+1)%24}
	} else {
		g.HardMax, g.Band = o.HardMax, o.Band
	}
	return g
}

func (o RebalanceOptions) answerGoals() api.RebalanceGoals {
	return api.RebalanceGoals{MaxUtilisation: o.MaxUtilisation, UtilisationBand: o.UtilisationBand, UtilisationBalance: cmp.Or(o.UtilisationBalance, enoughOverLevel),
		HardMax: o.HardMax, Band: o.Band, MaxMoves: o.MaxMoves, CooldownS: o.Cooldown.Seconds()}
}

// enoughOverLevel is the ratio of every wave's lines to the least the busiest wave could
// stand at (the fleet's level, or its hardest instance's floor: rebalance.Goals.Enough),
// within which the plans make no more moves: on the simulated fleets a greedy assignment from scratch
// stands 1–3 % above that bound, and issue 30 asks for the peak within 1.10× greedy with
// as few moves as the descent reference needs to get there; the rest of the margin is
// the predictions' error.
const enoughOverLevel = 1.08
