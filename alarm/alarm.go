// Package alarm is the alarm role: it consumes the metric stream, evaluates alert
// policies (alarm/policy) per policy, node and labels, keeps each alert's state
// (inactive → pending → firing → resolved) with a notification log that survives restarts,
// applies silences and inhibition, groups alerts and notifies channels (alarm/notify).
package alarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/metric/promreg"
)

// Options configure an alarm.
type Options struct {
	Policies []*policy.Policy
	// Channels by name; every channel a policy names must be here.
	Channels map[string]notify.Notifier
	// Subscriber delivers the metric batches (a consumer group shared by all alarm
	// processes). The alarm does not close it. Nil runs without a bus (tests, or a caller
	// that feeds Observe itself).
	Subscriber bus.Subscriber
	// Coordinator holds the notification log and the silences; required. The alarm does
	// not close it.
	Coordinator coord.Coordinator

	// Listen is the HTTP address; empty runs no server.
	Listen string
	// TLS, when its files are set, serves the API over HTTPS.
	TLS config.HTTPTLS
	// Token, when set, is required as a bearer token to create or delete silences.
	Token config.Secret
	// ExternalURL is how receivers reach this alarm (links in notifications).
	ExternalURL string

	Inhibition Inhibition
	// GroupWait and GroupInterval are the alarm's defaults of the policies' group_wait
	// and group_interval (EngineOptions).
	GroupWait     time.Duration
	GroupInterval time.Duration
	// EvalInterval is the timer period (pending → firing, nodata, repeats): 1 s when zero.
	EvalInterval time.Duration
	// SilenceRefresh is how often silences are reloaded from the coordinator (10 s), in
	// case its watch missed a change: a change reloads them at once.
	SilenceRefresh time.Duration
	// LogRefresh is how often the notification log is reloaded, to pick up alerts another
	// alarm process fired before a rebalance moved their node here (1 min).
	LogRefresh time.Duration
	// PositionInterval is how often a sharded subscriber (bus.Positioner) is asked which
	// partitions this process holds and whether it is caught up (1 s).
	PositionInterval time.Duration
	// BookInterval is how often the node book (see nodeBook) is written for the
	// partitions this process holds (5 s).
	BookInterval time.Duration
	// ShutdownTimeout bounds the stop once ctx ends: the notification log writes, the
	// groups still waiting and the channels' queues (30 s).
	ShutdownTimeout   time.Duration
	ResolvedRetention time.Duration
	StaleIntervals    float64
	Dispatch          notify.DispatcherOptions

	Now      func() time.Time
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// Ready, when set, receives the bound HTTP address once it serves.
	Ready func(addr string)
	// History, when set, reads a partition's past back before the process's first
	// message of it, so that the policies' time windows start full (see History). Nil:
	// they start at the stream's position.
	History History
}

// Alarm is one alarm process.
type Alarm struct {
	o   Options
	log *slog.Logger
	// decodeWarns throttles the warnings of batches that cannot be decoded.
	decodeWarns logging.Throttle
	eng         *Engine
	disp        *notify.Dispatcher
	silences    *Silences
	reg         *prometheus.Registry
	m           *metrics
	handler     http.Handler
	errs        *httpapi.Errors
	own         *ownership // nil without a subscriber
	back        *readBack  // nil without a History or a policy that looks back
	book        *nodeBook
	// decoders are idle metric decoders, one per goroutine decoding at once (the bus
	// delivers partitions concurrently); each remembers the names and label sets of the
	// batches it decoded. A channel rather than a sync.Pool: a pool drops them at each GC.
	decoders chan *batchDecoder
}

// New validates the options and builds the alarm; nothing runs until Run.
func New(o Options) (*Alarm, error) {
	if o.Coordinator == nil {
		return nil, errors.New("alarm: no coordinator (it keeps the notification log and the silences)")
	}
	if len(o.Policies) == 0 {
		return nil, errors.New("alarm: no policies")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.EvalInterval <= 0 {
		o.EvalInterval = time.Second
	}
	if o.SilenceRefresh <= 0 {
		o.SilenceRefresh = 10 * time.Second
	}
	if o.LogRefresh <= 0 {
		o.LogRefresh = time.Minute
	}
	if o.PositionInterval <= 0 {
		o.PositionInterval = time.Second
	}
	if o.BookInterval <= 0 {
		o.BookInterval = 5 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	for _, p := range o.Policies {
		for _, c := range p.Channels {
			if _, ok := o.Channels[c]; !ok {
				return nil, fmt.Errorf("alarm: policy %q (line %d) names channel %q, which is not configured", p.Name, p.Line, c)
			}
		}
	}
	a := &Alarm{o: o, log: o.Logger.With("component", "alarm"), decoders: make(chan *batchDecoder, 2*runtime.GOMAXPROCS(0)),
		decodeWarns: logging.Throttle{Every: time.Minute}}
	a.reg = o.Registry
	if a.reg == nil {
		a.reg = promreg.New()
	}
	dopts := o.Dispatch
	dopts.Logger, dopts.Registerer = o.Logger, a.reg
	dopts.Done = func(m notify.Message, err error) { a.eng.Delivered(m, err) }
	dopts.Prepare = func(m notify.Message) (notify.Message, bool) { return a.eng.Prepare(m) }
	var err error
	a.disp, err = notify.NewDispatcher(o.Channels, dopts)
	if err != nil {
		return nil, fmt.Errorf("alarm: %w", err)
	}
	a.silences = NewSilences(o.Coordinator, "", o.Now)
	a.m = newMetrics()
	a.eng = NewEngine(EngineOptions{
		Policies: o.Policies, Log: &CoordLog{C: o.Coordinator}, Silences: a.silences, Inhibition: o.Inhibition,
		GroupWait: o.GroupWait, GroupInterval: o.GroupInterval, ResolvedRetention: o.ResolvedRetention, StaleIntervals: o.StaleIntervals,
		Send: func(m notify.Message) { a.disp.Enqueue(m) }, Channels: slices.Sorted(maps.Keys(o.Channels)),
		ExternalURL: o.ExternalURL, Now: o.Now, Logger: o.Logger,
		OnEvaluations: func(n int) { a.m.evaluations.Add(float64(n)) },
		OnLogError:    func() { a.m.logErrors.Inc() },
		OnSuppressed:  func(r string) { a.m.suppressed.WithLabelValues(r).Inc() },
	})
	if err := a.m.register(a.reg, a.eng); err != nil {
		return nil, fmt.Errorf("alarm: metrics: %w", err)
	}
	a.handler = a.routes()
	a.book = newNodeBook(o.Coordinator, a.eng, a.log, o.Now)
	a.back = newReadBack(o.History, a.eng)
	if o.Subscriber != nil {
		pos, _ := o.Subscriber.(bus.Positioner)
		if pos != nil {
			a.eng.ExpectMembers()
		}
		a.own = &ownership{pos: pos, eng: a.eng, log: a.log, parts: map[string]int{}, onGain: a.gained, onRelease: a.released,
			draining: func(ctx context.Context) ([]string, error) { return drainingClaimers(ctx, o.Coordinator) }}
		a.eng.SetOwner(a.own.owns)
	}
	return a, nil
}

// gained takes over partitions: the notification log again (alerts other processes
// fired continue here; resolved notices they left are sent), and the node book's pages
// of the partitions, so that their silent nodes page nodata here.
func (a *Alarm) gained(ctx context.Context, parts []int) {
	if _, err := a.eng.Restore(ctx); err != nil && ctx.Err() == nil {
		a.log.Warn("notification log reload after a rebalance failed", "err", err)
	}
	nodes, err := a.book.load(ctx, parts)
	a.own.learn(nodes)
	if err != nil && ctx.Err() == nil {
		a.log.Warn("node book: pages of the gained partitions could not all be read", "partitions", parts, "err", err)
	}
	a.log.Info("took partitions over", "partitions", parts, "nodes_from_book", len(nodes))
}

// released lets partitions go: their pages of the node book are written for whoever
// takes them, and their history is read back again should they return.
func (a *Alarm) released(ctx context.Context, parts []int) {
	a.saveBook(ctx, parts)
	if a.back != nil {
		a.back.forget(parts)
	}
}

// saveBook writes the node book's pages of the given partitions (nil: all held).
func (a *Alarm) saveBook(ctx context.Context, parts []int) {
	nodes, held := a.own.holding()
	if parts == nil {
		parts = held
	}
	if err := a.book.save(ctx, nodes, parts); err != nil && ctx.Err() == nil {
		a.log.Warn("node book: write failed", "partitions", parts, "err", err)
	}
}

// Run builds an alarm and runs it until ctx ends.
func Run(ctx context.Context, o Options) error {
	a, err := New(o)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// Engine is the alarm's evaluation engine (for embedding and tests).
func (a *Alarm) Engine() *Engine { return a.eng }

// Handler is the HTTP API.
func (a *Alarm) Handler() http.Handler { return a.handler }

// ObserveRaw decodes one encoded batch and evaluates it; a bad batch is counted and
// skipped (returned as an error, but never fatal).
func (a *Alarm) ObserveRaw(data []byte) error { return a.observeRaw(data, nil) }

// observeRaw is ObserveRaw, calling ack once the notification log writes the batch led
// to are done (at once for a bad batch).
func (a *Alarm) observeRaw(data []byte, ack func()) error {
	var bd *batchDecoder
	select {
	case bd = <-a.decoders:
	default:
		bd = &batchDecoder{dec: metric.NewDecoder()}
	}
	// Back to the idle ones once the engine is done with the batch: its points are the
	// decoder's array for the next one.
	defer func() {
		select {
		case a.decoders <- bd:
		default:
		}
	}()
	b, err := bd.dec.DecodeInto(data, bd.points) // validates: Decode accepts only what Validate does
	if err == nil {
		if ahead := b.TS.Sub(a.o.Now()); ahead > metric.MaxAhead {
			// Its series took every later batch of the node for a redelivery until the
			// clock passed it: a threshold policy blind to the node (an outside trial).
			err = fmt.Errorf("node %.80q: ts %s is %s ahead of the alarm's clock (at most %s)",
				b.Node, b.TS.UTC().Format(time.RFC3339), ahead.Round(time.Second), metric.MaxAhead)
		}
	}
	if err != nil {
		if ack != nil {
			ack()
		}
		a.m.decodeErrors.Inc()
		// Nobody else learns of it: a warning once a minute while they keep coming (agents
		// of a newer version during an upgrade, a stranger's producer).
		if ok, held := a.decodeWarns.Allow("decode", time.Now()); ok {
			a.log.Warn("skipping a metric batch that cannot be decoded or validated (binlake_alarm_decode_errors_total counts them)",
				"err", err, "skipped_since_last_warning", held)
		}
		return fmt.Errorf("bad metric batch: %w", err)
	}
	a.m.batches.Inc()
	a.m.points.Add(float64(len(b.Points)))
	if !b.TS.IsZero() {
		a.m.newestBatch.Observe(b.TS)
	}
	a.eng.ObserveAck(b, ack) // evaluates at once: nothing keeps b.Points after it returns
	bd.points = b.Points
	return nil
}

// batchDecoder is a metric decoder with the points array of its last batch, which the
// next decode reuses.
type batchDecoder struct {
	dec    *metric.Decoder
	points []metric.Point
}

// Run restores the notification log and silences, starts the channels, then the timers,
// the bus subscription and the HTTP server; on ctx's end it stops the sources first and
// lets the channels drain what is queued (bounded).
func (a *Alarm) Run(ctx context.Context) error {
	var ln net.Listener
	if a.o.Listen != "" {
		var err error
		ln, err = httpapi.Listen(a.o.Listen, a.o.TLS)
		if err != nil {
			return fmt.Errorf("alarm: listen on %s: %w", a.o.Listen, err)
		}
	}
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	n, err := a.eng.Restore(rctx)
	if err != nil {
		a.log.Warn("notification log: some entries could not be restored", "err", err)
	}
	if serr := a.silences.Refresh(rctx); serr != nil {
		a.log.Warn("silences could not be loaded; retrying in the background", "err", serr)
	}
	now := a.o.Now()
	for _, s := range a.silences.List() {
		// A silence made before the policies changed (a `by` added in an upgrade) may
		// mute nothing it names any more: said once at the start (an upgrade trial).
		if warn := s.Unmatchable(a.o.Policies); warn != nil && s.State(now) != SilenceExpired {
			a.log.Warn("a silence mutes nothing it names", "id", s.ID, "ends_at", s.EndsAt, "warnings", warn)
		}
	}
	if a.own != nil && a.own.pos == nil {
		// One process owns the whole stream: every page of the node book is its own.
		nodes, err := a.book.load(rctx, nil)
		a.own.learn(nodes)
		if err != nil {
			a.log.Warn("node book: some pages could not be read", "err", err)
		}
		// The book's nodes were last heard before this process started: what their
		// senders held while it was down (an agent posting to up's judge) arrives
		// after the start. Hold nodata and staleness for one interval, as after
		// catching up (a sharded subscriber's start holds until its first answer).
		a.eng.Resumed()
	}
	rcancel()
	a.log.Info("notification log restored", "firing_alerts", n, "history_read_back", describeHistory(a.back))

	a.disp.Start()
	// One run group: the timers, the stream, the ownership and the API stop together
	// when ctx ends or the API fails (its error is Run's).
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { a.timerLoop(gctx); return nil })
	g.Go(func() error { a.silences.Watch(gctx, a.o.SilenceRefresh, a.log); return nil })
	for name, r := range a.disp.Refreshers() {
		a.m.refreshErrors.WithLabelValues(name) // exported at zero from the start
		a.m.refreshFailing.WithLabelValues(name)
		g.Go(func() error { a.refreshLoop(gctx, name, r); return nil })
	}
	endDrain := make(chan func(), 1)
	if a.o.Subscriber != nil {
		// The subscription outlives the run's context by the draining mark's write: a
		// process that takes the partitions over then sees this one's claims as being
		// delivered (draining.go), not as left by a crash.
		sctx, leave := context.WithCancel(context.WithoutCancel(gctx))
		g.Go(func() error { a.subscribeLoop(sctx); return nil })
		g.Go(func() error {
			<-gctx.Done()
			endDrain <- a.announceDraining()
			leave()
			return nil
		})
	}
	if a.own != nil && a.own.pos != nil {
		g.Go(func() error { a.own.run(gctx, a.o.PositionInterval); return nil })
	}
	if ln != nil {
		g.Go(func() error { return httpapi.Serve(gctx, ln, a.handler, "alarm API", a.log, a.o.Ready) })
	}
	stopping := logging.OnStop(gctx, a.log, "alarm stopping", "within", a.o.ShutdownTimeout)
	// The timeout runs from the stop's signal: leaving the consumer group (g.Wait) is
	// part of stopping, and took most of a second outside it.
	var signalled atomic.Int64
	context.AfterFunc(gctx, func() { signalled.Store(time.Now().UnixNano()) })
	runErr := g.Wait()
	stopping()
	since := time.Now()
	if ns := signalled.Load(); ns != 0 {
		since = time.Unix(0, ns)
	}
	a.stop(since.Add(a.o.ShutdownTimeout))
	select {
	case done := <-endDrain:
		done()
	default:
	}
	return runErr
}

// stop ends the run once nothing is read or evaluated any more, by deadline (the stop's
// signal and ShutdownTimeout),
// so that a deploy is never held by a hung coordinator or channel, and says what was
// left: the node book's pages for whoever takes the partitions next; the notification
// log writes and every group still in group_wait (a resolution decided just before the
// stop goes out now, not never); the channels' queues; then the pages and resolved
// notices still undelivered are handed back to the log for another process to send.
func (a *Alarm) stop(deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if a.own != nil {
		bctx, bcancel := context.WithTimeout(ctx, time.Until(deadline)/4)
		a.saveBook(bctx, nil)
		bcancel()
	}
	unwritten := a.eng.Flush(deadline)
	undelivered := a.disp.Close(time.Until(deadline))
	// The channels' last outcomes (a delivery's record, a page given up handed back) are
	// written even when the drain took every moment to the deadline: unwritten, a page
	// cut off there for an alert that had moved was nobody's (an outside trial).
	finishBy := deadline
	if t := time.Now().Add(2 * time.Second); t.After(finishBy) {
		finishBy = t
	}
	unrecorded := a.eng.finish(finishBy)
	rctx, rcancel := context.WithTimeout(context.Background(), max(time.Until(deadline), 2*time.Second))
	pages, resolutions := a.eng.releaseInflight(rctx)
	rcancel()
	if unwritten+undelivered+unrecorded+pages+resolutions == 0 {
		a.log.Info("alarm stopped")
		return
	}
	a.log.Warn("alarm stopped with work left", "unwritten_evaluations", unwritten, "undelivered_notifications", undelivered,
		"unrecorded_log_writes", unrecorded, "pages_handed_back", pages, "resolutions_handed_back", resolutions)
}

func (a *Alarm) timerLoop(ctx context.Context) {
	t := time.NewTicker(a.o.EvalInterval)
	defer t.Stop()
	lastLog, lastBook, lastTick := time.Now(), time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if late := time.Since(lastTick) - a.o.EvalInterval; late > pausedAfter(a.o.EvalInterval) {
			a.log.Warn("the alarm's timer ran late: the process was paused or starved; nodata and staleness wait one interval for the stream",
				"late", late.Round(time.Millisecond))
			a.eng.Resumed()
			if a.own != nil {
				a.own.lapse()
			}
		}
		if time.Since(lastLog) >= a.o.LogRefresh {
			lastLog = time.Now()
			if _, err := a.eng.Restore(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("notification log refresh failed", "err", err)
			}
		}
		if a.own != nil && time.Since(lastBook) >= a.o.BookInterval {
			lastBook = time.Now()
			a.saveBook(ctx, nil)
		}
		a.eng.Tick()
		lastTick = time.Now() // the wait for the next tick is measured, not this loop's own calls
	}
}

// pausedAfter is how late a timer tick must come for the process to count as paused:
// a whole period missed, and at least half a second, which a loaded machine's
// scheduling does not reach.
func pausedAfter(every time.Duration) time.Duration { return max(every, 500*time.Millisecond) }

// firstRefresh is how soon after the start refreshLoop first sends.
const firstRefresh = 5 * time.Second

// refreshLoop sends channel's firing alerts again every interval it asks for (an
// Alertmanager ends an alert not sent again before its endsAt), and those resolved in
// the last 15 minutes (Engine.RefreshFor). A failed refresh is logged and counted; the
// next one sends them all again, so an Alertmanager that was down gets every firing
// alert, and every resolution it missed, within one interval of coming back.
func (a *Alarm) refreshLoop(ctx context.Context, channel string, r notify.Refresher) {
	// The first soon after the start: the alerts restored from the notification log
	// were last sent before the restart, and a restart that took most of their endsAt
	// (four intervals) let Alertmanager end them before a whole interval more passed.
	t := time.NewTimer(min(r.RefreshInterval(), firstRefresh))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(r.RefreshInterval())
		}
		alerts := a.eng.RefreshFor(channel)
		if len(alerts) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, r.RefreshInterval())
		err := r.Refresh(rctx, alerts, a.o.ExternalURL)
		cancel()
		if err == nil {
			a.m.refreshFailing.WithLabelValues(channel).Set(0)
		}
		if err != nil && ctx.Err() == nil {
			a.m.refreshFailing.WithLabelValues(channel).Set(1)
			a.m.refreshErrors.WithLabelValues(channel).Inc()
			a.log.Warn("refreshing firing alerts failed; sending them again at the next interval", "channel", channel,
				"alerts", len(alerts), "err", err)
		}
	}
}

func (a *Alarm) subscribeLoop(ctx context.Context) {
	bus.SubscribeWithRetry(ctx, a.o.Subscriber, func(ctx context.Context, m bus.Message) error {
		if a.own != nil && len(m.Key) > 0 {
			a.own.seen(string(m.Key), m.Partition) // the key is the node id (metric contract)
		}
		if !a.readBack(ctx, m) {
			return ctx.Err() // the partition was taken away mid-read: m comes again
		}
		// The message is committed once the batch's notification log writes are done
		// (bus.Defer), so a crash before them redelivers it. Bad batches are counted and
		// skipped, never fatal.
		_ = a.observeRaw(m.Value, bus.Defer(ctx))
		return nil
	}, bus.RetryOptions{Concurrent: true /* safe: the engine and ownership lock */, OnError: bus.WarnRetries(a.log, "metric subscription failed; retrying", a.m.subscribeErrors.Inc)})
}
