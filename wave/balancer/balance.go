// Package balancer is where an instance moves: the balancer that one wave of the
// cluster, elected, runs (docs/design.md, "Balancing"). It places a dead wave's
// instances, applies rebalancing plans on request and in automatic mode, and executes
// each move until it settles. It needs of its wave only an Env and the membership.
package balancer

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/cluster"
)

// The balancer's loop: elected among the waves, it follows the membership as its wave
// watches it (a wave seen alive whose session ended without a clean stop has its
// instances placed at once; one never seen alive, or that stopped cleanly, gets the
// failover grace to register, as it may be starting), serves
// rebalance requests, and in automatic mode applies plans itself.

// Request asks the balancer to plan and apply a rebalance (`binlake instance
// rebalance -apply`); the balancer answers in the Run with the same ID.
type Request struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// Run is the balancer's latest rebalance run, at balancer/run: its plan and each
// move's result as it comes.
type Run struct {
	ID       string       `json:"id"`
	Source   string       `json:"source"` // "request" or "auto"
	Balancer string       `json:"balancer"`
	Started  time.Time    `json:"started"`
	Finished *time.Time   `json:"finished,omitempty"`
	Plan     *api.Plan    `json:"plan,omitempty"`
	Results  []MoveResult `json:"results"`
	Error    string       `json:"error,omitempty"`
}

// Env is what the balancer needs of the wave it runs in.
type Env struct {
	Coord coord.Coordinator
	Node  string // the wave's name
	// Log carries the balancer's component (the wave gives it component=wave.balancer):
	// the balancer adds none, as a second component key would repeat the first.
	Log *slog.Logger
	// PollInterval is how often a term polls for rebalance requests and reads the
	// membership's state; RetryBackoff the pause after a failed campaign or a term that
	// ended by itself.
	PollInterval, RetryBackoff time.Duration
}

// Balancer is a wave's part in balancing: it campaigns for the balancer's role (Run) and
// balances while it holds it; Status is what the wave's /status shows of it.
type Balancer struct {
	Env
	opts  Options
	m     Metrics
	state balancerState
}

// New is the balancer of a wave, with opts whose defaults are set (SetDefaults: the wave
// sets them, as its election fallback reads FailoverGrace too).
func New(env Env, opts Options, m Metrics) *Balancer {
	return &Balancer{Env: env, opts: opts, m: m}
}

// Status is what the wave's /status shows of the balancer.
func (bl *Balancer) Status() View { return bl.state.snapshot() }

// term is the state of one term as the cluster's balancer. It reads the whole cluster
// (a few coordinator reads per instance) on a member change and every Interval, never
// per poll: a poll reads only balancer/request.
type term struct {
	bl      *Balancer
	members *cluster.Members // the membership as the wave's watch sees it
	opts    Options
	mv      *mover
	running atomic.Bool // a rebalance run is applying moves
	outside time.Time   // when the load left the goals (automatic mode); zero: within
	// within counts the plans in a row that found the load within the goals since it
	// left them: it is back only at withinPlans (one empty plan among plans of moves is
	// the readings' noise, and restarted the wait for auto_after: an outside trial's new
	// wave waited 2.5 minutes more).
	within int
	// heldSaid is the waves held as possibly starting that the log last named.
	heldSaid string
}

func newTerm(bl *Balancer, members *cluster.Members) *term {
	return &term{bl: bl, members: members, opts: bl.opts, mv: &mover{c: bl.Coord, opts: bl.opts, log: bl.Log,
		http: &http.Client{Timeout: 5 * time.Second}, now: time.Now}}
}

// Run campaigns for the balancer's role and balances while it holds it, until ctx ends.
// members is the membership as the wave's watch sees it: the wave is registered and
// watching by now.
func (bl *Balancer) Run(ctx context.Context, members *cluster.Members) {
	if bl.opts.Disabled {
		return
	}
	for ctx.Err() == nil {
		lead, err := bl.Coord.Campaign(ctx, cluster.BalancerLeaderKey, []byte(bl.Node))
		if err != nil {
			if ctx.Err() == nil {
				bl.Log.Warn("balancer campaign failed", "err", err)
				backoff.Sleep(ctx, bl.RetryBackoff)
			}
			continue
		}
		planner := "judge"
		if bl.opts.Planner == nil {
			planner = "none: a dead wave's instances go to the waves with the fewest"
		}
		bl.Log.Info("this wave balances the cluster", "planner", planner, "auto", bl.opts.Auto)
		bl.m.Leader.Set(1)
		bl.state.update(func(v *View) { v.Leader, v.Auto = true, bl.opts.Auto })
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-lead.Lost():
			case <-lctx.Done():
			}
			cancel()
		}()
		newTerm(bl, members).loop(lctx)
		cancel()
		bl.m.Leader.Set(0)
		bl.m.Spread.Set(0)
		bl.m.MeanLoad.Set(0)
		bl.m.MeanUtil.Set(0)
		bl.state.update(func(v *View) { v.Leader, v.OutsideSince = false, nil })
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		lead.Resign(rctx)
		rcancel()
		// A term that ended by itself (its member watch failed) leaves another wave a
		// chance to win before this one campaigns again.
		backoff.Sleep(ctx, bl.RetryBackoff)
	}
}

func (b *term) loop(ctx context.Context) {
	poll := time.NewTicker(b.bl.PollInterval)
	defer poll.Stop()
	plan := time.NewTicker(b.opts.Interval)
	defer plan.Stop()
	// wake runs a failover when the grace of a wave held as possibly starting ends.
	wake := time.NewTimer(time.Hour)
	wake.Stop()
	defer wake.Stop()
	failover := func() {
		if at := b.failover(ctx); !at.IsZero() {
			wake.Reset(max(time.Until(at), 0) + 10*time.Millisecond)
		}
	}
	// The channel is taken before each failover: a member change while it runs wakes the
	// next one.
	_, changed := b.members.Changes()
	failover()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			_, changed = b.members.Changes()
			failover()
		case <-wake.C:
			_, changed = b.members.Changes()
			failover()
		case <-poll.C:
			b.serveRequest(ctx)
		case <-plan.C:
			// Also what no member change announced: an instance added to a dead wave, or
			// a failover that failed to write.
			_, changed = b.members.Changes()
			failover()
			b.auto(ctx)
		}
	}
}

// readCluster reads the cluster as the balancer plans from it: a wave that is not live
// but not dead yet is held out of it with its instances, so that no plan moves them while
// that wave may be starting: one never seen alive by this wave, or one that stopped
// cleanly (cluster.StopRecord), within the failover grace (Absence.DeadAt), and one whose
// new process waits for its name, still held by the
// session of its previous one (cluster.GroupStarting). recheck is when to look again at the held
// waves (zero: none is held).
func (b *term) readCluster(ctx context.Context) (cl *clusterView, held []string, recheck time.Time, err error) {
	starting, err := b.bl.Coord.Members(ctx, cluster.GroupStarting)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("list starting waves: %w", err)
	}
	cl, err = readCluster(ctx, b.bl.Coord)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	now := time.Now()
	var readErr error
	held = cl.hold(func(node string) bool {
		a := b.members.Absence(node)
		if a.Live {
			// Still live in this wave's view but missing from the read, which is newer:
			// it has just left, and the member change saying so is on its way. Seen
			// leaving now, it is dead at once unless it stopped cleanly (the balancer
			// that had just stopped was failed over this way, its successor's watch a
			// few milliseconds behind its first read).
			a = cluster.Absence{Seen: true, Since: now}
		}
		if a.Seen {
			// It left: a crash, or a stop it was asked for, as a deploy restarts it.
			stopped, serr := cluster.StoppedCleanly(ctx, b.bl.Coord, node)
			a.Stopped, readErr = stopped, cmp.Or(readErr, serr)
		}
		at := a.DeadAt(b.opts.FailoverGrace)
		if slices.ContainsFunc(starting, func(m coord.Member) bool { return m.ID == node }) {
			// Its registration ends the hold (a member change); a process that gives up
			// does not announce it: look again at the next poll.
			at = now.Add(b.bl.PollInterval)
		}
		if !at.After(now) {
			return false
		}
		if recheck.IsZero() || at.Before(recheck) {
			recheck = at
		}
		return true
	})
	if readErr != nil {
		return nil, nil, time.Time{}, readErr
	}
	return cl, held, recheck, nil
}

// failover assigns every instance of a dead wave (or of none) to a live one, as the
// planner places them, or by fewest instances when it does not answer. It returns when
// to look again for a wave held as possibly starting (zero: none). It acts only on a
// read at least as new as the latest member change: one that comes while it reads or
// plans (a wave registered, or left) ends the pass, and the loop starts the next one.
func (b *term) failover(ctx context.Context) time.Time {
	gen, _ := b.members.Changes()
	cl, held, recheck, err := b.readCluster(ctx)
	if err != nil {
		if ctx.Err() == nil {
			b.mv.log.Warn("read the cluster", "err", err)
		}
		return time.Time{}
	}
	// Said once per change: meanwhile a pass may run at every poll.
	if said := fmt.Sprint(held); said != b.heldSaid {
		b.heldSaid = said
		if len(held) > 0 {
			b.mv.log.Info("waves not live that may be starting (never seen alive by this wave, stopped cleanly, or waiting for their name): their instances stay for now",
				"waves", held, "look_again", recheck.UTC().Format(time.RFC3339Nano))
		}
	}
	orphans := cl.orphans()
	if len(orphans) == 0 {
		return recheck
	}
	b.mv.log.Info("instances without a live wave", "count", len(orphans), "instances", orphans)
	plan := b.plan(ctx, cl, true)
	for _, m := range plan.Moves {
		if m.Reason != api.ReasonFailover {
			continue
		}
		if g, _ := b.members.Changes(); g != gen {
			b.mv.log.Info("the waves' membership changed since the cluster was read; placing from a new read")
			return recheck
		}
		r := MoveResult{Move: m, At: time.Now().UTC(), Result: MoveAssigned}
		switch err := b.mv.assign(ctx, m, cl.versions[m.Instance]); {
		case errors.Is(err, errStale):
			r.Result, r.Error = MoveSkipped, err.Error()
		case err != nil:
			r.Result, r.Error = MoveFailed, err.Error()
			b.mv.log.Error("failover assignment failed", "instance", m.Instance, "to", m.To, "err", err)
		default:
			args := []any{"instance", m.Instance, "from", m.From, "to", m.To, "cost", m.Cost, "to_load", m.ToLoad}
			if m.Tie != "" {
				args = append(args, "tie", m.Tie)
			}
			b.mv.log.Info("failover: instance assigned", args...)
		}
		b.record(r)
	}
	return recheck
}

// plan asks the planner; for a failover (orphans only) it falls back to fewest
// instances when the planner is missing or does not answer in time.
func (b *term) plan(ctx context.Context, cl *clusterView, failover bool) api.Plan {
	if b.opts.Planner != nil {
		pctx, cancel := context.WithTimeout(ctx, b.opts.PlanTimeout)
		ans, err := b.opts.Planner.Rebalance(pctx, cl.req)
		cancel()
		if err == nil {
			b.bl.state.update(func(v *View) { v.Planner = "judge" })
			b.bl.m.observePlan(ans)
			return ans.Plan
		}
		if ctx.Err() != nil {
			return api.Plan{}
		}
		b.bl.m.Fallbacks.WithLabelValues("judge_error").Inc()
		b.mv.log.Warn("the judge did not answer; placing by fewest instances", "err", err)
	} else {
		b.bl.m.Fallbacks.WithLabelValues("no_judge").Inc()
		b.mv.log.Info("no judge configured; placing by fewest instances")
	}
	b.bl.state.update(func(v *View) { v.Planner = "fewest_instances" })
	if !failover {
		return api.Plan{}
	}
	return fewestInstances(cl.req, time.Now())
}

func (b *term) record(r MoveResult) {
	b.bl.m.Moves.WithLabelValues(r.Reason, r.Result).Inc()
	b.bl.state.record(r)
}

// auto asks for a plan every Interval, which keeps the load metrics current (the
// capacity alert watches them), and in automatic mode applies it once the load has
// stayed outside the goals for AutoAfter.
func (b *term) auto(ctx context.Context) {
	if b.opts.Planner == nil || b.running.Load() {
		return
	}
	cl, _, _, err := b.readCluster(ctx)
	if err != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, b.opts.PlanTimeout)
	ans, err := b.opts.Planner.Rebalance(pctx, cl.req)
	cancel()
	if err != nil {
		if b.opts.Auto {
			b.mv.log.Warn("automatic rebalancing: the judge did not answer", "err", err)
		} else {
			b.mv.log.Warn("the judge did not answer the balancer's periodic plan (asked for the load metrics; auto_balance is off)", "err", err)
		}
		return
	}
	b.bl.m.observePlan(ans)
	// The judge answered: the planner in use (it showed only after a failover asked it,
	// an outside trial read none minutes into a term).
	b.bl.state.update(func(v *View) { v.Planner = "judge" })
	if !b.opts.Auto {
		return
	}
	now := time.Now()
	switch {
	case len(ans.Moves) == 0:
		if b.outside.IsZero() {
			break
		}
		if b.within++; b.within >= withinPlans {
			if ans.Balanced {
				b.mv.log.Info("load back within the goals", goalsLog(ans)...)
			} else {
				// Not "within": an outside trial read "load back within the goals" beside a
				// plan that said its goals were unmet (a host's other work over max_utilisation).
				b.mv.log.Info("no move planned any more: the goals are unmet, but no move helps them; the wait ends",
					append(goalsLog(ans), "unmet", ans.Unmet)...)
			}
			b.outside, b.within = time.Time{}, 0
		}
	case b.outside.IsZero():
		b.outside = now
		b.mv.log.Info("load outside the goals; rebalancing unless it returns",
			append(goalsLog(ans), "moves", len(ans.Moves), "planned", movesText(ans.Moves), "after", b.opts.AutoAfter)...)
	case now.Sub(b.outside)+b.opts.Interval/10 >= b.opts.AutoAfter:
		// Within a tenth of an interval: plans come every interval, and an auto_after
		// that is a multiple of it fell a few milliseconds short when the judge answered
		// sooner than it had to the plan that began the wait, which put the run off by a
		// whole interval (an outside trial: 2 min 30 s after the wait began, not 2 min).
		b.outside, b.within = time.Time{}, 0
		b.start(ctx, newRunID(), "auto", cl, &ans.Plan)
	default:
		b.within = 0 // outside still
	}
	b.bl.state.update(func(v *View) {
		v.OutsideSince = nil
		if !b.outside.IsZero() {
			t := b.outside.UTC()
			v.OutsideSince = &t
		}
	})
}

// serveRequest starts the run an operator asked for, if there is one.
func (b *term) serveRequest(ctx context.Context) {
	c := b.bl.Coord
	v, err := c.Get(ctx, cluster.BalancerRequestKey)
	if err != nil || len(v.Data) == 0 {
		return
	}
	var req Request
	jerr := json.Unmarshal(v.Data, &req)
	if err := c.Delete(ctx, cluster.BalancerRequestKey, v.Version); err != nil {
		return // taken or withdrawn meanwhile
	}
	if jerr != nil || req.ID == "" {
		b.mv.log.Warn("ignoring a malformed rebalance request", "data", string(v.Data))
		return
	}
	run := &Run{ID: req.ID, Source: "request", Balancer: b.bl.Node, Started: time.Now().UTC()}
	fail := func(err error) {
		run.Error = err.Error()
		t := time.Now().UTC()
		run.Finished = &t
		b.writeRun(ctx, run)
	}
	if b.running.Load() {
		fail(errors.New("a rebalance run is already applying moves"))
		return
	}
	if b.opts.Planner == nil {
		fail(fmt.Errorf("%w; set balancer.judge in the waves' config", ErrNoPlanner))
		return
	}
	cl, _, _, err := b.readCluster(ctx)
	if err != nil {
		fail(err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, b.opts.PlanTimeout)
	ans, err := b.opts.Planner.Rebalance(pctx, cl.req)
	cancel()
	if err != nil {
		fail(fmt.Errorf("plan: %w", err))
		return
	}
	b.start(ctx, req.ID, "request", cl, &ans.Plan)
}

// start applies plan in the background (failovers go on meanwhile), writing its
// progress at balancer/run.
func (b *term) start(ctx context.Context, id, source string, cl *clusterView, plan *api.Plan) {
	run := &Run{ID: id, Source: source, Balancer: b.bl.Node, Started: time.Now().UTC(), Plan: plan, Results: []MoveResult{}}
	b.mv.log.Info("rebalancing", "run", id, "source", source, "moves", len(plan.Moves),
		"spread_before", plan.SpreadBefore, "spread_after", plan.SpreadAfter)
	b.writeRun(ctx, run)
	b.running.Store(true)
	go func() {
		defer b.running.Store(false)
		var mu sync.Mutex // moves in flight report concurrently
		err := b.mv.apply(ctx, plan.Moves, cl.versions, func(r MoveResult) {
			b.record(r)
			mu.Lock()
			defer mu.Unlock()
			run.Results = append(run.Results, r)
			b.writeRun(ctx, run)
		})
		if err != nil {
			run.Error = err.Error()
		}
		t := time.Now().UTC()
		run.Finished = &t
		b.writeRun(context.WithoutCancel(ctx), run)
		b.mv.log.Info("rebalance run finished", "run", id, "moves", len(run.Results), "err", err)
	}()
}

func (b *term) writeRun(ctx context.Context, run *Run) {
	data, _ := json.Marshal(run)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.bl.Coord.Put(wctx, cluster.BalancerRunKey, data, coord.AnyVersion); err != nil {
		b.mv.log.Warn("write the rebalance run", "err", err)
	}
}

func newRunID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RequestRebalance asks the cluster's balancer to plan and apply a rebalance and returns
// the request's id; ReadRun reads its progress.
func RequestRebalance(ctx context.Context, c coord.Coordinator) (string, error) {
	if _, err := c.Leader(ctx, cluster.BalancerLeaderKey); err != nil {
		if errors.Is(err, coord.ErrNotFound) {
			return "", errors.New("no balancer runs: no live wave takes part in balancing")
		}
		return "", fmt.Errorf("find the balancer: %w", err)
	}
	req := Request{ID: newRunID(), At: time.Now().UTC()}
	data, _ := json.Marshal(req)
	if _, err := c.Put(ctx, cluster.BalancerRequestKey, data, coord.NoVersion); err != nil {
		if errors.Is(err, coord.ErrVersionConflict) || errors.Is(err, coord.ErrExists) {
			return "", errors.New("another rebalance request is waiting for the balancer")
		}
		return "", fmt.Errorf("request a rebalance: %w", err)
	}
	return req.ID, nil
}

// ReadRun returns the balancer's latest run (ErrNotFound when none).
func ReadRun(ctx context.Context, c coord.Coordinator) (*Run, error) {
	v, err := c.Get(ctx, cluster.BalancerRunKey)
	if err != nil {
		return nil, err
	}
	var run Run
	if err := json.Unmarshal(v.Data, &run); err != nil {
		return nil, fmt.Errorf("read the rebalance run: %w", err)
	}
	return &run, nil
}

// withinPlans is how many plans in a row must find the load within the goals for it to
// be back within them (automatic mode).
const withinPlans = 2

// goalsLog is how a plan stands against its goals, in its model's units: in utilisation
// the highest peak and the spread, as shares of the cores, beside the band's; in rows
// the spread of rows/s beside the band (the log once gave a utilisation spread beside
// the rows model's band of 2000: an outside trial).
// movesText names a plan's first moves (instance from→to, reason) and how many more.
func movesText(ms []api.Move) string {
	const shown = 5
	var b strings.Builder
	for i, m := range ms {
		if i == shown {
			fmt.Fprintf(&b, " and %d more", len(ms)-shown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s→%s %s", m.Instance, m.From, m.To, m.Reason)
	}
	return b.String()
}

func goalsLog(ans *api.RebalanceAnswer) []any {
	if ans.Model == api.ModelUtilisation {
		return []any{"model", ans.Model, "peak", ans.PeakBefore, "spread", ans.SpreadBefore, "utilisation_band", ans.Goals.UtilisationBand}
	}
	return []any{"model", cmp.Or(ans.Model, api.ModelRows), "spread", ans.SpreadBefore, "band", ans.Goals.Band}
}
