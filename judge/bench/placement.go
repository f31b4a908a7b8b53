package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/benchkit"
)

// PlacementResult holds the figures of a placement run.
type PlacementResult struct {
	Nodes, Clients int
	Algorithm      string
	// Answers are the 200 answers (one in checkEvery per client decoded to check it names
	// a node); Latency and AnswerBytes are theirs.
	Answers     int64
	AnswerBytes int64
	Latency     benchkit.Latency
	// Elapsed runs from the first request to the last answer.
	Elapsed time.Duration
	// Errors counts the failed requests by HTTP status, "transport" or "200 without node".
	Errors map[string]int64
	Ingest IngestRate
}

// ReqPerS is the rate of answered placements.
func (r *PlacementResult) ReqPerS() float64 { return float64(r.Answers) / r.Elapsed.Seconds() }

// BytesPerAnswer is the mean size of an answer's body.
func (r *PlacementResult) BytesPerAnswer() float64 {
	if r.Answers == 0 {
		return 0
	}
	return float64(r.AnswerBytes) / float64(r.Answers)
}

// IngestRate is the ingest that ran beside the placements.
type IngestRate struct {
	Target                  int // points/s asked for
	Points, Batches, Errors int64
	Elapsed                 time.Duration
}

// PointsPerS is the ingest rate achieved.
func (r IngestRate) PointsPerS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Points) / r.Elapsed.Seconds()
}

// Placement mode's fixed shapes.
const (
	// checkEvery is how often a client decodes an answer to check it names a node (and
	// always its first): decoding every 100 KB answer would take the load generator's
	// CPU from the judge it shares the machine with.
	checkEvery = 32
	// ingestSenders re-send the nodes' batches while placements run: enough that a
	// slow answer (the judge is saturated by placements) does not hold the rate back,
	// as agents do not wait for each other either.
	ingestSenders = 16
	// liveInterval is the smallest interval the nodes declare, an agent's default.
	liveInterval = 10 * time.Second
)

func runPlacement(ctx context.Context, o Options, j *judgeProc) (*Result, error) {
	out := o.Out
	f := benchkit.NewFleet(o.Nodes, len(benchkit.NodeMetrics))
	per := len(benchkit.NodeMetrics)
	// The nodes declare an interval at least as long as one round of re-sending takes,
	// so that none turns stale; without re-sending, one that outlasts the run.
	interval := liveInterval
	if o.IngestRate > 0 {
		interval = max(interval, time.Duration(float64(o.Nodes*per)/float64(o.IngestRate)*float64(time.Second)))
	} else {
		interval = max(interval, o.Duration+time.Minute)
	}

	t0 := time.Now()
	if err := seed(ctx, o, j, f, interval); err != nil {
		return nil, err
	}
	h, err := j.health(ctx)
	if err != nil {
		return nil, err
	}
	if h.Nodes != o.Nodes {
		return nil, fmt.Errorf("bench judge: seeded %d nodes but the judge knows %d", o.Nodes, h.Nodes)
	}
	fmt.Fprintf(out, "seeded %d nodes (%d points each, interval %s) in %s\n", o.Nodes, per, interval, time.Since(t0).Round(time.Millisecond))

	// An instance of its own per placement (for 128k of them): the judge keeps one
	// reservation per instance, and the run measures a fleet whose every node carries
	// pending ones, as a burst of new instances does.
	bodies := make([][]byte, 1<<17)
	for i := range bodies {
		bodies[i], _ = json.Marshal(map[string]string{"instance": fmt.Sprintf("bench-orders-%06d", i), "algorithm": o.Algorithm})
	}
	first, err := dialJudge(j.base)
	if err == nil {
		_, err = first.place(bodies[0], true)
		first.close()
	}
	if err != nil {
		return nil, fmt.Errorf("bench judge: first placement: %w", err)
	}

	ing := &ingestLoop{fleet: f, rate: o.IngestRate, per: per, interval: interval, base: j.base}
	ictx, stopIngest := context.WithCancel(ctx)
	defer stopIngest()
	ingDone := make(chan struct{})
	go func() { defer close(ingDone); ing.run(ictx) }()

	fmt.Fprintf(out, "placing with %d clients for %s (algorithm %s), ingest %d points/s meanwhile\n", o.Concurrency, o.Duration, o.Algorithm, o.IngestRate)
	pl := &placer{base: j.base, bodies: bodies, res: PlacementResult{Nodes: o.Nodes, Clients: o.Concurrency, Algorithm: o.Algorithm, Errors: map[string]int64{}}}
	cpu0, cerr0 := j.CPU()
	bcpu0 := benchkit.SelfCPU()
	start := time.Now()
	end := start.Add(o.Duration)
	placed := make(chan struct{})
	go func() { defer close(placed); pl.run(ctx, o.Concurrency, end) }()
	var lastA, lastP int64
	pctx, stopProgress := context.WithDeadline(ctx, end)
	defer stopProgress()
	progress(pctx, o.Progress, func(el, since time.Duration) {
		a, p := pl.answers.Load(), ing.points.Load()
		fmt.Fprintf(out, "  %5.1f s  %8.0f req/s  ingest %6.0f points/s\n", el.Seconds(),
			float64(a-lastA)/since.Seconds(), float64(p-lastP)/since.Seconds())
		lastA, lastP = a, p
	})
	<-placed
	res := &pl.res
	res.Elapsed = time.Since(start)
	cpu1, cerr1 := j.CPU()
	bcpu1 := benchkit.SelfCPU()
	stopIngest()
	<-ingDone
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Answers = pl.answers.Load()
	res.Latency = benchkit.Summarise(slices.Concat(pl.lats...))
	res.Ingest = ing.achieved()
	r := &Result{Placement: res, Window: res.Elapsed, BenchCPU: bcpu1 - bcpu0}
	r.JudgeCPU = cpu1 - cpu0
	if cerr0 != nil || cerr1 != nil {
		r.JudgeCPU = -1
	}
	reportPlacement(out, r)
	return r, nil
}

// placer is the placement load: closed-loop clients, each keeping its own latencies
// and error counts until the end, merged into res then.
type placer struct {
	base    string
	bodies  [][]byte
	next    atomic.Int64 // the next body, shared: each placement an instance of its own
	answers atomic.Int64 // for progress lines

	mu   sync.Mutex
	lats [][]time.Duration
	res  PlacementResult // AnswerBytes and Errors
}

// run sends requests from clients goroutines until end; a request under way at end
// is finished and counted.
func (p *placer) run(ctx context.Context, clients int, end time.Time) {
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var (
				mine   = make([]time.Duration, 0, 4096)
				errs   = map[string]int64{}
				bytesN int64
			)
			conn, err := dialJudge(p.base)
			if err != nil {
				p.mu.Lock()
				p.res.Errors[errorKey(err)]++
				p.mu.Unlock()
				return
			}
			defer conn.close()
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				t := time.Now()
				size, err := conn.place(p.bodies[(p.next.Add(1)-1)%int64(len(p.bodies))], n%checkEvery == 0)
				if err != nil {
					if ctx.Err() == nil {
						errs[errorKey(err)]++
					}
					continue
				}
				mine = append(mine, time.Since(t))
				bytesN += int64(size)
				p.answers.Add(1)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			p.lats = append(p.lats, mine)
			p.res.AnswerBytes += bytesN
			for k, v := range errs {
				p.res.Errors[k] += v
			}
		}()
	}
	wg.Wait()
}

// seed sends every node's first batch, o.Concurrency at a time.
func seed(ctx context.Context, o Options, j *judgeProc, f *benchkit.Fleet, interval time.Duration) error {
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	now := time.Now()
	for range o.Concurrency {
		g.Go(func() error {
			bc, err := dialJudge(j.base)
			if err != nil {
				return fmt.Errorf("bench judge: seed: %w", err)
			}
			defer bc.close() // the judge need not keep the seeding connections
			var body []byte
			for i := int(next.Add(1) - 1); i < o.Nodes; i = int(next.Add(1) - 1) {
				body = f.AppendJSON(body[:0], i, 0, len(benchkit.NodeMetrics), now, interval)
				if err := bc.send(gctx, f.Node(i), body, len(benchkit.NodeMetrics)); err != nil {
					return fmt.Errorf("bench judge: seed node %d: %w%s", i, err, j.ExitNote())
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// ingestLoop re-sends the nodes' batches in turn at rate points/s: batch k is node
// k mod N's, due at start + k·per/rate. A sender that falls behind sends at once, so the
// achieved rate shows when the judge cannot take the target.
type ingestLoop struct {
	fleet    *benchkit.Fleet
	rate     int
	per      int
	interval time.Duration
	base     string // the judge's URL

	points, batches, errs atomic.Int64
	started, stopped      time.Time // set by run, read once it returned
}

func (l *ingestLoop) run(ctx context.Context) {
	l.started = time.Now()
	defer func() { l.stopped = time.Now() }()
	if l.rate == 0 {
		<-ctx.Done()
		return
	}
	period := time.Duration(float64(l.per) / float64(l.rate) * float64(time.Second))
	start := l.started
	n := l.fleet.Len()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range ingestSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc, err := dialJudge(l.base)
			if err != nil {
				l.errs.Add(1)
				return
			}
			defer bc.close()
			var body []byte
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if wait := time.Until(start.Add(time.Duration(k) * period)); wait > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(wait):
					}
				}
				body = l.fleet.AppendJSON(body[:0], k%n, 1+k/n, l.per, time.Now(), l.interval)
				if err := bc.send(ctx, l.fleet.Node(k%n), body, l.per); err != nil {
					if ctx.Err() == nil {
						l.errs.Add(1)
					}
					continue
				}
				l.points.Add(int64(l.per))
				l.batches.Add(1)
			}
		}()
	}
	wg.Wait()
}

// achieved is the ingest over the loop's run; call it once run returned.
func (l *ingestLoop) achieved() IngestRate {
	return IngestRate{Target: l.rate, Points: l.points.Load(), Batches: l.batches.Load(), Errors: l.errs.Load(),
		Elapsed: l.stopped.Sub(l.started)}
}

// progress calls line every period until ctx ends, with the time since it started and
// since the last line.
func progress(ctx context.Context, period time.Duration, line func(elapsed, since time.Duration)) {
	t := time.NewTicker(period)
	defer t.Stop()
	start, prev := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			line(now.Sub(start), now.Sub(prev))
			prev = now
		}
	}
}
