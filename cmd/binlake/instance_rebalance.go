//go:build !agentonly

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/balancer"
)

// rebalanceInstances is `binlake instance rebalance`: the judge's plan for the cluster as
// the coordinator has it (a dry run), or with apply the balancer's execution of a fresh
// plan, followed move by move until it finishes or wait passes.
func rebalanceInstances(ctx context.Context, c coord.Coordinator, p balancer.Planner, apply, asJSON bool, wait time.Duration, stdout io.Writer) error {
	if !apply {
		ans, err := balancer.PlanRebalance(ctx, c, p)
		if err != nil {
			return fmt.Errorf("instance rebalance: %w", err)
		}
		if asJSON {
			return json.NewEncoder(stdout).Encode(ans)
		}
		printAnswer(stdout, ans)
		if len(ans.Moves) > 0 {
			fmt.Fprintln(stdout, "dry run: nothing moved; -apply has the balancer execute a fresh plan, one move at a time")
		}
		return nil
	}
	id, err := balancer.RequestRebalance(ctx, c)
	if err != nil {
		return fmt.Errorf("instance rebalance: %w", err)
	}
	fmt.Fprintf(stdout, "rebalance %s requested; the balancer picks it up at its next poll\n", id)
	if wait <= 0 {
		fmt.Fprintln(stdout, "not following it (-wait 0): the balancer wave's /status shows its progress")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	shown, planShown := 0, false
	for {
		run, err := balancer.ReadRun(ctx, c)
		if err != nil && !errors.Is(err, coord.ErrNotFound) && ctx.Err() == nil {
			return fmt.Errorf("instance rebalance: %w", err)
		}
		if run != nil && run.ID == id {
			if run.Plan != nil && !planShown {
				fmt.Fprintf(stdout, "balancer %s applies:\n", run.Balancer)
				printPlan(stdout, run.Plan)
				planShown = true
			}
			for _, r := range run.Results[shown:] {
				line := fmt.Sprintf("%s %s → %s: %s", r.Instance, r.From, r.To, r.Result)
				if r.SettledS > 0 {
					line += fmt.Sprintf(", running and caught up after %.1f s", r.SettledS)
				}
				if r.Error != "" {
					line += ": " + r.Error
				}
				fmt.Fprintln(stdout, line)
			}
			shown = len(run.Results)
			if run.Finished != nil {
				if run.Error != "" {
					return fmt.Errorf("instance rebalance: %s", run.Error)
				}
				fmt.Fprintf(stdout, "rebalance %s finished: %s\n", id, count(shown, "move", "moves"))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance rebalance: %s not finished after %s (it goes on; see the balancer wave's /status)", id, wait)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// noJudge is the error of a dry run without a judge (neither -judge nor -config's
// balancer.judge): the plan is the judge's, so say how to name one.
func (ic *instanceCmd) noJudge() error {
	if *ic.f.cfgPath != "" {
		return fmt.Errorf("instance rebalance: %w; give -judge URL, or set balancer.judge in %s", balancer.ErrNoPlanner, *ic.f.cfgPath)
	}
	return fmt.Errorf("instance rebalance: %w; give -judge URL (e.g. -judge http://judge:8090, with -judge-token-file when it has a token)", balancer.ErrNoPlanner)
}

// printAnswer prints the judge's plan with the model and goals it planned for, and in
// the utilisation model every wave's cores, prices and peak utilisation.
func printAnswer(w io.Writer, ans *api.RebalanceAnswer) {
	g := ans.Goals
	cooldown := time.Duration(g.CooldownS * float64(time.Second))
	if ans.Model == api.ModelUtilisation {
		fmt.Fprintf(w, "model: utilisation (CPU over each wave's cores, at its peak over now and the hours of the day; prices fitted per wave)\n")
		if ans.ModelNote != "" {
			fmt.Fprintf(w, "  %s\n", ans.ModelNote)
		}
		fmt.Fprintf(w, "goals: peaks under %s of each wave's cores, each wave within %.3g× the fleet's level (its lines), each move gaining at least %.2g %% of a wave's cores, at most %d moves, cooldown %s (judge data as of %s)\n",
			pctOrNone(g.MaxUtilisation), g.UtilisationBalance, 100*g.UtilisationBand/3, g.MaxMoves, cooldown, ans.DataAsOf.Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "model: rows (%s)\n", cmp.Or(ans.ModelNote, "rows/s plus a floor per instance"))
		fmt.Fprintf(w, "goals: hard max %s, band %.4g, at most %d moves, cooldown %s (judge data as of %s)\n",
			orNone(g.HardMax), g.Band, g.MaxMoves, cooldown, ans.DataAsOf.Format(time.RFC3339))
	}
	printPlan(w, &ans.Plan)
	if ans.Model != api.ModelUtilisation {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// NOW is what the host reads, PEAK what the model predicts at the wave's busiest slot
	// (now among them): a prediction can stand under the reading by its error, and a
	// PEAK under NOW read as a contradiction (an outside trial).
	fmt.Fprintln(w, "NOW: the host's CPU as read; PEAK: the prediction at the busiest slot (now included), before and after the plan,")
	fmt.Fprintln(w, "  from the wave's prices and base: it can stand under NOW by their error, or for minutes after a move")
	fmt.Fprintln(tw, "WAVE\tCORES\tPRICES\tNOW\tPEAK\tPEAK AFTER\tAT\tINSTANCES")
	for _, wl := range ans.Waves {
		if !wl.Alive {
			fmt.Fprintf(tw, "%s\t-\tdead\t\t\t\t\t%d → 0\n", wl.Node, wl.Instances)
			continue
		}
		if wl.LeftOut != "" {
			fmt.Fprintf(tw, "%s\t%.4g\tleft out: %s\t\t\t\t\t%d → %d\n", wl.Node, wl.Cores, wl.LeftOut, wl.Instances, wl.InstancesAfter)
			continue
		}
		at := "now"
		if wl.PeakHour >= 0 {
			at = fmt.Sprintf("%02d:00 UTC", wl.PeakHour)
		}
		prices := fmt.Sprintf("%s (%s)", wl.Prices.Source, count(wl.Prices.Samples, "sample", "samples"))
		fmt.Fprintf(tw, "%s\t%.4g\t%s\t%.1f %%\t%.1f %%\t%.1f %%\t%s\t%d → %d\n", wl.Node, wl.Cores, prices,
			100*wl.UtilNow, 100*wl.PeakBefore, 100*wl.PeakAfter, at, wl.Instances, wl.InstancesAfter)
	}
	tw.Flush()
	said := map[string]bool{}
	for _, wl := range ans.Waves {
		if len(wl.SharesHostWith) == 0 {
			continue
		}
		group := slices.Sorted(slices.Values(append([]string{wl.Node}, wl.SharesHostWith...)))
		if key := strings.Join(group, ", "); !said[key] {
			said[key] = true
			fmt.Fprintf(w, "one host: %s (CORES: each wave's equal share of it; NOW: its process's CPU and its part of the host's other work)\n", key)
		}
	}
}

func pctOrNone(v float64) string {
	if v <= 0 {
		return "no limit"
	}
	return fmt.Sprintf("%.3g %%", 100*v)
}

func printPlan(w io.Writer, p *api.Plan) {
	state := "balanced"
	if !p.Balanced {
		state = "not balanced: " + p.Unmet
	}
	// The highest load first: the utilisation model's goals are lines over the fleet's
	// level, not a spread, and a plan that left a 10-point spread "balanced" read as
	// one that missed its goal (an outside trial).
	fmt.Fprintf(w, "plan: %s, highest load %.4g → %.4g, spread %.4g → %.4g, %s\n", count(len(p.Moves), "move", "moves"),
		p.PeakBefore, p.PeakAfter, p.SpreadBefore, p.SpreadAfter, state)
	if p.ShareShort != "" {
		fmt.Fprintf(w, "short of their share: %s\n", p.ShareShort)
	}
	if p.OutOfTime {
		fmt.Fprintln(w, "the search ran out of its time: the plan is what it had found by then (a busy judge plans less well; ask again)")
	}
	if len(p.Moves) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tINSTANCE\tFROM\tTO\tREASON\tCOST\tFROM LOAD\tTO LOAD")
		for i, m := range p.Moves {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.4g\t%.4g → %.4g\t%.4g → %.4g\n", i+1, m.Instance, dash(m.From), m.To, m.Reason,
				m.Cost, m.FromLoad[0], m.FromLoad[1], m.ToLoad[0], m.ToLoad[1])
		}
		tw.Flush()
		for i, m := range p.Moves {
			if m.Tie != "" {
				fmt.Fprintf(w, "move %d, not to the lowest: %s\n", i+1, m.Tie)
			}
		}
	}
	nodes := make([]string, 0, len(p.Before))
	for n := range p.Before {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tPLANNED LOAD\tAFTER") // the plan's: peaks in utilisation, rows/s in the rows model, not a reading now
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\n", n, p.Before[n], p.After[n])
	}
	tw.Flush()
}

func orNone(v float64) string {
	if v <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.4g", v)
}
