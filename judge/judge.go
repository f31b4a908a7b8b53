// Package judge is the judge role: it ingests the metric stream (from the bus and over
// HTTP), stores raw points, keeps the incremental (current hour) and historical analyses,
// and answers placement requests through the lbplugins algorithms over a JSON API.
package judge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/metric/promreg"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/loadmodel"
	"github.com/binlake/binlake/judge/remotewrite"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/lbplugins"
	_ "github.com/binlake/binlake/lbplugins/all" // every algorithm can be asked for by name
	"github.com/binlake/binlake/lbplugins/random"
)

// DefaultAlgorithm answers when judge.yaml names none: a random live node, as the
// original BinLake did.
const DefaultAlgorithm = random.Name

// Options configure a judge.
type Options struct {
	// Store keeps raw points for the historical analysis. Required. The judge writes to
	// it through a store.Buffered of its own (see Buffer), so pass the bare store; the
	// judge does not close it.
	Store store.Store
	// Buffer sizes the bounded buffer between ingest and Store: failed writes are
	// retried with back-off while the store is down. A batch from the bus is committed
	// only once the store has its points, and while the buffer is full the bus waits
	// (it keeps what the judge has not taken); a batch posted over HTTP is answered once
	// the store has its points, and one that finds the buffer full is refused with 503
	// (ingestStored), or with Overflow store.OverflowDrop answered at once while older
	// HTTP points are dropped, counted. Zero fields take store.BufferOptions' defaults;
	// Logger defaults to the judge's.
	Buffer store.BufferOptions
	// Subscriber delivers batches from the bus (topic binlake.metrics, a group of this
	// judge's own). Nil means HTTP ingest only. The judge does not close it.
	Subscriber bus.Subscriber
	// Relay, when set (binlake up: the in-process bus), takes the batches posted to POST
	// /v1/metrics onto the metric topic instead of ingesting them here: the judge then
	// ingests them from the bus like any other, and every other consumer of the topic
	// (the suite's alarm) sees them too. A batch is checked before it is relayed, so a
	// bad one is still a 400. Nil: ingested here, as a judge beside Kafka does.
	Relay bus.Publisher

	// Listen is the API's address ("127.0.0.1:8090"); empty runs no HTTP server (the
	// caller may serve Handler itself).
	Listen string
	// TLS, when its files are set, serves the API over HTTPS.
	TLS config.HTTPTLS
	// Token, when set, is required as "Authorization: Bearer <token>" on POST endpoints.
	Token config.Secret

	// Algorithm is the default placement algorithm; DefaultAlgorithm when empty.
	Algorithm string
	// Filters are the checks common to every algorithm.
	Filters lbplugins.Filters
	// Plugins holds per-algorithm settings by name.
	Plugins map[string]lbplugins.Settings

	// SnapshotEvery is how often, at most, placements rebuild their snapshot of the
	// analyses while batches arrive; zero rebuilds whenever anything changed (tests).
	// The role's config defaults it to DefaultSnapshotEvery.
	SnapshotEvery time.Duration
	// CapacityEvery is how often, at most, a snapshot build computes every wave's load
	// in the load model anew (its capacity for the utilisation algorithm, the instances
	// it runs, the fleet's typical instance); the builds in between take the last ones.
	// Zero: at every build. The role's config defaults it to DefaultCapacityEvery.
	CapacityEvery time.Duration
	// ReservationTTL bounds how long a placement holds capacity on its node when the
	// node does not report the instance; DefaultReservationTTL when zero.
	ReservationTTL time.Duration
	// Rebalance holds the goals of GET and POST /v1/rebalance and the instance floor;
	// DefaultRebalanceOptions when nil (a pointer: every zero field is a setting).
	Rebalance *RebalanceOptions

	// EWMAAlpha of the incremental analysis (0.2 when zero).
	EWMAAlpha float64
	// HistoricalEvery is the historical refresh period (10 min when zero; negative: no
	// refresh on a timer, only the one at start and the caller's Historical().Refresh,
	// for a caller that drives the judge's clock, as the fleet simulator does: a timer
	// in real time refreshes a simulated clock at whatever simulated instants the
	// machine's speed gives); HistoricalMetrics the series it analyses
	// (analysis.DefaultMetrics when empty).
	HistoricalEvery   time.Duration
	HistoricalMetrics []string
	// Retention deletes stored points older than this, checked every hour; 0 keeps all.
	Retention time.Duration

	// Now is the clock; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
	// Registry receives the judge's metrics; a new one (with Go and process collectors)
	// when nil. GET /metrics serves it.
	Registry *prometheus.Registry
	// Ready, when set, receives the bound API address once it serves.
	Ready func(addr string)
	// Status is what the status page shows beside the judge's own figures: the alarm's
	// firing alerts and the wave instances' errors (status.go).
	Status StatusOptions
	// RemoteWrite maps the series of POST /api/v1/write (Prometheus remote write) onto
	// the canonical metrics.
	RemoteWrite remotewrite.MapOptions
}

// Judge is one judge. Build it with New and run it with Run.
type Judge struct {
	o   Options
	log *slog.Logger
	now func() time.Time
	// feed is whether the metric bus still answers (feedwatch.go).
	feed feedWatch
	// decodeWarns throttles the warnings of batches from the bus that cannot be decoded.
	decodeWarns logging.Throttle
	// wallClock: the judge runs on time.Now (Options.Now unset), and keeps the load
	// model's fits warm in the background (warmLoop).
	wallClock bool
	inc       *analysis.Incremental
	hist      *analysis.Historical
	model     *loadmodel.Model         // what work costs each wave, in cores
	profIdx   atomic.Pointer[profiles] // the last historical snapshot's instance profiles, indexed
	plugins   map[string]lbplugins.Plugin
	buf       *store.Buffered // writes to o.Store; reads go to o.Store directly
	records   *recordMirror   // keeps the reservations and the nodes' intervals in o.Store
	m         *metrics
	rw        *remotewrite.Mapper // POST /api/v1/write's node_exporter mapping and its rates' state
	rwSlots   chan struct{}       // the remote-write requests being read at once (remoteWriteSlots)
	rwWait    time.Duration       // how long a request waits for a slot (remoteWriteWait)
	reg       *prometheus.Registry
	handler   http.Handler
	errs      *httpapi.Errors
	states    instanceStates // the wave instances' states, for the status page
	waveWatch waveWatch      // the waves' liveness as last logged (checkWaves)
	// restoring is set while Run restores the judge's state from the store (restore):
	// the channel is closed when it is done.
	restoring atomic.Pointer[chan struct{}]

	placer
}

// New validates the options and builds the judge. Only the store buffer's writer starts
// here, so that batches ingested before Run are written too; Run closes it when it
// returns, and Close does for a judge that never runs.
func New(o Options) (*Judge, error) {
	if o.Store == nil {
		return nil, errors.New("judge: no store")
	}
	wallClock := o.Now == nil
	if wallClock {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Algorithm == "" {
		o.Algorithm = DefaultAlgorithm
	}
	if o.Retention < 0 {
		return nil, fmt.Errorf("judge: retention %s is negative", o.Retention)
	}
	rb := DefaultRebalanceOptions()
	if o.Rebalance != nil {
		rb = *o.Rebalance // a copy: the caller's struct may change later
		if rb.FitWindow == 0 {
			rb.FitWindow = DefaultRebalanceOptions().FitWindow // no window is not a setting
		}
	}
	if err := rb.validate(); err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	o.Rebalance = &rb
	j := &Judge{o: o, log: o.Logger.With("component", "judge"), now: o.Now, wallClock: wallClock,
		decodeWarns: logging.Throttle{Every: time.Minute}, rwSlots: make(chan struct{}, remoteWriteSlots), rwWait: remoteWriteWait}

	// Every registered algorithm is built once, so a request may name any of them.
	j.plugins = map[string]lbplugins.Plugin{}
	for name := range o.Plugins {
		if _, err := lbplugins.Lookup(name); err != nil {
			return nil, fmt.Errorf("judge: plugins: %w", err)
		}
	}
	for _, name := range lbplugins.Names() {
		p, err := lbplugins.New(name, o.Plugins[name])
		if err != nil {
			return nil, fmt.Errorf("judge: %w", err)
		}
		j.plugins[name] = p
	}
	if _, ok := j.plugins[o.Algorithm]; !ok {
		_, err := lbplugins.Lookup(o.Algorithm)
		return nil, fmt.Errorf("judge: default algorithm: %w", err)
	}
	for name := range o.Filters.Thresholds {
		if !metric.ValidName(name) {
			return nil, fmt.Errorf("judge: threshold on %q: not a metric name", name)
		}
	}

	var err error
	j.inc, err = analysis.NewIncremental(analysis.IncrementalOptions{Now: o.Now, Alpha: o.EWMAAlpha,
		DefaultInterval: o.Filters.DefaultInterval, StaleIntervals: o.Filters.StaleIntervals})
	if err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	j.model = loadmodel.New(loadmodel.Options{Window: rb.FitWindow, Now: o.Now})
	j.rw = remotewrite.NewMapper(o.RemoteWrite)
	j.hist, err = analysis.NewHistorical(analysis.HistoricalOptions{
		Store: o.Store, Metrics: o.HistoricalMetrics, Every: max(o.HistoricalEvery, 0),
		ExtraNodes: j.inc.NodeIDs, Instances: j.instancesByNode, Now: o.Now, Logger: o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	j.reg = o.Registry
	if j.reg == nil {
		j.reg = promreg.New()
	}
	j.m, err = newMetrics(j.reg, j)
	if err != nil {
		return nil, fmt.Errorf("judge: metrics: %w", err)
	}
	j.initPlacer()
	j.handler = j.routes()
	// Last, so that no error above leaves their goroutines behind.
	bo := o.Buffer
	if bo.Logger == nil {
		bo.Logger = o.Logger
	}
	j.buf = store.NewBuffered(keepOpen{o.Store}, bo)
	j.records = newRecordMirror(o.Store, bo, o.Logger)
	return j, nil
}

// keepOpen hands a store to store.Buffered, which closes what it wraps, while leaving
// closing it to the judge's caller, who opened it.
type keepOpen struct{ store.Store }

func (keepOpen) Close() error { return nil }

// Close stops accepting points and writes what is buffered, and the records' last
// changes, each for up to Buffer.CloseTimeout (what is left then is dropped, points
// counted). Run calls it as it returns; it is idempotent, and a judge cannot run again
// after it.
func (j *Judge) Close() error {
	var wg sync.WaitGroup
	wg.Go(j.records.Close) // side by side: a store that is down holds each up
	err := j.buf.Close()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	return nil
}

// StoreCounters are the figures of the buffer in front of the store: points buffered
// now, and points written and dropped and failed writes since New.
func (j *Judge) StoreCounters() store.BufferCounters { return j.buf.Counters() }

// Run builds a judge and runs it until ctx ends.
func Run(ctx context.Context, o Options) error {
	j, err := New(o)
	if err != nil {
		return err
	}
	return j.Run(ctx)
}

// Handler is the judge's HTTP API, status page and /metrics.
func (j *Judge) Handler() http.Handler { return j.handler }

// Incremental is the current-hour analysis (for embedding and tests).
func (j *Judge) Incremental() *analysis.Incremental { return j.inc }

// Historical is the historical analysis (for embedding and tests).
func (j *Judge) Historical() *analysis.Historical { return j.hist }

// Run serves until ctx ends, then closes the judge. The store buffer started in New and
// is closed last, after every source has stopped, so that batches ingested before
// shutdown are written (within Buffer.CloseTimeout). A failing bus subscription is
// retried and never stops the judge, nor does a failing store: the API keeps answering
// from what it has.
func (j *Judge) Run(ctx context.Context) error {
	var ln net.Listener
	if j.o.Listen != "" {
		var err error
		ln, err = httpapi.Listen(j.o.Listen, j.o.TLS)
		if err != nil {
			j.Close()
			return fmt.Errorf("judge: listen on %s: %w", j.o.Listen, err)
		}
	}

	// One run group: the sources, the analyses and the API stop together when ctx ends or
	// the API fails (its error is Run's). The API serves from the start (GET /healthz is
	// liveness, whatever the store); the rest starts once the judge's state is restored,
	// so that a restarted judge answers as it did, and the bus's batches come after the
	// stored ones.
	restored := j.startRestore()
	g, gctx := errgroup.WithContext(ctx)
	if ln != nil {
		g.Go(func() error { return httpapi.Serve(gctx, ln, j.handler, "judge API", j.log, j.o.Ready) })
	}
	g.Go(func() error {
		j.restore(gctx)
		restored()
		if gctx.Err() != nil {
			return nil
		}
		if j.o.Subscriber != nil {
			g.Go(func() error { j.subscribeLoop(gctx); return nil })
			if pos, ok := j.o.Subscriber.(bus.Positioner); ok && j.wallClock {
				g.Go(func() error { j.watchFeed(gctx, pos); return nil })
			}
		}
		if j.o.HistoricalEvery >= 0 {
			g.Go(func() error { _ = j.hist.Run(gctx); return nil })
		}
		if j.o.Retention > 0 {
			g.Go(func() error { j.retentionLoop(gctx); return nil })
		}
		if j.wallClock {
			g.Go(func() error { j.warmLoop(gctx); return nil })
		}
		g.Go(func() error { j.reservationLoop(gctx); return nil })
		g.Go(func() error { j.waveLogLoop(gctx); return nil })
		return nil
	})
	stopping := logging.OnStop(gctx, j.log, "judge stopping")
	runErr := g.Wait()
	stopping()
	// No source is left: write what is buffered, within the buffer's close timeout.
	if c := j.buf.Counters(); c.Buffered > 0 {
		j.log.Info("writing buffered points before stopping", "points", c.Buffered)
	}
	if err := j.Close(); err != nil {
		j.log.Warn("closing the store buffer", "err", err)
	}
	c := j.buf.Counters()
	if lost := c.Dropped - c.Unacked; lost > 0 {
		j.log.Warn("points were dropped on the way to the store", "dropped", lost, "written", c.Written)
	}
	if c.Unacked > 0 {
		// Their Kafka offsets were not committed: not lost.
		j.log.Info("points not yet written to the store are read from the bus again at the next start", "points", c.Unacked, "written", c.Written)
	}
	j.log.Info("judge stopped")
	return runErr
}

func (j *Judge) subscribeLoop(ctx context.Context) {
	bus.SubscribeWithRetry(ctx, j.o.Subscriber, j.ingestBus, bus.RetryOptions{Concurrent: true /* safe: HTTP ingests concurrently too */, OnError: bus.WarnRetries(j.log, "metric subscription failed; retrying", j.m.subscribeErrors.Inc)})
}

// warmLoop keeps the load model's fits warm (loadmodel.Model.Warm) every
// loadmodel.WarmEvery, so that a plan's request does not refit every wave itself: on a
// thousand waves with six hours of samples that took seconds of the request
// (BENCHMARKS.md). Only on the wall clock: a judge on another clock (the fleet
// simulator's, whose time jumps) refits as it is asked, at the moments its plans are
// made, so that a seeded run gives the same plans every time.
func (j *Judge) warmLoop(ctx context.Context) {
	t := time.NewTicker(loadmodel.WarmEvery)
	defer t.Stop()
	for {
		began := time.Now()
		if n := j.model.Warm(); n > 0 {
			j.log.Debug("load model refitted ahead of the plans", "waves", n, "took", time.Since(began).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (j *Judge) retentionLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		cut := j.now().Add(-j.o.Retention)
		dctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		began := time.Now()
		err := j.o.Store.DeleteBefore(dctx, cut)
		switch {
		case err == nil:
			j.log.Info("retention: deleted the points older than the retention", "before", cut.UTC().Format(time.RFC3339),
				"retention", j.o.Retention, "took", time.Since(began).Round(time.Millisecond))
		case ctx.Err() == nil:
			j.log.Warn("retention: delete old points failed", "err", err, "before", cut)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sources of batches, as metric labels.
const (
	sourceBus         = "bus"
	sourceHTTP        = "http"
	sourceRemoteWrite = "remote_write" // POST /api/v1/write
)

// ErrDecode marks a batch that could not be decoded or validated.
var ErrDecode = errors.New("bad metric batch")

// relay checks a posted batch as POST /v1/metrics does and publishes it to the metric
// topic (Options.Relay), keyed by its node as the agents publish theirs. A bus that
// fails is a 503: the batch was not taken.
func (j *Judge) relay(ctx context.Context, data []byte) error {
	b, err := j.decode(data, sourceHTTP)
	if err != nil {
		return err
	}
	msg := bus.Message{Topic: metric.Topic, Key: []byte(b.Node), Value: bytes.Clone(data)} // data is a pooled buffer
	if err := j.o.Relay.Publish(ctx, msg); err != nil {
		return httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeUnavailable, "relay the batch to the bus: %v", err)
	}
	return nil
}

// ingestBus ingests one batch from the bus. The bus commits it only once the store has
// its points (or refused them as invalid): a judge that crashes or is stopped before
// gets it again. While the store buffer is full it waits, and so does the bus. An
// undecodable batch is counted and skipped, so that a bad message cannot stall the
// group.
func (j *Judge) ingestBus(ctx context.Context, m bus.Message) error {
	ack := bus.Defer(ctx)
	b, err := j.decode(m.Value, sourceBus)
	if err != nil {
		ack()
		return nil
	}
	pts := j.observe(b, sourceBus)
	if err := j.buf.WriteAcked(ctx, pts, ack); err != nil {
		// Stopping: the batch stays uncommitted.
		return fmt.Errorf("judge: store %d points: %w", len(pts), err)
	}
	return nil
}

// decoders are remembering metric decoders shared by the HTTP handlers and bus workers:
// agents send the same names and label sets every tick, so a remembered one decodes
// without allocating (a tenth of the judge's ingest CPU went to decoding label objects
// and names anew). The batches they return share those strings and label maps, which
// nothing in the judge or its stores modifies.
var decoders = sync.Pool{New: func() any { return metric.NewDecoder() }}

func (j *Judge) decode(data []byte, source string) (metric.Batch, error) {
	dec := decoders.Get().(*metric.Decoder)
	b, err := dec.Decode(data) // validates the batch
	decoders.Put(dec)
	if err == nil {
		err = j.admit(b)
	}
	if err != nil {
		j.m.decodeErrors.WithLabelValues(source).Inc()
		j.logDecodeError(source, err)
		return b, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return b, nil
}

// logDecodeError says that a batch was skipped. From the bus nobody else learns of it,
// and a remote-write sender's 400 is in its own log on another host (an agent's POST
// fails in the agent's): a warning, once a minute per source while they keep coming,
// with how many were skipped meanwhile; agents of a newer version than the judge's
// during an upgrade, a stranger's producer, or a Prometheus whose clock runs ahead
// would otherwise go unseen but for decode_errors_total.
func (j *Judge) logDecodeError(source string, err error) {
	if source == sourceHTTP {
		j.log.Debug("skipping undecodable batch", "source", source, "err", err)
		return
	}
	if ok, held := j.decodeWarns.Allow(source, time.Now()); ok {
		j.log.Warn("skipping a metric batch that cannot be decoded or validated (binlake_judge_decode_errors_total counts them)",
			"source", source, "err", err, "skipped_since_last_warning", held)
	}
}

// Ingest adds a decoded, valid batch to the incremental analysis and hands its points to
// the store buffer. It never waits for the store. It fails, wrapping store.ErrFull, when
// the buffer has no room (Buffer.Overflow store.OverflowReject), and wrapping
// store.ErrClosed once the judge is closed; the batch is analysed all the same.
func (j *Judge) Ingest(b metric.Batch, source string) error {
	pts := j.observe(b, source)
	if len(pts) == 0 {
		return nil
	}
	// Write refuses only invalid points (checked by observe), a full buffer and a closed
	// one. The label maps are the decoder's, used by nothing else once analysed: the
	// buffer may keep them.
	if err := j.buf.WriteOwned(pts); err != nil {
		return fmt.Errorf("judge: store %d points: %w", len(pts), err)
	}
	return nil
}

// observe adds a batch to the incremental analysis and returns its points for the store.
func (j *Judge) observe(b metric.Batch, source string) []store.Point {
	if j.inc.Observe(b) {
		if iv, off, ok := j.inc.Timing(b.Node); ok {
			j.records.put(intervalRecord(b.Node, iv, off))
		}
	}
	j.model.Observe(b)
	j.changes.Add(1)
	j.m.batches.WithLabelValues(source).Inc()
	j.m.points.WithLabelValues(source).Add(float64(len(b.Points)))
	ts := b.TS
	if ts.IsZero() {
		ts = j.now()
	}
	j.states.observe(b, ts)
	if n := j.m.newestBatch[source]; n != nil { // bus and http; tests ingest as others
		n.Observe(ts)
	}
	// b passed metric's validation, whose limits are the store's: every point is
	// storable as it is (TestDecodedPointsAreStorable), so none is validated again.
	pts := make([]store.Point, 0, len(b.Points))
	for _, p := range b.Points {
		pts = append(pts, store.Point{Node: b.Node, Name: p.Name, Labels: p.Labels, TS: ts, Value: p.Value})
	}
	return pts
}

// live applies the common stale rule (metric.Stale) for the node listings, the waves'
// liveness and the plans: as of now, or while the metric feed is stalled as of when it
// last answered (stalenessNow).
func (j *Judge) live(lastSeen time.Time, interval time.Duration, now time.Time) bool {
	if interval <= 0 {
		interval = j.o.Filters.DefaultInterval
	}
	return !metric.Stale(lastSeen, j.stalenessNow(now), interval, j.o.Filters.StaleIntervals)
}
