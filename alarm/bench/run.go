package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
)

// Result holds the figures of a run.
type Result struct {
	// Dir is the run's temporary folder and AlarmPID the alarm's process (both gone
	// after the run unless Keep).
	Dir                                        string
	AlarmPID                                   int
	Topic                                      string
	Nodes, Policies, Partitions, Batch, Target int
	// Produced are the points the broker acknowledged over the run (the warm-up batch
	// included); ProduceErrors those it did not.
	Produced, ProduceErrors int64
	// LoadPoints were handed to the producer during the load, which lasted Load.
	LoadPoints int64
	Load       time.Duration
	// Evaluated, Evaluations and DecodeErrors are the alarm's counters over the run
	// (points received and evaluated, condition evaluations, undecodable batches);
	// EvaluatedInLoad is the part of Evaluated counted during the load.
	Evaluated, Evaluations, DecodeErrors, EvaluatedInLoad int64
	// AllEvaluated runs from the load's first send to the alarm counting every
	// produced point.
	AllEvaluated time.Duration
	// LagAtLoadEnd is the group's lag in messages when the load stopped (the writer
	// flushed); LagEnd once every point was evaluated and the commits settled, after
	// LagSettled more.
	LagAtLoadEnd, LagEnd int64
	LagSettled           time.Duration
	// Violations injected (Sent of them reached the producer before the load ended),
	// Arrived at the webhook, and their latency, sending to arrival.
	Violations, Sent, Arrived int
	Latency                   benchkit.Latency
	// Webhook requests received, and firing alerts seen (a policy on a node).
	WebhookRequests, WebhookAlerts int
	// CPU time (user + system) in Window (the load's first send to all evaluated), of
	// the alarm, the bench and the broker; negative where it could not be read
	// (BrokerNote says why).
	AlarmCPU, BenchCPU, BrokerCPU time.Duration
	BrokerPID                     int
	BrokerNote                    string
	Window                        time.Duration
}

// OfferedPerS is the rate the producer achieved during the load.
func (r *Result) OfferedPerS() float64 { return rate(r.LoadPoints, r.Load) }

// SustainedPerS is the rate the alarm evaluated at during the load.
func (r *Result) SustainedPerS() float64 { return rate(r.EvaluatedInLoad, r.Load) }

// OverallPerS is the load's points over first send to all evaluated.
func (r *Result) OverallPerS() float64 { return rate(r.LoadPoints, r.AllEvaluated) }

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Time limits of a run's phases.
const (
	// stallAfter ends a run whose alarm evaluates nothing new, or whose violations do
	// not arrive, for this long.
	stallAfter = 30 * time.Second
	// pollEvery is how often the alarm's counters are read once the load stopped: it
	// bounds how late "all evaluated" is seen.
	pollEvery = 20 * time.Millisecond
)

func runLoad(ctx context.Context, o Options, e *env, a *alarmProc, hook *receiver) (*Result, error) {
	out := o.Out
	res := &Result{Dir: e.dir, AlarmPID: a.Pid(), Topic: e.topic, Nodes: o.Nodes, Policies: o.Policies, Partitions: o.Partitions, Batch: o.Batch,
		Target: o.Rate, Violations: o.Violations}
	c0, err := a.counters(ctx)
	if err != nil {
		return nil, err
	}
	p := newProducer(o, e.topic)
	defer p.Close()

	// Warm-up: one batch, so that the group has joined and reads before the clock starts.
	if err := p.warmUp(ctx); err != nil {
		return nil, err
	}
	if _, err := waitEvaluated(ctx, a, c0.Points+int64(o.Batch), time.Minute); err != nil {
		return nil, fmt.Errorf("bench alarm: the alarm did not read the warm-up batch: %w%s", err, a.LogTail())
	}
	cw, err := a.counters(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "producing %d points/s for %s: %d nodes, batches of %d points, %d violations\n",
		o.Rate, o.Duration, o.Nodes, o.Batch, o.Violations)

	cpu := snapCPU(a, o.Brokers[0])
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, start) }()
	if err := progress(ctx, o, e, a, p, start, cw.Points, done); err != nil {
		return nil, err
	}
	res.Load = time.Since(start)
	res.LoadPoints = p.produced.Load() - int64(o.Batch)
	cl, err := a.counters(ctx)
	if err != nil {
		return nil, err
	}
	res.EvaluatedInLoad = cl.Points - cw.Points
	if err := p.Close(); err != nil {
		return nil, fmt.Errorf("bench alarm: producer: %w", err)
	}
	res.Produced, res.ProduceErrors = p.Acked(), p.Failed()
	if res.LagAtLoadEnd, err = e.k.Lag(ctx, e.topic, e.group); err != nil {
		return nil, fmt.Errorf("bench alarm: %w", err)
	}

	cend, err := waitEvaluated(ctx, a, c0.Points+res.Produced, stallAfter)
	if err != nil {
		return nil, fmt.Errorf("bench alarm: %w (see %s)", err, a.Log)
	}
	res.AllEvaluated = time.Since(start)
	cpu.end()
	res.Evaluated, res.Evaluations, res.DecodeErrors = cend.Points-c0.Points, cend.Evaluations-c0.Evaluations, cend.DecodeErrors-c0.DecodeErrors
	res.AlarmCPU, res.BenchCPU, res.BrokerCPU, res.BrokerPID, res.BrokerNote = cpu.alarm, cpu.bench, cpu.broker, cpu.brokerPID, cpu.brokerNote
	res.Window = res.AllEvaluated

	settle := time.Now()
	if res.LagEnd, err = waitLagZero(ctx, e); err != nil {
		return nil, err
	}
	res.LagSettled = time.Since(settle)
	res.Sent, res.Arrived, res.Latency = waitViolations(ctx, p, hook)
	res.WebhookRequests, _, res.WebhookAlerts = hook.stats()

	report(out, res)
	return res, check(res, p.Err(), hook)
}

// check turns what the run must show into an error: every point evaluated once, nothing
// left in the topic, every violation notified, nothing else notified.
func check(r *Result, produceErr error, hook *receiver) error {
	var errs []error
	if r.ProduceErrors > 0 {
		errs = append(errs, fmt.Errorf("%d points could not be produced: %v", r.ProduceErrors, produceErr))
	}
	if r.DecodeErrors > 0 {
		errs = append(errs, fmt.Errorf("the alarm could not decode %d batches", r.DecodeErrors))
	}
	if r.Evaluated != r.Produced {
		errs = append(errs, fmt.Errorf("the alarm evaluated %d points, %d were produced", r.Evaluated, r.Produced))
	}
	if r.LagEnd != 0 {
		errs = append(errs, fmt.Errorf("the group still lags %d messages", r.LagEnd))
	}
	if r.Arrived != r.Violations {
		errs = append(errs, fmt.Errorf("%d of %d violations arrived at the webhook (%d sent)", r.Arrived, r.Violations, r.Sent))
	}
	if r.WebhookAlerts != r.Arrived {
		errs = append(errs, fmt.Errorf("%d alerts fired, %d violations were injected: a policy fires on the load itself", r.WebhookAlerts, r.Arrived))
	}
	if _, bad, _ := hook.stats(); bad > 0 {
		errs = append(errs, fmt.Errorf("%d webhook bodies were not payloads", bad))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench alarm: %w", err)
	}
	return nil
}

// progress prints a line every o.Progress until the producer is done.
func progress(ctx context.Context, o Options, e *env, a *alarmProc, p *producer, start time.Time, base int64, done <-chan error) error {
	t := time.NewTicker(o.Progress)
	defer t.Stop()
	last, lastP, lastE := start, int64(0), int64(0)
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		c, err := a.counters(ctx)
		if err != nil {
			return err
		}
		lag, lerr := e.k.Lag(ctx, e.topic, e.group)
		lagS := fmt.Sprint(lag)
		if lerr != nil {
			lagS = "n/a"
		}
		now := time.Now()
		pr, ev, s := p.produced.Load()-int64(o.Batch), c.Points-base, now.Sub(last).Seconds()
		fmt.Fprintf(o.Out, "  %5.1f s  produced %d (%.0f/s)  evaluated %d (%.0f/s)  lag %s messages\n",
			now.Sub(start).Seconds(), pr, float64(pr-lastP)/s, ev, float64(ev-lastE)/s, lagS)
		last, lastP, lastE = now, pr, ev
	}
}

// waitEvaluated polls the alarm's counters until it counted want points, failing when
// the count stops moving for stall.
func waitEvaluated(ctx context.Context, a *alarmProc, want int64, stall time.Duration) (counters, error) {
	var prev int64 = -1
	moved := time.Now()
	for {
		c, err := a.counters(ctx)
		if err != nil {
			return c, err
		}
		if c.Points >= want {
			return c, nil
		}
		if c.Points != prev {
			prev, moved = c.Points, time.Now()
		} else if time.Since(moved) > stall {
			return c, fmt.Errorf("the alarm evaluated nothing for %s: %d of %d points", stall, c.Points, want)
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// waitLagZero polls the group's lag until it is 0 (the alarm commits shortly after it
// handled a message) or stallAfter passed; it returns the last lag seen.
func waitLagZero(ctx context.Context, e *env) (int64, error) {
	deadline := time.Now().Add(stallAfter)
	for {
		lag, err := e.k.Lag(ctx, e.topic, e.group)
		if err != nil {
			return 0, fmt.Errorf("bench alarm: %w", err)
		}
		if lag == 0 || time.Now().After(deadline) {
			return lag, nil
		}
		select {
		case <-ctx.Done():
			return lag, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitViolations waits until every sent violation arrived at the webhook, or none
// arrived for stallAfter, and summarises the arrivals.
func waitViolations(ctx context.Context, p *producer, hook *receiver) (sent, arrived int, lat benchkit.Latency) {
	sentAt := p.violationTimes()
	keys := make([]alertKey, len(p.viols))
	for k, v := range p.viols {
		keys[k] = alertKey{v.policy, p.f.Node(v.node)}
	}
	for {
		at, changed := hook.arrivals(keys)
		var ds []time.Duration
		sent = 0
		for k := range keys {
			if sentAt[k].IsZero() {
				continue
			}
			sent++
			if !at[k].IsZero() {
				ds = append(ds, at[k].Sub(sentAt[k]))
			}
		}
		if len(ds) == sent {
			return sent, len(ds), benchkit.Summarise(ds)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return sent, len(ds), benchkit.Summarise(ds)
		case <-time.After(stallAfter):
			return sent, len(ds), benchkit.Summarise(ds)
		}
	}
}
