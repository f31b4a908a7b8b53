package fleetsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
)

// runner is one run: the simulated cluster, the clock and the judge's API.
type runner struct {
	o   Options
	f   *Fleet
	s   *state
	clk clock
	api *judgeAPI
	out io.Writer
	// refresh makes the in-process judge's historical refresh (nil for an external
	// judge, which makes its own); refreshed is the simulated time of the last.
	refresh   func(context.Context) error
	refreshed time.Time
}

// Run simulates the fleet o describes against a judge and reports the truth of the
// judge's plans beside the references.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("fleet simulation: %w", err)
	}
	began := time.Now()
	var clk clock
	judgeName := o.JudgeURL
	if o.JudgeURL != "" || o.Now.IsZero() {
		// An external judge runs at the wall clock; so does an unset Now.
		o.Now = time.Now().UTC().Truncate(time.Minute)
	}
	f, err := Generate(o)
	if err != nil {
		return nil, fmt.Errorf("fleet simulation: %w", err)
	}
	from := o.Now.Add(-o.History)
	base := o.JudgeURL
	var refresh func(context.Context) error
	if base == "" {
		sc := newSimClock(from)
		clk, judgeName = sc, "in-process (SQLite, simulated clock)"
		url, refr, stop, err := inProcessJudge(ctx, o, sc.now)
		if err != nil {
			return nil, err
		}
		defer func() {
			if serr := stop(); serr != nil && o.Logger != nil {
				o.Logger.Warn("stopping the in-process judge", "err", serr)
			}
		}()
		base, refresh = url, refr
	} else {
		clk = wallClock{}
	}
	api, err := newJudgeAPI(base, o.Token, o.CAFile, o.Senders)
	if err != nil {
		return nil, fmt.Errorf("fleet simulation: judge client: %w", err)
	}
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	r := &runner{o: o, f: f, s: newState(f, o), clk: clk, api: api, out: out, refresh: refresh}
	rep := &Report{Seed: o.Seed, Cores: o.Cores, Waves: len(f.Waves), Instances: len(f.Instances), Judge: judgeName,
		HistoryFrom: from, Start: o.Now, Rounds: []Round{}}
	if o.HostShare > 1 {
		rep.HostShare, rep.HostOther = o.HostShare, o.HostOther
	}
	fmt.Fprintf(out, "fleet: %s (%s)%s, %s; judge %s at %s\n", count(len(f.Waves), "wave"), FormatCores(o.Cores), hostsText(o.HostShare, o.HostOther),
		count(len(f.Instances), "instance"), judgeName, base)
	if err := r.history(ctx, rep); err != nil {
		return nil, err
	}
	if err := r.rounds(ctx, rep); err != nil {
		return nil, err
	}
	r.conclude(rep)
	rep.Batches, rep.Points, rep.Retries = api.batches.Load(), api.points.Load(), api.retries.Load()
	rep.Elapsed = time.Since(began)
	return rep, nil
}

// tick moves the clock to t and sends every wave's batch of t, step after the previous.
func (r *runner) tick(ctx context.Context, t time.Time, step time.Duration) error {
	if err := r.clk.advance(ctx, t); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.o.Senders)
	for w := range r.f.Waves {
		g.Go(func() error { return r.api.send(gctx, r.s.batch(w, t, step)) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("fleet simulation: %w", err)
	}
	return nil
}

// history feeds the agents' batches from HistoryFrom to Now, every HistoryStep and every
// Step over the last Warmup, and waits for a historical refresh that covers them.
func (r *runner) history(ctx context.Context, rep *Report) error {
	o := r.o
	warm := o.Now.Add(-o.Warmup)
	var ticks []time.Time
	for t := rep.HistoryFrom; t.Before(warm); t = t.Add(o.HistoryStep) {
		ticks = append(ticks, t)
	}
	for t := warm; !t.After(o.Now); t = t.Add(o.Step) {
		ticks = append(ticks, t)
	}
	start, next := time.Now(), 0
	for k, t := range ticks {
		step := o.Step
		if t.Before(warm) {
			step = o.HistoryStep
		}
		if err := r.tick(ctx, t, step); err != nil {
			return err
		}
		if pct := 10 * (k + 1) / len(ticks); pct > next || k == len(ticks)-1 {
			next = pct
			fmt.Fprintf(r.out, "history: %s of %s simulated, %d batches (%d points, %d retried), %s real\n",
				t.Sub(rep.HistoryFrom).Round(time.Minute), o.History, r.api.batches.Load(), r.api.points.Load(),
				r.api.retries.Load(), time.Since(start).Round(time.Millisecond))
		}
	}
	if r.refresh != nil {
		if err := r.historical(ctx); err != nil {
			return err
		}
		rep.HistoricalAsOf = r.refreshed
		return nil
	}
	if o.HistoryWait <= 0 {
		return nil
	}
	fmt.Fprintf(r.out, "waiting up to %s for the judge's historical refresh of the history\n", o.HistoryWait)
	asOf, err := r.api.awaitHistorical(ctx, o.Now, o.HistoryWait)
	switch {
	case errors.Is(err, errHistoryWait):
		fmt.Fprintf(r.out, "warning: %v (the last as of %s); going on without it\n", err, asOf.Format(time.RFC3339))
	case err != nil:
		return fmt.Errorf("fleet simulation: %w", err)
	default:
		rep.HistoricalAsOf = asOf
		fmt.Fprintf(r.out, "historical refresh as of %s\n", asOf.Format(time.RFC3339))
	}
	return nil
}

// historical makes the in-process judge's historical refresh at the simulated now, after
// every batch sent so far was stored, and says how long it took.
func (r *runner) historical(ctx context.Context) error {
	at, began := r.clk.now(), time.Now()
	if err := r.refresh(ctx); err != nil {
		return fmt.Errorf("fleet simulation: the judge's historical refresh at %s: %w", at.Format(time.RFC3339), err)
	}
	r.refreshed = at
	fmt.Fprintf(r.out, "historical refresh as of %s: %s real\n", at.Format(time.RFC3339), time.Since(began).Round(time.Millisecond))
	return nil
}

// roundsOver says whether the balancer stops asking after round n at at: before the
// fleet is first balanced (zero), at the round limit; after, once it has asked on for
// the settle window.
func roundsOver(balanced, at time.Time, n int, o Options) bool {
	if balanced.IsZero() {
		return n >= o.Rounds
	}
	return !at.Before(balanced.Add(o.Settle))
}

// rounds asks for plans and applies them, every RoundEvery with the agents reporting
// every Step between, until a plan is empty or Rounds; with Settle, on for that long
// after the first empty plan that says the fleet is balanced.
func (r *runner) rounds(ctx context.Context, rep *Report) error {
	o := r.o
	inst, wave := map[string]int{}, map[string]int{}
	for i, in := range r.f.Instances {
		inst[in.ID] = i
	}
	for w, wv := range r.f.Waves {
		wave[wv.Node] = w
	}
	moved := map[int]bool{}
	var before, after PredictionError
	rep.EndedBy = "round limit"
	idle := 0 // empty plans in a row that said the goals are unmet
	for n := 1; ; n++ {
		at := r.clk.now()
		req := r.s.request()
		asked := time.Now()
		body, err := r.api.rebalance(ctx, req)
		answered := time.Since(asked)
		if err != nil {
			return fmt.Errorf("fleet simulation: round %d: %w", n, err)
		}
		moves, raw, err := decodePlan(body)
		if err != nil {
			return fmt.Errorf("fleet simulation: round %d: %w", n, err)
		}
		h := hourOf(at)
		truthBefore, dayBefore := r.truthByNode(atHour(h)), r.truthByNode(dayPeak)
		a := r.s.apply(moves, at, inst, wave)
		truthAfter, dayAfter := r.truthByNode(atHour(h)), r.truthByNode(dayPeak)
		kb, pb := predicted(raw, o.PredictedBefore)
		before.add(kb, pb, dayBefore)
		ka, pa := predicted(raw, o.PredictedAfter)
		after.add(ka, pa, dayAfter)
		rd := Round{N: n, At: at, Planned: len(moves), Moved: len(a.moved), Skipped: a.skipped, Answered: answered,
			MovedInstances: []string{}, MovedTo: []string{}}
		if len(moves) > 0 {
			rd.Reasons = map[string]int{}
		}
		for _, m := range moves {
			rd.Reasons[cmp.Or(m.Reason, "unsaid")]++
		}
		rd.HardMaxHostMates = hardMaxHostMates(r.f, moves, wave)
		rd.PeakBefore, rd.SpreadBefore = peakSpread(truthBefore)
		rd.PeakAfter, rd.SpreadAfter = peakSpread(truthAfter)
		for _, i := range a.moved {
			moved[i] = true
			rd.MovedInstances = append(rd.MovedInstances, r.f.Instances[i].ID)
			rd.MovedTo = append(rd.MovedTo, r.f.Waves[r.s.assign[i]].Node)
		}
		rep.Rounds = append(rep.Rounds, rd)
		rep.Moves += len(a.moved)
		rep.Skipped += a.skipped
		fmt.Fprintf(r.out, "round %d at %s: %d moves planned%s in %s, %d applied; true peak %s → %s, spread %s → %s\n",
			n, at.Format("15:04"), len(moves), rd.reasonsText(), answered.Round(time.Millisecond), len(a.moved),
			pct(rd.PeakBefore), pct(rd.PeakAfter), pct(rd.SpreadBefore), pct(rd.SpreadAfter))
		if outOfTime(raw) {
			rep.OutOfTime++
		}
		switch {
		case len(moves) > 0:
			idle = 0
			rep.Plans++
			if !rep.Balanced.IsZero() {
				rep.Unsettled += len(a.moved)
			}
		case balanced(raw):
			idle = 0
			rep.EndedBy = "empty plan"
			if rep.Balanced.IsZero() {
				rep.Balanced = at
			}
		default:
			// An empty plan that says the goals are unmet (cooldowns hold the instances
			// that could move) is not the end: a balancer asks again later. Three in a
			// row are: the judge has nothing more to do.
			if idle++; idle == 3 {
				rep.EndedBy = "three empty plans, goals unmet"
			}
		}
		if idle == 3 || roundsOver(rep.Balanced, at, n, o) {
			break
		}
		for t := at.Add(o.Step); !t.After(at.Add(o.RoundEvery)); t = t.Add(o.Step) {
			if err := r.tick(ctx, t, o.Step); err != nil {
				return err
			}
			if r.refresh != nil && !t.Before(r.refreshed.Add(o.HistoricalEvery)) {
				if err := r.historical(ctx); err != nil {
					return err
				}
				rep.Refreshes++
			}
		}
	}
	rep.Distinct = len(moved)
	if before.Plans > 0 {
		rep.PredictedBefore = &before
	}
	if after.Plans > 0 {
		rep.PredictedAfter = &after
	}
	return nil
}

// truthByNode is every wave's true utilisation by m, by node.
func (r *runner) truthByNode(m measure) map[string]float64 {
	u := utils(r.f, r.s.ls, m)
	out := make(map[string]float64, len(u))
	for w, v := range u {
		out[r.f.Waves[w].Node] = v
	}
	return out
}

func peakSpread(u map[string]float64) (peak, spread float64) {
	first := true
	var lo float64
	for _, v := range u {
		if first {
			peak, lo, first = v, v, false
		}
		peak, lo = max(peak, v), min(lo, v)
	}
	return peak, peak - lo
}

// conclude fills the report's figures at the end of the run.
func (r *runner) conclude(rep *Report) {
	rep.End = r.clk.now()
	h := hourOf(rep.End)
	rep.Now = compare(r.f, r.s.assign, atHour(h), h)
	rep.Day = compare(r.f, r.s.assign, dayPeak, h, fluidPeakHour(r.f))
	targetNow, targetDay := TargetFactor*rep.Now.Greedy.Peak, TargetFactor*rep.Day.Greedy.Peak
	rep.Now.JudgeMovesToTarget = movesToTarget(r.f, r.s.moves, atHour(h), targetNow)
	rep.Day.JudgeMovesToTarget = movesToTarget(r.f, r.s.moves, dayPeak, targetDay)
	rep.Both = joint(r.f, r.s.moves, h, targetNow, targetDay)
	if r.o.Truth {
		rep.Truth = truthOf(r.f, h, targetNow, targetDay)
	}
	now, day := utils(r.f, r.s.ls, atHour(h)), utils(r.f, r.s.ls, dayPeak)
	rep.Assignment = make(map[string]string, len(r.f.Instances))
	for i, w := range r.s.assign {
		rep.Assignment[r.f.Instances[i].ID] = r.f.Waves[w].Node
	}
	for w, wv := range r.f.Waves {
		rep.Final = append(rep.Final, WaveResult{Node: wv.Node, Cores: wv.Cores, Speed: wv.Speed,
			Instances: len(r.s.on[w]), Now: now[w], Day: day[w]})
	}
}

// movesToTarget replays moves from the initial assignment and returns after how many
// the peak by m was first at most target; -1 when never.
func movesToTarget(f *Fleet, moves [][2]int, m measure, target float64) int {
	return replay(f, moves, m, target).toTarget
}

// replayed is what replaying a run's moves from the initial assignment shows.
type replayed struct {
	// toTarget is after how many moves the peak by m was first at most target; -1 when
	// never.
	toTarget int
	// offWithin and offFilled count, of those moves, the ones off a wave then within the
	// target, and off a wave over it that started within it (moves onto it had filled it
	// past it): moves a lower bound of what must move does not count (leastMoves counts
	// only instances that leave the waves over the target at the start).
	offWithin, offFilled int
}

func replay(f *Fleet, moves [][2]int, m measure, target float64) replayed {
	assign := slices.Clone(f.Initial)
	ls := loads(f, assign)
	u := utils(f, ls, m)
	startedWithin := make([]bool, len(u))
	for w, v := range u {
		startedWithin[w] = v <= target
	}
	var r replayed
	for n := 0; ; n++ {
		if slices.Max(u) <= target {
			r.toTarget = n
			return r
		}
		if n == len(moves) {
			return replayed{toTarget: -1}
		}
		i, to := moves[n][0], moves[n][1]
		from := assign[i]
		switch {
		case u[from] <= target:
			r.offWithin++
		case startedWithin[from]:
			r.offFilled++
		}
		ls[from] = ls[from].minus(contrib(f.Waves[from], f.Instances[i]))
		ls[to] = ls[to].plus(contrib(f.Waves[to], f.Instances[i]))
		u[from] = m(ls[from]) / float64(f.Waves[from].Cores)
		u[to] = m(ls[to]) / float64(f.Waves[to].Cores)
		assign[i] = to
	}
}

// compare is the figures of the judge's assignment and of the references by m.
// The bound's dual part is computed at hours.
func compare(f *Fleet, assign []int, m measure, hours ...float64) Comparison {
	g := greedy(f, m)
	c := Comparison{Initial: figuresOf(f, f.Initial, m), Judge: figuresOf(f, assign, m),
		Greedy: figuresOf(f, g, m), Bound: lowerBound(f, m, hours...)}
	for i, w := range g {
		if w != f.Initial[i] {
			c.GreedyMoves++
		}
	}
	_, c.Descent = descent(f, f.Initial, m, TargetFactor*c.Greedy.Peak)
	c.Ratio = c.Judge.Peak / c.Greedy.Peak
	return c
}
