package alarm

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// DefaultStaleIntervals is how many of its intervals a series may stay silent before its
// alert resolves: more than the judge's metric.DefaultStaleIntervals for a node, so that
// an agent that skips a batch or two does not resolve and re-fire its alerts.
const DefaultStaleIntervals = 5

// State is an alert's state.
type State int

// The states of an alert: inactive → pending (condition holds, waiting for `for`) →
// firing → resolved (condition stopped holding for keep_firing_for).
const (
	StateInactive State = iota
	StatePending
	StateFiring
	StateResolved
)

var stateNames = [...]string{"inactive", "pending", "firing", "resolved"}

func (s State) String() string { return stateNames[s] }

// Inhibition configures suppression of lower severities by a higher one.
type Inhibition struct {
	Enabled bool
	// Equal are the labels an inhibiting alert must share with the inhibited one
	// (["node"] when empty): by default, a firing P0 on a node mutes P1–P5 on that node.
	Equal []string
}

// EngineOptions configure an Engine.
type EngineOptions struct {
	Policies []*policy.Policy
	// Log persists firing alerts; required.
	Log NotificationLog
	// Silences mute alerts; none when nil.
	Silences   *Silences
	Inhibition Inhibition
	// GroupWait is how long the first alert of a group (by default, a policy's alerts;
	// see the policy's group_by) waits for others before the group is sent, unless the
	// policy sets its own.
	GroupWait time.Duration
	// GroupInterval is how long after a group's notification the alerts that fall due in
	// it wait, to go out together, unless the policy sets its own; 0: none wait longer
	// than GroupWait (group.go).
	GroupInterval time.Duration
	// ResolvedRetention is how long a resolved alert stays listed (15 min when zero).
	ResolvedRetention time.Duration
	// StaleIntervals: a series that sent nothing for this many of its intervals counts as
	// no longer violating (DefaultStaleIntervals when zero), so its alert resolves
	// instead of firing forever (metric.Stale's rule).
	StaleIntervals float64
	// DefaultInterval is assumed for batches without interval_s (10 s when zero).
	DefaultInterval time.Duration
	// Send receives each notification (one per channel), from the engine's writer
	// goroutine, in order; it must not block. Whoever
	// delivers it reports the outcome with Engine.Delivered: a page counts as sent, in
	// the notification log, only once a channel delivered it.
	Send func(notify.Message)
	// Channels are the channels this process has (nil: any a policy names is taken as
	// had). A gone policy's stand-in sends only to those of its recorded channels
	// (orphanPolicy).
	Channels []string
	// DeliveryTimeout bounds how long a queued page may take to be delivered (all
	// retries included) after its group_wait; a page claimed in the log and neither
	// delivered nor failed within the larger of group_wait and group_interval plus this
	// is resent (its process crashed).
	// 2 min when zero.
	DeliveryTimeout time.Duration
	ExternalURL     string
	Now             func() time.Time
	Logger          *slog.Logger
	// OnAlert, when set, is called as an alert fires (status firing, StartsAt set) and as
	// it resolves (status resolved, EndsAt set), with the alert as a notification carries
	// it, its annotations rendered with its value then; whether a notification goes out
	// (silences, inhibition, grouping) does not matter. An alert continued from the
	// notification log is not reported again. It runs under the alert's shard lock and
	// must neither block nor call the engine: `binlake alarm test` records a replay's
	// alerts with it (Replay).
	OnAlert func(notify.Alert)
	// Hooks for the metrics; each may be nil.
	OnEvaluations func(n int)
	OnLogError    func()
	OnSuppressed  func(reason string)
}

// Engine evaluates policies over the metric stream and keeps the alerts' states. Its
// methods are safe for concurrent use: the state is sharded by node, so batches of
// different nodes are evaluated in parallel, and the notification log is written by the
// engine's writer, off the evaluation. All time comes from EngineOptions.Now, so tests
// drive it deterministically with Observe, Tick and Sync.
type Engine struct {
	o   EngineOptions
	log *slog.Logger
	now func() time.Time

	byMetric map[string][]*policy.Policy
	byName   map[string]*policy.Policy
	nodata   []*policy.Policy

	shards  []*shard
	inhibit inhibitions
	w       *writer

	tickMu sync.Mutex // one Tick at a time
	lastGC time.Time

	// orphans are the fingerprints of the entries the log holds firing whose policy is
	// not in this process's file (removed or renamed while its alert fired), as the last
	// Restore found them: no process evaluates them, so none resolves them (orphans.go).
	orphanMu   sync.Mutex
	orphans    map[string]bool
	orphanPols map[string]*policy.Policy // orphanPolicy's, by name and channels

	// stalled is set while the bus says this process is behind on (or cannot read) its
	// partitions; resumedAt is when it last caught up. Silence is only evidence of a dead
	// node when the stream is read up to date (see SetCaughtUp).
	// owns says whether this process evaluates a node (ownership.owns): the restored
	// alerts GET /v1/alerts lists are its own; nil: every node is.
	owns      atomic.Pointer[func(node string) bool]
	stMu      sync.Mutex
	stalled   bool
	resumedAt time.Time
	// pausedAt is when the process last resumed from a pause (Resumed).
	pausedAt time.Time

	// The notifications this process queued, by fingerprint, and what their channels
	// made of them: the latest page of each alert firing here (until it resolves), and
	// the resolved notices not yet delivered everywhere.
	infMu   sync.Mutex
	paging  map[string]*inflight
	telling map[string]*inflight
	// awaiting is the resolved notices held back from channels whose page another live
	// process is still delivering (awaitpage.go), by fingerprint.
	awaiting map[string]awaitedPage
	// tellingPrior is the resolved notices of the entries' Priors on their way from
	// here, by fingerprint and end.
	tellingPrior map[priorKey]*inflight

	cl claimers // the group's processes, for claims left by a crash

	// opsCtx is the notification log operations' context, cancelled when a stop runs out
	// of time.
	opsCtx  context.Context
	stopOps context.CancelFunc
}

type nodataSlot struct {
	lastTS time.Time // the node's last point's own time, capped at the engine clock
	// backTS is the own time of the node's first point after its last silence longer
	// than the policy's window, or of the first point this process read of it: where a
	// silence ended, though a later point resolves its alert (silence).
	backTS   time.Time
	interval time.Duration
	a        *alertState
}

// alertState is one alert: a policy on one series (or, for nodata, one node).
type alertState struct {
	fp     uint64
	fps    string
	p      *policy.Policy
	labels map[string]string
	node   string
	sh     *shard
	series *series // nil for nodata alerts
	nd     *nodataSlot
	gen    uint64 // see shard.process

	state         State
	active        bool
	value         float64
	activeSince   time.Time
	firingSince   time.Time
	inactiveSince time.Time
	resolvedAt    time.Time // on the evaluation's time (see shard.step), as its endsAt
	// resolvedClock is when the engine decided the resolution, on its clock: the alert's
	// listing (ResolvedRetention) and re-sends (RefreshFor) run from it, not from an end
	// that a backlog read after a restart dates long ago.
	resolvedClock time.Time
	lastEval      time.Time
	lastSent      time.Time // when a page was last claimed (the repeat interval runs from it)
	claimAt       time.Time // this process's page in flight: claimed, not yet delivered
	holdUntil     time.Time // another process's page is in flight until then
	heldFor       LogEntry  // that page's claim (its process and time)
	// heldBehind: the episode's page is held behind the last episode's resolved notice,
	// another process's on its way (claim.held); resolve pages a held episode that ends.
	heldBehind bool
	lastMuted  time.Time // when a notification due was last suppressed (silence, inhibition)
	sent       int       // pages delivered (to a channel at least) in the episode
	// owed: a page of the episode is still owed to a channel (every attempt failed, or
	// another process's claim is in flight and may never be delivered): it is sent
	// whatever max_notifications, since it is not another notification.
	owed         bool
	sendResolved bool
	// evalTS is the own time of the newest point the decision to fire rested on,
	// resolvedTS the one behind the resolution (see LogEntry); guardTS, while set, is
	// the evalTS of the log entry the alert resumed: points no newer cannot change it.
	evalTS, resolvedTS, guardTS time.Time
	// endedTS is the own time of the node's batch that came without the alert's series
	// (see shard.endSeries).
	endedTS time.Time
	// ended: the alert stopped holding because its series ended or went stale, not on
	// a point (its value is the last, violating one); see notifyAlert.
	ended      endReason
	silencedBy []string
	inhibited  bool
	inhibitKey string
}

// NewEngine builds an engine; Restore loads the notification log before use.
func NewEngine(o EngineOptions) *Engine {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ResolvedRetention <= 0 {
		o.ResolvedRetention = 15 * time.Minute
	}
	if o.StaleIntervals <= 0 {
		o.StaleIntervals = DefaultStaleIntervals
	}
	if o.DefaultInterval <= 0 {
		o.DefaultInterval = metric.DefaultInterval
	}
	if o.DeliveryTimeout <= 0 {
		o.DeliveryTimeout = 2 * time.Minute
	}
	if len(o.Inhibition.Equal) == 0 {
		o.Inhibition.Equal = []string{policy.LabelNode}
	}
	if o.Send == nil {
		o.Send = func(notify.Message) {}
	}
	e := &Engine{
		o: o, log: o.Logger.With("component", "alarm"), now: o.Now,
		byMetric: map[string][]*policy.Policy{}, byName: map[string]*policy.Policy{}, inhibit: inhibitions{m: map[string]*[6]int{}},
		paging: map[string]*inflight{}, telling: map[string]*inflight{}, awaiting: map[string]awaitedPage{}, tellingPrior: map[priorKey]*inflight{},
	}
	e.opsCtx, e.stopOps = context.WithCancel(context.Background())
	e.w = newWriter(e)
	e.shards = make([]*shard, engineShards)
	for i := range e.shards {
		e.shards[i] = newShard(e)
	}
	for _, p := range o.Policies {
		e.byName[p.Name] = p
		if p.Cond != nil {
			e.byMetric[p.Metric] = append(e.byMetric[p.Metric], p)
		}
		if p.NoData > 0 {
			e.nodata = append(e.nodata, p)
		}
	}
	return e
}

// Restore loads the notification log. Alerts it holds firing continue once their series
// (or, for nodata, their node) is evaluated here: firing, paged again only when the log
// says a page is due, resolved with a notice when they no longer hold. What it loaded
// replaces what an earlier Restore loaded, so an entry another process resolved since is
// not continued. It then sends the resolved notices whose sender is gone (see sweep).
func (e *Engine) Restore(ctx context.Context) (int, error) {
	entries, err := e.o.Log.Load(ctx)
	// A load that failed part-way adds what it found to what an earlier one loaded.
	partial := err != nil
	fresh := make(map[*shard]map[string]map[uint64]LogEntry, len(e.shards))
	n := 0
	var ended []LogEntry
	for _, le := range entries {
		fp, ok := parseFP(le.Fingerprint)
		if ok && !le.firing() && !le.ResolvedAt.IsZero() {
			ended = append(ended, le)
		}
		if !ok || !le.firing() {
			continue
		}
		node := le.Labels[policy.LabelNode]
		sh := e.shardOf(node)
		byNode := fresh[sh]
		if byNode == nil {
			byNode = map[string]map[uint64]LogEntry{}
			fresh[sh] = byNode
		}
		if byNode[node] == nil {
			byNode[node] = map[uint64]LogEntry{}
		}
		byNode[node][fp] = le
	}
	e.noteOrphans(entries, partial)
	now := e.now()
	for _, sh := range e.shards {
		sh.mu.Lock()
		if !partial {
			sh.restored = map[string]map[uint64]LogEntry{}
		}
		for node, les := range fresh[sh] {
			for fp, le := range les {
				if a, live := sh.alerts[fp]; live {
					// An alert that is not firing here, which the log holds firing in an
					// episode newer than any it resolved here, was fired by another
					// process (this one's partitions were its own for a while, a lapse
					// or a rebalance): it continues from the log. Left pending here (its
					// for running anew on the points read since), its episode's
					// resolution went unsent until the log's next reload (t10).
					if a.state == StatePending || a.state == StateResolved && le.FiringSince.After(a.resolvedAt) {
						a.inactiveSince, a.resolvedAt, a.sendResolved, a.ended = time.Time{}, time.Time{}, false, endedByPoint
						a.claimAt, a.holdUntil, a.lastSent = time.Time{}, time.Time{}, time.Time{}
						sh.resume(a, le, now)
						n++
					}
					continue
				}
				if sh.restored[node] == nil {
					sh.restored[node] = map[uint64]LogEntry{}
				}
				sh.restored[node][fp] = le
				n++
			}
		}
		sh.decideRestored()
		sh.mu.Unlock()
	}
	e.firingThroughEnds(ended)
	e.sweep(ctx, entries)
	return n, err
}

// firingThroughEnds starts a new episode of each alert firing here that the log holds
// resolved after it began, by another process, on points older than this one's last:
// this process kept the episode (adopted from the log, or from before its partition
// moved away and back) and its points never showed the gap the other resolved it on.
// Its next page was due only at the repeat interval, while the receivers had the
// episode ended (an outside trial: an episode never told). It is claimed at once, as a
// new episode (startAfter).
func (e *Engine) firingThroughEnds(ended []LogEntry) {
	for _, le := range ended {
		fp, _ := parseFP(le.Fingerprint)
		sh := e.shardOf(le.Labels[policy.LabelNode])
		sh.mu.Lock()
		a := sh.alerts[fp]
		if a != nil && a.state == StateFiring && a.claimAt.IsZero() && a.firingSince.Before(le.ResolvedAt) &&
			!answered(a.evalTS, le, a.nd != nil) {
			ce := LogEntry{FiringSince: a.firingSince, ActiveSince: a.activeSince, EvalTS: a.evalTS}
			startAfter(&ce, le)
			e.debug("firing here through another process's resolution: a new episode", a.fps, "was_since", a.firingSince,
				"ends_at", le.ResolvedAt, "starts_at", ce.FiringSince)
			a.firingSince, a.activeSince = ce.FiringSince, ce.ActiveSince
			a.lastSent, a.holdUntil, a.sent, a.owed = time.Time{}, time.Time{}, 0, false
			sh.dirty = append(sh.dirty, a)
		}
		sh.mu.Unlock()
	}
}

// SetOwner gives the engine what says which nodes this process evaluates (the bus's
// partitions): GET /v1/alerts lists the restored alerts of those only.
func (e *Engine) SetOwner(owns func(node string) bool) { e.owns.Store(&owns) }

// Sync waits until the notification log writes and the notifications of every call
// made so far are done (tests, and a clean stop).
func (e *Engine) Sync() { e.w.sync() }

// Flush is the engine's part of a stop, once nothing evaluates any more: the writer
// finishes what was decided and every notification group goes out at once, whatever its
// group_wait, so a resolution decided just before the stop is not left waiting. At
// deadline the log operations still running are cut short; Flush returns how many
// evaluations' effects were left unwritten then (their batches are not acknowledged,
// so the next owner of their partitions evaluates them again).
func (e *Engine) Flush(deadline time.Time) (unwritten int) {
	e.w.submit(effects{expedite: true}, e.now())
	unwritten = e.w.syncUntil(deadline)
	if unwritten > 0 {
		e.stopOps()
		e.w.syncUntil(time.Now().Add(time.Second))
	}
	return unwritten
}

// finish is the engine's part of a stop once the channels drained (after Flush): the
// log records of their deliveries, and one more try of the writes that waited for the
// log to answer. It returns how many of those are still unwritten at deadline (lost).
func (e *Engine) finish(deadline time.Time) (unrecorded int) {
	e.w.submit(effects{retry: e.w.owedCount.Load() > 0}, e.now())
	e.w.syncUntil(deadline)
	return int(e.w.owedCount.Load())
}

// Observe evaluates a decoded, valid batch; what became due is written and sent by the
// engine's writer.
func (e *Engine) Observe(b metric.Batch) { e.ObserveAck(b, nil) }

// ObserveAck is Observe, calling ack (when not nil) once the notification log writes the
// batch led to are done: a bus handler acknowledges the batch's message with it, so a
// crash before the writes redelivers the batch instead of losing its page.
func (e *Engine) ObserveAck(b metric.Batch, ack func()) {
	sh := e.shardOf(b.Node)
	sh.mu.Lock()
	now := e.now()
	ts := pointTime(b.TS)
	if ts.IsZero() {
		ts = now
	}
	interval := time.Duration(b.IntervalS * float64(time.Second))
	if interval <= 0 {
		interval = e.o.DefaultInterval
	}
	evals := sh.observe(&b, ts, now, interval)
	ef := effects{ack: ack}
	sh.process(now, sh.dirty, &ef)
	sh.dirty = sh.dirty[:0]
	// Submitted under the shard's lock: the writer's order is the order of decisions.
	e.w.submit(ef, now)
	sh.mu.Unlock()
	if e.o.OnEvaluations != nil && evals > 0 {
		e.o.OnEvaluations(evals)
	}
}

// Tick advances the timers: pending alerts whose `for` passed fire, keep_firing_for runs
// out, silent series go stale, nodata fires, repeats and grouped notifications go out.
// It holds every shard while it runs, so one Tick is one evaluation, as a batch is.
// heldAt reports whether silence of a series or node with this interval says nothing
// yet at now (see heldFunc).
func (e *Engine) heldAt(now time.Time, interval time.Duration) bool {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	return e.stalled || now.Sub(e.resumedAt) < interval
}

func (e *Engine) Tick() {
	e.tickMu.Lock()
	defer e.tickMu.Unlock()
	for _, sh := range e.shards {
		sh.mu.Lock()
	}
	now := e.now()
	e.stMu.Lock()
	stalled, resumedAt := e.stalled, e.resumedAt
	e.stMu.Unlock()
	held := func(interval time.Duration) bool { return stalled || now.Sub(resumedAt) < interval }
	gc := now.Sub(e.lastGC) > time.Minute
	var ef effects
	for _, sh := range e.shards {
		sh.tick(now, held, &ef)
		if gc {
			sh.gc(now)
		}
	}
	if gc {
		e.lastGC = now
	}
	ef.retry = e.w.retryDue(now)
	ef.writes = append(ef.writes, e.awaitedWrites()...)
	e.w.submit(ef, now)
	for _, sh := range e.shards {
		sh.mu.Unlock()
	}
}

// SetCaughtUp tells the engine whether its process reads its share of the stream up to
// date (the bus's committed positions reached the partitions' ends). Nodata and stale
// series are measured on the points' own time against the engine's clock, which is only
// evidence of silence while nothing is waiting to be read: during a broker outage, a
// rebalance or any other consumption gap, and for one interval after it ended (so every
// partition's backlog is replayed), nodata does not fire and firing series do not go
// stale. An engine starts caught up; one whose caller never calls this stays so.
func (e *Engine) SetCaughtUp(ok bool) {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	if ok && e.stalled {
		e.resumedAt = e.now()
	}
	e.stalled = !ok
}

// Resumed tells the engine that its process was paused (its timer ran late: a VM's
// stolen time, a stop signal, a starved machine) and runs again. The clock jumped while
// the consumer stood still, so the nodes' points of the pause are still waiting to be
// read: nodata and staleness are held for one interval from now, as after catching up,
// or the first Tick after the pause would page every node whose point is due.
func (e *Engine) Resumed() {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	e.resumedAt = e.now()
	e.pausedAt = e.resumedAt
}

// pauseWindow is how long after a pause a resolution waits for the log instead of
// going out unlogged (resolve): long enough for the process's coordinator session, lost
// in the pause, to be replaced.
const pauseWindow = 30 * time.Second

// justResumed reports whether the process resumed from a pause within pauseWindow.
func (e *Engine) justResumed() bool {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	return !e.pausedAt.IsZero() && e.now().Sub(e.pausedAt) < pauseWindow
}

// Release forgets the given nodes without notifying or touching the notification log:
// their partitions moved to another alarm process, which continues their alerts from
// the log. Their queued notifications still go out.
func (e *Engine) Release(nodes []string) {
	if len(nodes) == 0 {
		return
	}
	byShard := map[*shard]map[string]bool{}
	for _, n := range nodes {
		sh := e.shardOf(n)
		if byShard[sh] == nil {
			byShard[sh] = map[string]bool{}
		}
		byShard[sh][n] = true
	}
	for sh, gone := range byShard {
		sh.mu.Lock()
		sh.release(gone)
		sh.mu.Unlock()
	}
}

func minTime(a, b time.Time) time.Time {
	if a.After(b) {
		return b
	}
	return a
}

func (e *Engine) silenced(a *alertState, now time.Time) []string {
	if e.o.Silences == nil {
		return nil
	}
	return e.o.Silences.Match(a.labels, now)
}

func (e *Engine) inhibited(a *alertState) bool {
	return e.o.Inhibition.Enabled && e.inhibit.above(a.inhibitKey, a.p.Severity)
}

// notifyAlert is the alert as a notification carries it.
func (e *Engine) notifyAlert(a *alertState, status string) notify.Alert {
	na := notify.Alert{Status: status, Labels: a.labels, StartsAt: a.firingSince, Value: a.value, Fingerprint: a.fps}
	if status == notify.StatusResolved {
		na.EndsAt = a.resolvedAt
	}
	na.Annotations = e.render(a)
	return na
}

// endReason says why an alert stopped holding without a point that decided it.
type endReason uint8

const (
	endedByPoint  endReason = iota // a point of the series decided it (or it fires)
	endedBySeries                  // a newer batch of the node came without the series
	endedStale                     // the series sent nothing for StaleIntervals
	endedOrphan                    // its policy is gone from the file (orphans.go)
)

// render is the alert's annotations. A resolution that no point decided (its series
// ended or went stale) keeps the value of the last point, the violating one, so its
// summary says so: "… lags 120s (series ended)" rather than read as a resolved 120 s.
func (e *Engine) render(a *alertState) map[string]string {
	d := e.templateData(a)
	out := a.p.Render(d)
	if d.Ended {
		if s, ok := out["summary"]; ok {
			switch a.ended {
			case endedOrphan: // its own summary says why
			case endedStale:
				out["summary"] = s + " (series went silent)"
			default:
				out["summary"] = s + " (series ended)"
			}
		}
	}
	return out
}

func (e *Engine) templateData(a *alertState) policy.TemplateData {
	labels := a.labels
	if a.p.By != nil && a.series != nil {
		// The labels by leaves out are the latest point's: what the wave says now.
		labels = maps.Clone(a.series.labels)
		maps.Copy(labels, a.labels)
	}
	d := templateData(a.p, labels, a.value, a.state)
	d.Ended = a.state == StateResolved && a.ended != endedByPoint
	return d
}

func templateData(p *policy.Policy, labels map[string]string, value float64, state State) policy.TemplateData {
	d := policy.TemplateData{Policy: p.Name, Node: labels[policy.LabelNode], Metric: p.Metric, Value: value,
		Severity: p.Severity.String(), State: state.String(), Labels: labels}
	switch {
	case p.Cond != nil:
		d.Threshold, d.Condition = p.Cond.Threshold, p.Cond.String()
	case p.NoData > 0:
		d.Threshold, d.Condition = float64(p.NoData), "nodata"
	default: // a gone policy's stand-in (orphans.go)
		d.Condition = "none: the policy is gone from the file"
	}
	return d
}

func (a *alertState) entry() LogEntry {
	return LogEntry{Fingerprint: a.fps, Policy: a.p.Name, Labels: a.labels, ActiveSince: a.activeSince,
		FiringSince: a.firingSince, LastSent: a.lastSent, Sent: a.sent, EvalTS: a.evalTS, Value: a.value,
		Channels: a.p.Channels, GroupBy: nonDefaultGroupBy(a.p.GroupBy)}
}

// nonDefaultGroupBy is a policy's group_by as its log entries record it: nil for the
// default, which most policies have.
func nonDefaultGroupBy(gb []string) []string {
	if slices.Equal(gb, policy.DefaultGroupBy) {
		return nil
	}
	return gb
}

// evidenceTS is the own time of the newest point the alert's state rests on: its
// series' newest point, or the node's batch that came without it; for nodata the node's
// last point.
func (a *alertState) evidenceTS() time.Time {
	switch {
	case a.nd != nil:
		return a.nd.lastTS
	case a.series != nil && a.series.newest().After(a.endedTS):
		return a.series.newest()
	}
	return a.endedTS
}

// nodataRecords returns, for the nodes keep accepts, what the engine watches of them for
// nodata: their interval and the own time of their last point per nodata policy (the
// node book's page; see nodeBook).
func (e *Engine) nodataRecords(keep func(node string) bool) map[string]nodeRecord {
	out := map[string]nodeRecord{}
	for _, sh := range e.shards {
		sh.mu.Lock()
		for node, slots := range sh.nodes {
			if !keep(node) {
				continue
			}
			r := nodeRecord{Seen: make(map[string]time.Time, len(slots))}
			for p, sl := range slots {
				r.Seen[p.Name] = sl.lastTS
				r.Interval = max(r.Interval, sl.interval)
			}
			out[node] = r
		}
		sh.mu.Unlock()
	}
	return out
}

// adoptNodata watches the given nodes for nodata from their recorded last points on, as
// if their batches had been read here (a node already watched keeps the newer time).
// Records of policies this engine does not have, or that do not select the node, are
// ignored.
func (e *Engine) adoptNodata(recs map[string]nodeRecord) {
	for node, r := range recs {
		sh := e.shardOf(node)
		sh.mu.Lock()
		for name, ts := range r.Seen {
			p := e.byName[name]
			if p == nil || p.NoData <= 0 || !p.MatchNode(node) || r.Interval <= 0 {
				continue
			}
			slots := sh.nodes[node]
			if slots == nil {
				slots = map[*policy.Policy]*nodataSlot{}
				sh.nodes[node] = slots
			}
			if sl := slots[p]; sl == nil {
				slots[p] = &nodataSlot{lastTS: ts, interval: r.Interval}
			} else if ts.After(sl.lastTS) {
				sl.lastTS = ts
			}
		}
		sh.mu.Unlock()
	}
}
