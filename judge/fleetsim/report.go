package fleetsim

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// TargetFactor is how near the greedy reference's peak a plan should bring the peak
// (issue 30's acceptance): the descent reference counts the moves that takes.
const TargetFactor = 1.10

// Report is a run's result. Utilisations are fractions of a wave's cores (1 = every
// core busy; above 1 the wave is overloaded).
type Report struct {
	Seed      uint64      `json:"seed"`
	Cores     []CoreClass `json:"cores"`
	Waves     int         `json:"waves"`
	Instances int         `json:"instances"`
	// HostShare and HostOther are the options': waves to a host, and the other work on
	// a shared host as a share of its cores (absent: a host to each wave).
	HostShare int     `json:"host_share,omitempty"`
	HostOther float64 `json:"host_other,omitempty"`
	// Judge is "in-process" or the external judge's URL.
	Judge string `json:"judge"`
	// HistoryFrom, Start and End are simulated times: the first batch, the first round,
	// the last round.
	HistoryFrom time.Time `json:"history_from"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	// Batches and Points the judge accepted, Retries of batches it refused for now (503).
	Batches int64 `json:"batches"`
	Points  int64 `json:"points"`
	Retries int64 `json:"retries"`
	// HistoricalAsOf is the judge's historical refresh that covered the history (zero:
	// none came within the wait, or the wait was off).
	HistoricalAsOf time.Time `json:"historical_as_of,omitzero"`
	// Refreshes counts the in-process judge's historical refreshes during the rounds,
	// Options.HistoricalEvery of simulated time apart.
	Refreshes int `json:"historical_refreshes,omitempty"`

	Rounds []Round `json:"rounds"`
	// Plans counts the plans with moves; Moves the moves applied, Distinct the instances
	// they moved, Skipped the planned moves not applied (stale, or naming what the
	// cluster does not have).
	Plans    int `json:"plans"`
	Moves    int `json:"moves"`
	Distinct int `json:"distinct_instances"`
	Skipped  int `json:"skipped"`
	// EndedBy is "empty plan" or "round limit".
	EndedBy string `json:"ended_by"`
	// Balanced is the first empty plan that said the fleet is balanced (zero: none);
	// Unsettled counts the moves applied after it, in the rounds of Options.Settle.
	Balanced  time.Time `json:"balanced,omitzero"`
	Unsettled int       `json:"moves_after_balanced"`
	// OutOfTime counts the plans whose search ran out of the judge's time budget (its
	// answer's out_of_time): their moves are what the search had found by then.
	OutOfTime int `json:"plans_out_of_time"`

	// Now compares the assignments at End's hour; Day at each wave's own peak of the day.
	Now Comparison `json:"now"`
	Day Comparison `json:"day"`
	// Both is the goal the judge works to: the peak now and the daily peaks each within
	// TargetFactor of their greedy reference's at once (joint.go).
	Both Joint `json:"both"`

	// Final is the judge's final assignment, wave by wave.
	Final []WaveResult `json:"final"`
	// Truth is the fleet's true costs, with Options.Truth.
	Truth *Truth `json:"truth,omitempty"`
	// Assignment is the judge's final assignment: instance → node.
	Assignment map[string]string `json:"assignment"`
	// PredictedBefore and PredictedAfter compare the judge's predicted utilisations,
	// when its answers expose them, with the truth; nil when they do not.
	PredictedBefore *PredictionError `json:"predicted_before,omitempty"`
	PredictedAfter  *PredictionError `json:"predicted_after,omitempty"`
	// Elapsed is the run's real time.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Comparison is one measure's figures for every assignment.
type Comparison struct {
	Initial Figures `json:"initial"`
	Judge   Figures `json:"judge"`
	Greedy  Figures `json:"greedy"`
	// GreedyMoves is how many instances greedy's assignment puts on another wave than
	// the initial one: what reaching it from there would move.
	GreedyMoves int     `json:"greedy_moves"`
	Descent     Descent `json:"descent"`
	Bound       Bound   `json:"bound"`
	// Ratio is the judge's peak over the greedy reference's.
	Ratio float64 `json:"ratio"`
	// JudgeMovesToTarget is how many of the judge's moves, replayed in the order they
	// were applied, first brought the peak by this measure within the target (the
	// greedy peak times TargetFactor): the figure to hold against the descent
	// reference's. -1 when never.
	JudgeMovesToTarget int `json:"judge_moves_to_target"`
}

// Round is one of the balancer's requests and what came of it.
type Round struct {
	N       int       `json:"n"`
	At      time.Time `json:"at"`
	Planned int       `json:"planned"`
	Moved   int       `json:"moved"`
	Skipped int       `json:"skipped"`
	// Answered is how long the judge took to answer the round's POST /v1/rebalance, in
	// real time: the request with every instance's assignment sent, planned, and its
	// answer read.
	Answered time.Duration `json:"answered_ns"`
	// Reasons counts the planned moves by the goal the judge gave for each ("spread",
	// "hard_max", …): which goal a round's moves served.
	Reasons map[string]int `json:"reasons,omitempty"`
	// HardMaxHostMates counts the planned hard_max moves between two waves of one host
	// (Options.HostShare), which lower no host's CPU: the judge holds hosts to
	// max_utilisation, so none is expected.
	HardMaxHostMates int `json:"hard_max_host_mates,omitempty"`
	// MovedInstances are the instances the round moved, in the plan's order.
	MovedInstances []string `json:"moved_instances"`
	// MovedTo is the wave each of MovedInstances went to.
	MovedTo []string `json:"moved_to"`
	// PeakBefore and PeakAfter are the true peak utilisation at At before and after the
	// moves; SpreadBefore and SpreadAfter the same for the spread.
	PeakBefore   float64 `json:"peak_before"`
	PeakAfter    float64 `json:"peak_after"`
	SpreadBefore float64 `json:"spread_before"`
	SpreadAfter  float64 `json:"spread_after"`
}

// WaveResult is one wave under the judge's final assignment.
type WaveResult struct {
	Node      string  `json:"node"`
	Cores     int     `json:"cores"`
	Speed     float64 `json:"speed"`
	Instances int     `json:"instances"`
	Now       float64 `json:"now"`
	Day       float64 `json:"day"`
}

// WriteText writes the report as a table.
func (r *Report) WriteText(out io.Writer) {
	fmt.Fprintf(out, "\nfleet: %s (%s cores:waves)%s, %s, seed %d; judge %s\n",
		count(r.Waves, "wave"), FormatCores(r.Cores), hostsText(r.HostShare, r.HostOther), count(r.Instances, "instance"), r.Seed, r.Judge)
	fmt.Fprintf(out, "fed %d batches (%d points, %d retried) from %s to %s simulated; %s real\n",
		r.Batches, r.Points, r.Retries, r.HistoryFrom.Format("01-02 15:04"), r.End.Format("01-02 15:04"), r.Elapsed.Round(time.Millisecond))
	if r.HistoricalAsOf.IsZero() {
		fmt.Fprintln(out, noProfiles)
	}
	fmt.Fprintf(out, "balancer: %s, %s with moves, %s (%d distinct, %d skipped); ended by %s\n",
		count(len(r.Rounds), "round"), count(r.Plans, "plan"), count(r.Moves, "move"), r.Distinct, r.Skipped, r.EndedBy)
	if r.OutOfTime > 0 {
		fmt.Fprintf(out, outOfTimeWarning+"\n", count(r.OutOfTime, "plan"), len(r.Rounds))
	}
	if !r.Balanced.IsZero() && r.End.After(r.Balanced) {
		fmt.Fprintf(out, "balanced at %s; asked on to %s: %s since\n",
			r.Balanced.Format("15:04"), r.End.Format("15:04"), count(r.Unsettled, "move"))
	}
	moves := func(c Comparison) string {
		return fmt.Sprintf("%d (%d distinct, %s to ≤ %.2f× greedy)", r.Moves, r.Distinct, toTarget(c.JudgeMovesToTarget), TargetFactor)
	}
	r.Now.writeTable(out, fmt.Sprintf("utilisation now (%s UTC)", r.End.Format("15:04")), moves(r.Now))
	r.Day.writeTable(out, "utilisation at each wave's daily peak", moves(r.Day))
	r.Both.write(out, r.Moves)
	for _, p := range []struct {
		what string
		e    *PredictionError
	}{{"before", r.PredictedBefore}, {"after", r.PredictedAfter}} {
		if p.e == nil {
			fmt.Fprintf(out, "judge's predicted utilisation %s the plans: not in its answers\n", p.what)
			continue
		}
		fmt.Fprintf(out, "judge's predicted utilisation %s the plans (%q, %s): mean error %s, max %s\n",
			p.what, p.e.Key, count(p.e.Plans, "plan"), pct(p.e.MeanAbs), pct(p.e.MaxAbs))
	}
}

// hostsText says how the waves share hosts (Options.HostShare, HostOther): "" when each
// has its own.
func hostsText(share int, other float64) string {
	if share < 2 {
		return ""
	}
	return fmt.Sprintf(", %d to a host of a class, other work %s of a host's cores on average", share, pct(other))
}

// count is n of what, in the plural unless n is 1 ("1 wave", "24 waves").
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (c *Comparison) writeTable(out io.Writer, title, judgeMoves string) {
	fmt.Fprintf(out, "\n%s\n", title)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := fmt.Sprintf("%-*s\t", nameWidth, "assignment") + "peak\tspread\t"
	for _, cl := range c.Judge.Classes {
		head += fmt.Sprintf("%d-core mean\tmax\t", cl.Cores)
	}
	head += "moves\t"
	fmt.Fprintln(tw, head)
	row := func(name string, f Figures, moves string) {
		line := fmt.Sprintf("%-*s\t%s\t%s\t", nameWidth, name, pct(f.Peak), pct(f.Spread))
		for _, cl := range f.Classes {
			line += fmt.Sprintf("%s\t%s\t", pct(cl.Mean), pct(cl.Max))
		}
		fmt.Fprintln(tw, line+moves+"\t")
	}
	row("initial (round-robin)", c.Initial, "")
	row("judge", c.Judge, judgeMoves)
	row("greedy reference", c.Greedy, fmt.Sprintf("%d (from scratch)", c.GreedyMoves))
	row("descent reference", c.Descent.Figures, fmt.Sprintf("%d (%s to ≤ %.2f× greedy)", c.Descent.Moves, toTarget(c.Descent.MovesToTarget), TargetFactor))
	fmt.Fprintf(tw, "%-*s\t%s\t\t%s\t\n", nameWidth, "lower bound", pct(c.Bound.Value), strings.Repeat("\t", 2*len(c.Judge.Classes)))
	tw.Flush()
	fmt.Fprintf(out, "judge peak / greedy peak: %.2f×  (bound: dual %s, fluid %s, hardest instance %s)\n",
		c.Ratio, pct(c.Bound.Dual), pct(c.Bound.Fluid), pct(c.Bound.Instance))
}

// noProfiles is the report's warning when no historical refresh covered the history
// before the first plan: the figures are then a judge's without its hour-of-day
// profiles (on the 200-wave fleet under load, 493 moves instead of 599), not to be
// compared with a run that had them.
const noProfiles = "warning: no historical refresh of the judge covered the history before the first plan (-history-wait): " +
	"the plans went without its hour-of-day profiles, so these figures are not those of a judge that has them; rerun with a longer -history-wait"

// outOfTimeWarning is the report's warning when plans ran out of the judge's time budget
// (a judge short of CPU, or a fleet larger than the budget plans): the figures are then
// not those of the judge's planner, but of what it found in the time it had.
const outOfTimeWarning = "warning: %s of %d ran out of the judge's search budget (out_of_time: a busy machine, or a fleet larger than the budget plans), and their moves are what " +
	"the search had found by then: these figures are not those of a judge with the CPU to plan; rerun on a quieter machine"

// reasonsText is the round's moves by reason, " (spread 16, hard_max 4)", most first
// (then by name); empty without moves.
func (rd Round) reasonsText() string {
	if len(rd.Reasons) == 0 {
		return ""
	}
	names := slices.Collect(maps.Keys(rd.Reasons))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(rd.Reasons[b]-rd.Reasons[a], strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, rd.Reasons[n])
	}
	if rd.HardMaxHostMates > 0 {
		parts = append(parts, fmt.Sprintf("%d of them hard_max between host-mates", rd.HardMaxHostMates))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// toTarget says a count of moves to the target, or that it was never reached.
func toTarget(n int) string {
	if n < 0 {
		return "never"
	}
	return fmt.Sprint(n)
}

// nameWidth pads the first column, which tabwriter would align right with the figures.
const nameWidth = 22

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
