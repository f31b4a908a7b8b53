// Package agent runs beside each wave: every interval it asks the enabled collectors
// (host, wave, process: agent/collector/...) for points, adds its own figures, and hands
// one metric.Batch to a bounded buffer that a sender drains into a Sink (the bus, or the
// judge over HTTP). Collection never waits for the sink: while the sink is down batches
// wait in the buffer, past its size the oldest are dropped and counted, and delivery
// resumes by itself.
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/agent/collector"
	_ "github.com/binlake/binlake/agent/collector/host" // registers "host"
	"github.com/binlake/binlake/agent/collector/process"
	_ "github.com/binlake/binlake/agent/collector/wave" // registers "wave"
	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/metric/promreg"
)

// collectorLabel is the label of CollectorUp's points: the collector's name.
const collectorLabel = "collector"

// Self-metric names, in every batch.
const (
	BufferLen       = "agent.buffer_len"       // batches not yet delivered, this one excluded
	DroppedBatches  = "agent.dropped_batches"  // since start
	CollectorErrors = "agent.collector_errors" // failed collections since start, all collectors
	// CollectorUp is 1 when a collector's collection of this tick succeeded, 0 when it
	// failed (not sent for a failure of the agent's first collection, at its start),
	// labelled collector: the wave collector's 0 is its wave's process down (or
	// its /metrics port) while the host reports, which no wave.* point can say, as
	// they stop; the cumulative collector_errors never goes back down.
	CollectorUp    = "agent.collector_up"
	CollectSeconds = "agent.collect_seconds" // how long this tick's collection took
	RSSBytes       = "agent.rss_bytes"       // the agent's own resident memory
)

// PointNames returns every point name an agent can send, sorted: its collectors' (each
// declares them, collector.Factory.Emits) and its own.
func PointNames() []string {
	names := append(collector.Emitted(), BufferLen, DroppedBatches, CollectorErrors, CollectorUp, CollectSeconds, RSSBytes)
	slices.Sort(names)
	return slices.Compact(names)
}

// Options configures an Agent.
type Options struct {
	Config Config
	// ConfigFile is only logged.
	ConfigFile string
	// Version is logged in the "agent starting" line, as the other roles log theirs
	// (buildinfo.String() from the command); empty leaves it out.
	Version string
	// Sink receives the batches. Required; the agent closes it.
	Sink   Sink
	Logger *slog.Logger
	// Collectors replaces those built from Config.Collectors (tests, embedding).
	Collectors []collector.Collector
	// Ticks replaces the interval ticker (tests drive collection with it).
	Ticks <-chan time.Time
	// Ready, when set, receives the address of the agent's /metrics once it listens
	// ("" when http.listen is off).
	Ready func(metricsAddr string)
	// Drain bounds how long a stopping agent keeps sending what it collected; 0 is
	// DefaultDrain.
	Drain time.Duration
}

// DefaultDrain is how long a stopping agent keeps trying to deliver what it holds: a sink
// down for good must not hold a stop (systemd's TimeoutStopSec) for more than this.
const DefaultDrain = 5 * time.Second

// Stats are the agent's counters.
type Stats struct {
	Collected       uint64 // batches built
	Delivered       uint64
	Rejected        uint64 // refused for good by the sink
	Dropped         uint64 // pushed out of the full buffer
	Pending         int    // waiting or in flight
	CollectorErrors uint64
	SendErrors      uint64
}

// Agent collects and ships metric batches.
type Agent struct {
	opts       Options
	log        *slog.Logger
	collectors []collector.Collector
	q          *queue
	reg        *prometheus.Registry

	collected, delivered, rejected, sendErrs, collectErrs atomic.Uint64
	lastCollect                                           atomic.Uint64 // float64 bits
	perCollectorErrs                                      *prometheus.CounterVec
	failing                                               map[string]string // collector -> last error; only the collect loop touches it
	partial                                               map[string]string // collector -> last Partial's text; the collect loop's too
	// inFlight holds, per collector (by index), when its collection that has not returned
	// began (Unix ns; 0: none): a read that ignores its context (a hung mount's statfs, a
	// /proc read in D state) is left behind rather than waited for, and the collector is
	// not run again until it returns.
	inFlight []atomic.Int64

	mu      sync.Mutex
	running bool
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
}

// New builds an agent and its collectors.
func New(o Options) (*Agent, error) {
	if o.Sink == nil {
		return nil, errors.New("agent: no sink")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	log := o.Logger.With("component", "agent")
	cs := o.Collectors
	if cs == nil {
		var err error
		cs, err = o.Config.Collectors.Build(collector.Env{Logger: o.Logger})
		if err != nil {
			return nil, err
		}
	}
	a := &Agent{
		opts:       o,
		log:        log,
		collectors: cs,
		q:          newQueue(o.Config.Buffer),
		failing:    map[string]string{},
		partial:    map[string]string{},
		inFlight:   make([]atomic.Int64, len(cs)),
	}
	a.reg = a.registry()
	return a, nil
}

// Run runs the agent until ctx ends or Close is called.
func Run(ctx context.Context, o Options) error {
	a, err := New(o)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

// Run collects every interval and ships batches until ctx ends; then it stops
// collecting, gives the sender a few seconds to deliver what is buffered, and returns.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.closed || a.running {
		a.mu.Unlock()
		return errors.New("agent: Run called on a closed or running agent")
	}
	ctx, cancel := context.WithCancel(ctx)
	a.running, a.cancel, a.done = true, cancel, make(chan struct{})
	a.mu.Unlock()
	defer func() {
		cancel()
		close(a.done)
	}()

	names := make([]string, len(a.collectors))
	for i, c := range a.collectors {
		names[i] = c.Name()
	}
	cfg := a.opts.Config
	var version []any
	if a.opts.Version != "" {
		version = []any{"version", a.opts.Version}
	}
	a.log.Info("agent starting", append(version, "config", a.opts.ConfigFile, "node", cfg.Node, "interval", cfg.Interval.D(),
		"collectors", names, "sink", a.opts.Sink.String(), "buffer", cfg.Buffer, "metrics", cfg.HTTP.Listen)...)

	// The metrics endpoint and the collection run as one group: if serving fails, the
	// agent stops (draining what it collected) and says why, instead of running on
	// without the endpoint its scrapers expect.
	g, gctx := errgroup.WithContext(ctx)
	if cfg.HTTP.Listen != MetricsListenOff {
		ln, err := net.Listen("tcp", cfg.HTTP.Listen)
		if err != nil {
			return fmt.Errorf("agent metrics listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"ok"}` + "\n"))
		})
		g.Go(func() error { return httpapi.Serve(gctx, ln, mux, "agent metrics", a.log, a.opts.Ready) })
	} else if a.opts.Ready != nil {
		a.opts.Ready("")
	}
	g.Go(func() error {
		a.collectAndSend(gctx)
		return nil
	})
	stopping := logging.OnStop(gctx, a.log, "agent stopping")
	err := g.Wait()
	stopping()
	st := a.Stats()
	level := slog.LevelInfo
	if st.Pending > 0 {
		level = slog.LevelWarn // batches lost with the process: its buffer is in memory
	}
	a.log.Log(context.Background(), level, "agent stopped", "collected", st.Collected, "delivered", st.Delivered, "dropped", st.Dropped, "undelivered", st.Pending)
	return err
}

// collectAndSend collects until ctx ends, then gives the sender a bounded time to
// deliver what is left.
func (a *Agent) collectAndSend(ctx context.Context) {
	// The sender starts first and stops last, so what was collected drains.
	sendCtx, stopSend := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSend()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		a.send(sendCtx, ctx.Done())
	}()

	a.collectLoop(ctx)

	// Drain: bounded, since the sink may be down for good.
	drain := time.NewTimer(cmp.Or(a.opts.Drain, DefaultDrain))
	defer drain.Stop()
	select {
	case <-sent:
	case <-drain.C:
		stopSend()
		<-sent
	}
}

func (a *Agent) collectLoop(ctx context.Context) {
	ticks := a.opts.Ticks
	if ticks == nil {
		t := time.NewTicker(a.opts.Config.Interval.D())
		defer t.Stop()
		ticks = t.C
	}
	a.collectOnce(ctx, time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			a.collectOnce(ctx, now)
		}
	}
}

// collectGrace is how long past the interval a collection is waited for: its context
// ends at the interval, and a collector that honours it returns within this.
const collectGrace = time.Second

// collectOnce runs every collector concurrently (a hung wave scrape must not delay the
// host figures), each bounded by the interval, and pushes one batch. A collector that has
// not returned by the interval and collectGrace (a read that ignores its context: a hung
// NFS mount's statfs) is reported failed and left behind: the tick waited for it, so one
// stuck read stopped every batch of the agent, silently, and its stop too (an outside
// trial).
func (a *Agent) collectOnce(ctx context.Context, now time.Time) {
	start := time.Now()
	interval := a.opts.Config.Interval.D()
	type result struct {
		i   int
		pts []metric.Point
		err error
	}
	results := make([]result, len(a.collectors))
	got := make([]bool, len(a.collectors))
	done := make(chan result, len(a.collectors)) // a result past the wait lands here unread
	started := 0
	for i, c := range a.collectors {
		if since := a.inFlight[i].Load(); since != 0 {
			results[i].err = fmt.Errorf("its collection begun %s ago has not returned (a read that blocks: a hung mount, /proc stuck); not run again until it does",
				time.Since(time.Unix(0, since)).Round(time.Second))
			got[i] = true
			continue
		}
		a.inFlight[i].Store(time.Now().UnixNano())
		started++
		go func() {
			r := result{i: i}
			defer func() {
				if p := recover(); p != nil {
					r.err = fmt.Errorf("collector panicked: %v", p)
				}
				a.inFlight[i].Store(0)
				done <- r
			}()
			cctx, cancel := context.WithTimeout(ctx, interval)
			defer cancel()
			r.pts, r.err = c.Collect(cctx)
		}()
	}
	wait := time.NewTimer(interval + collectGrace)
	defer wait.Stop()
	for n := 0; n < started; n++ {
		select {
		case r := <-done:
			results[r.i], got[r.i] = r, true
		case <-ctx.Done():
			return // shutting down: a half-cancelled tick is not worth sending
		case <-wait.C:
			n = started // the rest are left behind
		}
	}
	if ctx.Err() != nil {
		return
	}
	for i := range a.collectors {
		if !got[i] {
			results[i].err = fmt.Errorf("collection did not return within the interval (%s) and %s: left behind (a read that blocks: a hung mount, /proc stuck)", interval, collectGrace)
		}
	}

	var pts []metric.Point
	atStart := a.collected.Load() == 0
	for i, c := range a.collectors {
		err := results[i].err
		var partial *collector.Partial
		if errors.As(err, &partial) {
			a.notePartial(c.Name(), partial)
			err = nil
		}
		a.noteResult(c.Name(), err, atStart)
		switch {
		case err == nil:
			pts = append(pts, metric.Point{Name: CollectorUp, Value: 1, Labels: map[string]string{collectorLabel: c.Name()}})
		case !atStart: // at start, not yet: noteResult says why
			pts = append(pts, metric.Point{Name: CollectorUp, Value: 0, Labels: map[string]string{collectorLabel: c.Name()}})
		}
		for _, p := range results[i].pts {
			// One bad point (NaN from a division, a malformed name) must not cost the batch.
			if metric.ValidName(p.Name) && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
				pts = append(pts, p)
			} else {
				a.log.Debug("point skipped", "collector", c.Name(), "name", p.Name, "value", p.Value)
			}
		}
	}
	took := time.Since(start).Seconds()
	a.lastCollect.Store(math.Float64bits(took))
	pending, dropped := a.q.stats()
	pts = append(pts,
		metric.Point{Name: BufferLen, Value: float64(pending)},
		metric.Point{Name: DroppedBatches, Value: float64(dropped)},
		metric.Point{Name: CollectorErrors, Value: float64(a.collectErrs.Load())},
		metric.Point{Name: CollectSeconds, Value: took},
	)
	if st, err := process.Read("/proc", os.Getpid()); err == nil {
		pts = append(pts, metric.Point{Name: RSSBytes, Value: float64(st.RSSBytes)})
	}
	a.collected.Add(1)
	a.q.push(metric.Batch{Node: a.opts.Config.Node, TS: now.UTC(), IntervalS: interval.Seconds(), Points: pts})
}

// noteResult counts a failure and logs only changes of state, so a wave that is down
// for a day logs twice, not 8640 times. A failure of the agent's first collection
// (atStart) is counted and said at info, and is no change of state: that collection
// runs as the agent starts, most often beside the wave it watches, whose /metrics is
// not listening yet, and a warning (with a collector_up 0, a wave-down pending) there
// was noise at every boot. The next tick warns if the collector still fails.
// notePartial logs a collection's part it went without (collector.Partial), once each
// time what it says changes.
func (a *Agent) notePartial(name string, p *collector.Partial) {
	if msg := p.Error(); a.partial[name] != msg {
		a.partial[name] = msg
		a.log.Warn("collector left part of its figures out", "collector", name, "err", p.Err)
	}
}

func (a *Agent) noteResult(name string, err error, atStart bool) {
	prev, wasFailing := a.failing[name]
	if err == nil {
		if wasFailing {
			delete(a.failing, name)
			a.log.Info("collector recovered", "collector", name)
		}
		return
	}
	a.collectErrs.Add(1)
	a.perCollectorErrs.WithLabelValues(name).Inc()
	if atStart {
		a.log.Info("collector not answering at start; tried again at the next tick", "collector", name, "err", err)
		return
	}
	msg := err.Error()
	a.failing[name] = msg
	switch {
	case !wasFailing:
		a.log.Warn("collector failing", "collector", name, "err", err)
	case prev != msg:
		a.log.Debug("collector still failing", "collector", name, "err", err)
	}
}

// send delivers batches oldest first until ctx ends, or until stop is closed and the
// buffer is empty.
func (a *Agent) send(ctx context.Context, stop <-chan struct{}) {
	interval := a.opts.Config.Interval.D()
	bo := backoff.New(min(100*time.Millisecond, interval/2), interval)
	down := false
	for {
		b, ok := a.q.take()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				if pending, _ := a.q.stats(); pending == 0 {
					return
				}
			case <-a.q.ready:
			}
			continue
		}
		err := a.opts.Sink.Send(ctx, b)
		switch {
		case err == nil:
			a.q.done()
			a.delivered.Add(1)
			bo.Reset()
			if down {
				down = false
				pending, dropped := a.q.stats()
				a.log.Info("sink recovered", "sink", a.opts.Sink.String(), "pending", pending, "dropped", dropped)
			}
		case errors.Is(err, ErrRejected):
			a.q.done()
			a.rejected.Add(1)
			a.log.Warn("batch rejected by the sink, dropped", "sink", a.opts.Sink.String(), "err", err)
		default:
			a.q.putBack(b)
			a.sendErrs.Add(1)
			if !down {
				down = true
				a.log.Warn("sink failing; buffering", "sink", a.opts.Sink.String(), "err", err)
			}
			t := time.NewTimer(retryWait(bo.NextBackOff(), err))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-stop:
				// Shutting down with the sink down: keep trying until the drain timeout,
				// which ends ctx (a backoff waited out whole held a stop for up to 32 s).
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			case <-t.C:
			}
		}
	}
}

// maxRetryAfter bounds how long a sink's Retry-After holds the sender: the judge asks
// for seconds (httpapi.RetryAfterSeconds), and a proxy before it that asked for an hour
// would hold every batch for as long, dropping the oldest as the buffer filled.
const maxRetryAfter = 30 * time.Second

// retryWait is how long the sender waits after the failed send err before it sends
// again: next, the back-off's wait, or longer when the sink said when to come back
// (*RetryAfterError), up to maxRetryAfter. The back-off alone retried a judge that
// answered 503 "try again in 2 s" after 100 ms, 200 ms, 400 ms…
func retryWait(next time.Duration, err error) time.Duration {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return max(next, min(ra.After, maxRetryAfter))
	}
	return next
}

// Stats returns the counters.
func (a *Agent) Stats() Stats {
	pending, dropped := a.q.stats()
	return Stats{
		Collected: a.collected.Load(), Delivered: a.delivered.Load(), Rejected: a.rejected.Load(),
		Dropped: dropped, Pending: pending, CollectorErrors: a.collectErrs.Load(), SendErrors: a.sendErrs.Load(),
	}
}

// Close stops a running agent, waits for it, and closes the sink. It is idempotent.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	cancel, done, running := a.cancel, a.done, a.running
	a.mu.Unlock()
	if running {
		cancel()
		<-done
	}
	return a.opts.Sink.Close()
}

// registry holds the agent's own Prometheus metrics, read from the same counters as the
// batch's self-metrics.
func (a *Agent) registry() *prometheus.Registry {
	reg := promreg.New()
	f := promauto.With(reg)
	counter := func(name, help string, v func() float64) {
		f.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
	}
	gauge := func(name, help string, v func() float64) {
		f.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	a.perCollectorErrs = f.NewCounterVec(prometheus.CounterOpts{
		Name: "binlake_agent_collector_errors_total", Help: "Failed collections, per collector.",
	}, []string{"collector"})
	for _, c := range a.collectors {
		a.perCollectorErrs.WithLabelValues(c.Name()) // exported at 0 before the first failure
	}
	gauge("binlake_agent_buffer_batches", "Batches not yet delivered (waiting or in flight).", func() float64 {
		p, _ := a.q.stats()
		return float64(p)
	})
	counter("binlake_agent_dropped_batches_total", "Batches dropped because the buffer was full.", func() float64 {
		_, d := a.q.stats()
		return float64(d)
	})
	counter("binlake_agent_batches_collected_total", "Batches built.", func() float64 { return float64(a.collected.Load()) })
	counter("binlake_agent_batches_delivered_total", "Batches accepted by the sink.", func() float64 { return float64(a.delivered.Load()) })
	counter("binlake_agent_batches_rejected_total", "Batches refused for good by the sink.", func() float64 { return float64(a.rejected.Load()) })
	counter("binlake_agent_send_errors_total", "Failed delivery attempts (retried).", func() float64 { return float64(a.sendErrs.Load()) })
	gauge("binlake_agent_collect_seconds", "Duration of the last collection.", func() float64 {
		return math.Float64frombits(a.lastCollect.Load())
	})
	return reg
}
