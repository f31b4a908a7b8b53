package alarm

import (
	"context"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/metric"
)

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
	// GroupWait is how long the first alert of a group (policy and severity) waits for
	// others before the group is sent, unless the policy sets its own.
	GroupWait time.Duration
	// ResolvedRetention is how long a resolved alert stays listed (15 min when zero).
	ResolvedRetention time.Duration
	// StaleIntervals: a series that sent nothing for this many of its intervals counts as
	// no longer violating (5 when zero), so its alert resolves instead of firing forever.
	StaleIntervals float64
	// DefaultInterval is assumed for batches without interval_s (10 s when zero).
	DefaultInterval time.Duration
	// Send receives each notification (one per channel); it must not block. Whoever
	// delivers it reports the outcome with Engine.Delivered: a page counts as sent, in
	// the notification log, only once a channel delivered it.
	Send func(notify.Message)
	// DeliveryTimeout bounds how long a queued page may take to be delivered (all
	// retries included) after its group_wait; a page claimed in the log and neither
	// delivered nor failed within group_wait plus this is resent (its process crashed).
	// 2 min when zero.
	DeliveryTimeout time.Duration
	ExternalURL     string
	Now             func() time.Time
	Logger          *slog.Logger
	// Hooks for the metrics; each may be nil.
	OnEvaluations func(n int)
	OnLogError    func()
	OnSuppressed  func(reason string)
}

// Engine evaluates policies over the metric stream and keeps the alerts' states. Its
// methods are safe for concurrent use; all time comes from EngineOptions.Now, so tests
// drive it deterministically with Observe and Tick.
type Engine struct {
	o   EngineOptions
	log *slog.Logger
	now func() time.Time

	byMetric map[string][]*policy.Policy
	nodata   []*policy.Policy

	mu       sync.Mutex
	series   map[seriesKey]*series
	nodes    map[string]map[*policy.Policy]*nodataSlot // node → nodata policy → slot
	alerts   map[uint64]*alertState                    // every alert not inactive
	restored map[uint64]LogEntry                       // loaded, not yet seen here
	groups   map[string]*group
	inhibit  map[string]*[6]int // equal-labels key → firing alerts per severity
	counts   [4]int             // alerts per state
	dirty    []*alertState
	lastGC   time.Time
	// stalled is set while the bus says this process is behind on (or cannot read) its
	// partitions; resumedAt is when it last caught up. Silence is only evidence of a dead
	// node when the stream is read up to date (see SetCaughtUp).
	stalled   bool
	resumedAt time.Time

	effMu sync.Mutex // orders effects (log writes, sends) across calls
}

type seriesKey struct{ node, metric, labels string }

type series struct {
	node, metric string
	labels       map[string]string
	samples      []policy.Sample
	keep         int           // points the conditions need
	window       time.Duration // time the window functions need
	lastSeen     time.Time     // engine clock at the last point (only to forget idle series)
	lastTS       time.Time     // the last point's own time, capped at the engine clock
	interval     time.Duration
	slots        []slot
}

type slot struct {
	p *policy.Policy
	a *alertState
}

type nodataSlot struct {
	lastTS   time.Time // the node's last point's own time, capped at the engine clock
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
	series *series // nil for nodata alerts
	nd     *nodataSlot

	state         State
	active        bool
	value         float64
	activeSince   time.Time
	firingSince   time.Time
	inactiveSince time.Time
	resolvedAt    time.Time
	lastEval      time.Time
	lastSent      time.Time // when a page was last claimed (the repeat interval runs from it)
	claimAt       time.Time // this process's page in flight: claimed, not yet delivered
	holdUntil     time.Time // another process's page is in flight until then
	lastMuted     time.Time // when a notification due was last suppressed (silence, inhibition)
	sent          int
	sendResolved  bool
	restore       *LogEntry
	silencedBy    []string
	inhibited     bool
	inhibitKey    string
}

type group struct {
	p       *policy.Policy
	key     string
	flushAt time.Time
	alerts  map[uint64]notify.Alert
}

// firing reports whether the group carries at least one firing alert.
func (g *group) firing() bool {
	for _, a := range g.alerts {
		if a.Status == notify.StatusFiring {
			return true
		}
	}
	return false
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
		o.StaleIntervals = 5
	}
	if o.DefaultInterval <= 0 {
		o.DefaultInterval = 10 * time.Second
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
		byMetric: map[string][]*policy.Policy{}, series: map[seriesKey]*series{},
		nodes: map[string]map[*policy.Policy]*nodataSlot{}, alerts: map[uint64]*alertState{},
		restored: map[uint64]LogEntry{}, groups: map[string]*group{}, inhibit: map[string]*[6]int{},
	}
	for _, p := range o.Policies {
		if p.Cond != nil {
			e.byMetric[p.Metric] = append(e.byMetric[p.Metric], p)
		}
		if p.NoData > 0 {
			e.nodata = append(e.nodata, p)
		}
	}
	return e
}

// Restore loads the notification log: alerts that were firing continue (without a new
// page before their repeat interval) once their series is evaluated here, and resolve
// with a resolved notification if it no longer violates.
func (e *Engine) Restore(ctx context.Context) (int, error) {
	entries, err := e.o.Log.Load(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, le := range entries {
		fp, ok := parseFP(le.Fingerprint)
		if !ok {
			continue
		}
		if _, live := e.alerts[fp]; live {
			continue
		}
		e.restored[fp] = le
		n++
	}
	return n, err
}

// effects are what a call decided and runs after the engine's lock is released.
type effects struct {
	ops    []logOp
	claims []claim
	msgs   []notify.Message
}

// claim is a page due: it is queued only if the shared notification log agrees that no
// process paged the alert within its repeat interval and none has a page in flight.
type claim struct {
	a      *alertState
	entry  LogEntry // QueuedAt is the claim's time
	repeat time.Duration
	lease  time.Duration
	// Outcome, set by run: queue it, or adopt the log's entry (another process paged),
	// or neither (the log changed under the claim: decide again at the next tick).
	queue bool
	adopt *LogEntry
}

type logOp struct {
	remove bool
	entry  LogEntry
}

func (e *Engine) run(ef *effects) {
	defer e.effMu.Unlock()
	for i := range ef.claims {
		e.claim(&ef.claims[i])
	}
	for _, op := range ef.ops {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		if op.remove {
			err = e.o.Log.Remove(ctx, op.entry.Fingerprint)
		} else {
			err = e.o.Log.Save(ctx, op.entry)
		}
		cancel()
		if err != nil {
			e.logError(err, op.entry.Fingerprint)
		}
	}
	for _, m := range ef.msgs {
		e.o.Send(m)
	}
}

// unlock releases the engine and runs the effects in order; claims that won go into
// their groups in a second pass.
func (e *Engine) unlock(ef *effects) {
	e.effMu.Lock()
	e.mu.Unlock()
	e.run(ef)
	if len(ef.claims) == 0 {
		return
	}
	e.mu.Lock()
	now := e.now()
	for _, c := range ef.claims {
		a := c.a
		if e.alerts[a.fp] != a || !a.claimAt.Equal(c.entry.QueuedAt) {
			continue // resolved or dropped meanwhile
		}
		switch {
		case c.queue:
			e.enqueue(a, notify.StatusFiring, now)
		case c.adopt != nil:
			e.adopt(a, *c.adopt, c.lease)
		default:
			a.claimAt, a.lastSent, a.sent = time.Time{}, time.Time{}, a.sent-1
		}
	}
	var ef2 effects
	e.flushDue(now, &ef2)
	e.effMu.Lock()
	e.mu.Unlock()
	e.run(&ef2)
}

// claim asks the shared log whether the page of c may go out, and records it as queued
// if so. Without an answer from the log it pages: a duplicate is better than silence.
func (e *Engine) claim(c *claim) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := c.entry.QueuedAt
	le, ver, err := e.o.Log.Get(ctx, c.entry.Fingerprint)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		ver = coord.NoVersion
	case err != nil:
		e.logError(err, c.entry.Fingerprint)
		c.queue = true
		return
	case le.pending() && now.Sub(le.QueuedAt) < c.lease,
		!le.pending() && !le.LastSent.IsZero() && now.Sub(le.LastSent) < c.repeat:
		c.adopt = &le
		return
	}
	c.entry.LastSent, c.entry.Sent = le.LastSent, le.Sent // Sent counts deliveries
	err = e.o.Log.Put(ctx, c.entry, ver)
	switch {
	case errors.Is(err, coord.ErrVersionConflict):
		return // another process wrote it first: decide again next tick
	case err != nil:
		e.logError(err, c.entry.Fingerprint)
	}
	c.queue = true
}

// adopt continues an alert another process (or this one before a restart) paged: no
// page before the repeat interval, or before that process's page in flight had time to
// be delivered.
func (e *Engine) adopt(a *alertState, le LogEntry, lease time.Duration) {
	a.claimAt = time.Time{}
	a.sent = max(le.Sent, 1)
	if le.pending() {
		a.lastSent, a.holdUntil = time.Time{}, le.QueuedAt.Add(lease)
		return
	}
	a.lastSent, a.holdUntil = le.LastSent, time.Time{}
}

func (e *Engine) logError(err error, fp string) {
	if e.o.OnLogError != nil {
		e.o.OnLogError()
	}
	e.log.Warn("notification log write failed", "err", err, "fingerprint", fp)
}

// Delivered reports the outcome of a notification given to Send. A firing page
// delivered to a channel is recorded in the log as sent (the first channel counts); a
// failed one stays pending, so it is resent after its lease.
func (e *Engine) Delivered(m notify.Message, err error) {
	type done struct {
		fp string
		at time.Time
	}
	var ds []done
	e.mu.Lock()
	now := e.now()
	for _, na := range m.Alerts {
		if na.Status != notify.StatusFiring {
			continue
		}
		fp, ok := parseFP(na.Fingerprint)
		if a := e.alerts[fp]; ok && a != nil && !a.claimAt.IsZero() {
			if err == nil {
				ds = append(ds, done{a.fps, a.claimAt})
				a.claimAt, a.lastSent = time.Time{}, now
			} else {
				a.holdUntil = a.claimAt.Add(e.lease(a))
				a.claimAt, a.lastSent = time.Time{}, time.Time{}
			}
		}
	}
	e.mu.Unlock()
	for _, d := range ds {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		le, ver, gerr := e.o.Log.Get(ctx, d.fp)
		if gerr == nil && le.QueuedAt.Equal(d.at) && le.pending() {
			le.LastSent, le.Sent = now, le.Sent+1
			if perr := e.o.Log.Put(ctx, le, ver); perr != nil && !errors.Is(perr, coord.ErrVersionConflict) {
				e.logError(perr, d.fp)
			}
		}
		cancel()
	}
}

func (e *Engine) lease(a *alertState) time.Duration {
	wait := e.o.GroupWait
	if a.p.GroupWait != nil {
		wait = *a.p.GroupWait
	}
	return wait + e.o.DeliveryTimeout
}

// Observe evaluates a decoded, valid batch and sends what became due.
func (e *Engine) Observe(b metric.Batch) {
	e.mu.Lock()
	now := e.now()
	ts := b.TS
	if ts.IsZero() {
		ts = now
	}
	interval := time.Duration(b.IntervalS * float64(time.Second))
	if interval <= 0 {
		interval = e.o.DefaultInterval
	}
	evals := 0
	for i := range b.Points {
		pt := &b.Points[i]
		pols := e.byMetric[pt.Name]
		if len(pols) == 0 {
			continue
		}
		s := e.seriesFor(b.Node, pt, pols)
		if len(s.slots) == 0 {
			continue
		}
		if n := len(s.samples); n > 0 && !ts.After(s.samples[n-1].TS) {
			continue // a redelivered or out-of-order batch: already evaluated
		}
		s.samples = append(s.samples, policy.Sample{TS: ts, Value: pt.Value})
		s.trim()
		s.lastSeen, s.lastTS, s.interval = now, minTime(ts, now), interval
		for j := range s.slots {
			sl := &s.slots[j]
			value, active, _ := sl.p.Cond.Eval(s.samples)
			evals++
			if sl.a == nil {
				if !active && len(e.restored) == 0 {
					continue
				}
				labels := alertLabels(sl.p, b.Node, pt.Labels)
				fp := fingerprint(labels)
				le, wasFiring := e.restored[fp]
				if !active && !wasFiring {
					continue
				}
				sl.a = e.newAlert(fp, sl.p, labels, b.Node)
				sl.a.series = s
				if wasFiring {
					delete(e.restored, fp)
					e.resume(sl.a, le)
				}
			}
			e.step(sl.a, active, value, now)
		}
	}
	e.observeNodata(b, minTime(ts, now), now, interval)
	if e.o.OnEvaluations != nil && evals > 0 {
		e.o.OnEvaluations(evals)
	}
	var ef effects
	e.process(now, e.dirty, &ef)
	e.dirty = e.dirty[:0]
	e.unlock(&ef)
}

func (e *Engine) seriesFor(node string, pt *metric.Point, pols []*policy.Policy) *series {
	k := seriesKey{node: node, metric: pt.Name}
	if len(pt.Labels) > 0 {
		k.labels = labelKey(pt.Labels)
	}
	if s, ok := e.series[k]; ok {
		return s
	}
	s := &series{node: node, metric: pt.Name, labels: maps.Clone(pt.Labels)}
	for _, p := range pols {
		if p.MatchNode(node) && p.MatchLabels(pt.Labels) {
			s.slots = append(s.slots, slot{p: p})
			s.keep = max(s.keep, p.Cond.Need())
			s.window = max(s.window, p.Cond.Window)
		}
	}
	e.series[k] = s
	return s
}

// trim keeps what the conditions need: the last keep points, and the points within the
// window before the newest; never more than a hard bound.
func (s *series) trim() {
	const hardMax = 100_000
	n := len(s.samples)
	drop := 0
	newest := s.samples[n-1].TS
	for drop < n-1 && n-drop > s.keep {
		if s.window > 0 && s.samples[drop].TS.After(newest.Add(-s.window)) {
			break
		}
		drop++
	}
	if n-drop > hardMax {
		drop = n - hardMax
	}
	if drop > 0 {
		// Reslicing would pin the old array; copy once it is mostly dead.
		if drop > len(s.samples)/2 {
			s.samples = append(s.samples[:0], s.samples[drop:]...)
		} else {
			s.samples = s.samples[drop:]
		}
	}
}

func (e *Engine) observeNodata(b metric.Batch, ts, now time.Time, interval time.Duration) {
	for _, p := range e.nodata {
		if !p.MatchNode(b.Node) {
			continue
		}
		seen := p.Metric == ""
		for i := 0; !seen && i < len(b.Points); i++ {
			seen = b.Points[i].Name == p.Metric && p.MatchLabels(b.Points[i].Labels)
		}
		if !seen {
			continue
		}
		slots := e.nodes[b.Node]
		if slots == nil {
			slots = map[*policy.Policy]*nodataSlot{}
			e.nodes[b.Node] = slots
		}
		sl := slots[p]
		if sl == nil {
			sl = &nodataSlot{}
			slots[p] = sl
		}
		if ts.After(sl.lastTS) {
			sl.lastTS = ts
		}
		sl.interval = interval
		if sl.a == nil && len(e.restored) > 0 {
			labels := nodataLabels(p, b.Node)
			fp := fingerprint(labels)
			if le, ok := e.restored[fp]; ok {
				delete(e.restored, fp)
				sl.a = e.newAlert(fp, p, labels, b.Node)
				sl.a.nd = sl
				e.resume(sl.a, le)
			}
		}
		if sl.a != nil {
			e.step(sl.a, false, 0, now)
		}
	}
}

// Tick advances the timers: pending alerts whose `for` passed fire, keep_firing_for runs
// out, silent series go stale, nodata fires, repeats and grouped notifications go out.
func (e *Engine) Tick() {
	e.mu.Lock()
	now := e.now()
	for node, slots := range e.nodes {
		for p, sl := range slots {
			missing := now.Sub(sl.lastTS)
			active := missing > time.Duration(float64(p.NoData)*float64(sl.interval))
			if e.holding(now, sl.interval) {
				// Behind on the stream, or within one interval of catching up: the
				// node's points may be on their way; keep whatever state it has.
				if sl.a == nil {
					continue
				}
				active = sl.a.active
			}
			if sl.a == nil {
				if !active {
					continue
				}
				labels := nodataLabels(p, node)
				sl.a = e.newAlert(fingerprint(labels), p, labels, node)
				sl.a.nd = sl
			}
			e.step(sl.a, active, missing.Seconds(), now)
		}
	}
	all := make([]*alertState, 0, len(e.alerts))
	for _, a := range e.alerts {
		if a.series != nil && a.state != StateResolved {
			s := a.series
			if now.Sub(s.lastTS) > time.Duration(e.o.StaleIntervals*float64(s.interval)) && !e.holding(now, s.interval) {
				e.step(a, false, a.value, now)
			} else {
				e.step(a, a.active, a.value, now)
			}
		} else if a.nd == nil {
			e.step(a, a.active, a.value, now)
		}
		all = append(all, a)
	}
	var ef effects
	e.process(now, all, &ef)
	e.dirty = e.dirty[:0]
	if now.Sub(e.lastGC) > time.Minute {
		e.gc(now)
		e.lastGC = now
	}
	e.unlock(&ef)
}

// holding reports whether silence of a series or node with this interval says nothing
// yet: the stream is not read up to date, or it caught up less than one interval ago.
func (e *Engine) holding(now time.Time, interval time.Duration) bool {
	return e.stalled || now.Sub(e.resumedAt) < interval
}

// SetCaughtUp tells the engine whether its process reads its share of the stream up to
// date (the bus's committed positions reached the partitions' ends). Nodata and stale
// series are measured on the points' own time against the engine's clock, which is only
// evidence of silence while nothing is waiting to be read: during a broker outage, a
// rebalance or any other consumption gap, and for one interval after it ended (so every
// partition's backlog is replayed), nodata does not fire and firing series do not go
// stale. An engine starts caught up; one whose caller never calls this stays so.
func (e *Engine) SetCaughtUp(ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok && e.stalled {
		e.resumedAt = e.now()
	}
	e.stalled = !ok
}

// Release forgets the given nodes without notifying or touching the notification log:
// their partitions moved to another alarm process, which continues their alerts from
// the log. Their queued notifications still go out.
func (e *Engine) Release(nodes []string) {
	if len(nodes) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	gone := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		gone[n] = true
		delete(e.nodes, n)
	}
	for k, s := range e.series {
		if gone[s.node] {
			delete(e.series, k)
		}
	}
	for _, a := range e.alerts {
		if gone[a.node] {
			e.drop(a)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.After(b) {
		return b
	}
	return a
}

// gc forgets series and nodes silent for an hour and without alerts, so churned node
// names do not pile up.
func (e *Engine) gc(now time.Time) {
	for k, s := range e.series {
		if now.Sub(s.lastSeen) < time.Hour {
			continue
		}
		busy := false
		for _, sl := range s.slots {
			busy = busy || sl.a != nil
		}
		if !busy {
			delete(e.series, k)
		}
	}
}

func (e *Engine) newAlert(fp uint64, p *policy.Policy, labels map[string]string, node string) *alertState {
	a := &alertState{fp: fp, fps: fpString(fp), p: p, labels: labels, node: node}
	parts := make([]string, len(e.o.Inhibition.Equal))
	for i, l := range e.o.Inhibition.Equal {
		parts[i] = labels[l]
	}
	a.inhibitKey = strings.Join(parts, "\xff")
	e.alerts[fp] = a
	e.counts[StateInactive]++
	return a
}

// resume continues a firing alert from the notification log.
func (e *Engine) resume(a *alertState, le LogEntry) {
	a.restore = &le
}

func (e *Engine) setState(a *alertState, s State) {
	if a.state == s {
		return
	}
	if a.state == StateFiring {
		e.inhibit[a.inhibitKey][a.p.Severity]--
	}
	if s == StateFiring {
		c := e.inhibit[a.inhibitKey]
		if c == nil {
			c = new([6]int)
			e.inhibit[a.inhibitKey] = c
		}
		c[a.p.Severity]++
	}
	e.counts[a.state]--
	e.counts[s]++
	a.state = s
}

// step is the state machine. active is the condition's latest result.
func (e *Engine) step(a *alertState, active bool, value float64, now time.Time) {
	a.active, a.value, a.lastEval = active, value, now
	e.dirty = append(e.dirty, a)
	if a.restore != nil && a.state == StateInactive {
		// Continue where the log left it: firing, with its notification history.
		le := a.restore
		a.restore = nil
		e.setState(a, StateFiring)
		a.activeSince, a.firingSince = le.ActiveSince, le.FiringSince
		a.inactiveSince = time.Time{}
		if le.pending() || le.Sent > 0 {
			e.adopt(a, *le, e.lease(a))
		}
	}
	switch a.state {
	case StateInactive, StateResolved:
		if !active {
			return
		}
		a.activeSince = now
		if a.p.For <= 0 {
			e.fire(a, now)
		} else {
			e.setState(a, StatePending)
		}
	case StatePending:
		if !active {
			e.setState(a, StateInactive)
			return
		}
		if now.Sub(a.activeSince) >= a.p.For {
			e.fire(a, now)
		}
	case StateFiring:
		if active {
			a.inactiveSince = time.Time{}
			return
		}
		if a.inactiveSince.IsZero() {
			a.inactiveSince = now
		}
		if now.Sub(a.inactiveSince) >= a.p.KeepFiringFor {
			e.setState(a, StateResolved)
			a.resolvedAt = now
			a.sendResolved = true
		}
	}
}

func (e *Engine) fire(a *alertState, now time.Time) {
	e.setState(a, StateFiring)
	a.firingSince, a.inactiveSince, a.lastSent, a.sent = now, time.Time{}, time.Time{}, 0
	a.claimAt, a.holdUntil = time.Time{}, time.Time{}
	a.resolvedAt = time.Time{}
	a.sendResolved = false
}

// process decides the notifications of the given alerts, flushes due groups and drops
// finished alerts.
func (e *Engine) process(now time.Time, as []*alertState, ef *effects) {
	seen := make(map[*alertState]bool, len(as))
	for _, a := range as {
		if seen[a] {
			continue
		}
		seen[a] = true
		switch a.state {
		case StateInactive:
			e.drop(a)
		case StatePending:
		case StateFiring:
			a.silencedBy = e.silenced(a, now)
			a.inhibited = e.inhibited(a)
			if len(a.silencedBy) > 0 || a.inhibited {
				// One suppression per notification that would have gone out: the first,
				// then one per repeat interval, not one per evaluation.
				last := a.lastSent
				if a.lastMuted.After(last) {
					last = a.lastMuted
				}
				if last.IsZero() || now.Sub(last) >= a.p.RepeatInterval {
					a.lastMuted = now
					if e.o.OnSuppressed != nil {
						if len(a.silencedBy) > 0 {
							e.o.OnSuppressed("silenced")
						} else {
							e.o.OnSuppressed("inhibited")
						}
					}
				}
				// Persist the firing state even when muted, so a restart remembers it.
				if a.lastEval.Equal(a.firingSince) {
					ef.ops = append(ef.ops, logOp{entry: a.entry()})
				}
				continue
			}
			if mx := a.p.MaxNotifications; mx > 0 && a.sent >= mx {
				continue
			}
			if !a.lastSent.IsZero() && now.Sub(a.lastSent) < a.p.RepeatInterval || now.Before(a.holdUntil) || !a.claimAt.IsZero() {
				continue
			}
			a.lastSent, a.claimAt, a.holdUntil = now, now, time.Time{}
			a.sent++
			ce := a.entry()
			ce.QueuedAt = now
			ef.claims = append(ef.claims, claim{a: a, entry: ce, repeat: a.p.RepeatInterval, lease: e.lease(a)})
		case StateResolved:
			if a.sendResolved {
				a.sendResolved = false
				if a.sent > 0 && len(e.silenced(a, now)) == 0 {
					e.enqueue(a, notify.StatusResolved, now)
				}
				ef.ops = append(ef.ops, logOp{remove: true, entry: LogEntry{Fingerprint: a.fps}})
			}
			if now.Sub(a.resolvedAt) >= e.o.ResolvedRetention {
				e.drop(a)
			}
		}
	}
	e.flushDue(now, ef)
}

// flushDue sends the groups whose group_wait has passed, in the documented order
// (deploy/alarm.example.yaml, notify.group_wait): groups that only resolve come before groups that
// fire, each set by group key, and the alerts of a message by node, then fingerprint. A
// receiver that keeps state (a pager, a chat thread) thus sees what cleared before what is
// new, and the same evaluation always yields the same sequence.
func (e *Engine) flushDue(now time.Time, ef *effects) {
	var due []*group
	for k, g := range e.groups {
		if now.Before(g.flushAt) {
			continue
		}
		delete(e.groups, k)
		due = append(due, g)
	}
	slices.SortFunc(due, func(a, b *group) int {
		if fa, fb := a.firing(), b.firing(); fa != fb {
			if fa {
				return 1
			}
			return -1
		}
		return strings.Compare(a.key, b.key)
	})
	for _, g := range due {
		alerts := slices.Collect(maps.Values(g.alerts))
		sort.Slice(alerts, func(i, j int) bool {
			if alerts[i].Labels[policy.LabelNode] != alerts[j].Labels[policy.LabelNode] {
				return alerts[i].Labels[policy.LabelNode] < alerts[j].Labels[policy.LabelNode]
			}
			return alerts[i].Fingerprint < alerts[j].Fingerprint
		})
		for _, ch := range g.p.Channels {
			ef.msgs = append(ef.msgs, notify.Message{
				Receiver: ch, GroupKey: g.key, ExternalURL: e.o.ExternalURL, Alerts: alerts,
				GroupLabels: map[string]string{policy.LabelAlertName: g.p.Name, policy.LabelSeverity: g.p.Severity.String()},
			})
		}
	}
}

// drop removes an alert from memory (it is inactive or resolved long enough).
func (e *Engine) drop(a *alertState) {
	if e.alerts[a.fp] != a {
		return
	}
	e.setState(a, StateInactive)
	e.counts[StateInactive]--
	delete(e.alerts, a.fp)
	if a.series != nil {
		for i := range a.series.slots {
			if a.series.slots[i].a == a {
				a.series.slots[i].a = nil
			}
		}
	}
	if a.nd != nil && a.nd.a == a {
		a.nd.a = nil
	}
}

func (e *Engine) silenced(a *alertState, now time.Time) []string {
	if e.o.Silences == nil {
		return nil
	}
	return e.o.Silences.Match(a.labels, now)
}

func (e *Engine) inhibited(a *alertState) bool {
	if !e.o.Inhibition.Enabled {
		return false
	}
	c := e.inhibit[a.inhibitKey]
	if c == nil {
		return false
	}
	for s := policy.Severity(0); s < a.p.Severity; s++ {
		if c[s] > 0 {
			return true
		}
	}
	return false
}

func (e *Engine) enqueue(a *alertState, status string, now time.Time) {
	key := a.p.Name + "/" + a.p.Severity.String()
	g := e.groups[key]
	if g == nil {
		wait := e.o.GroupWait
		if a.p.GroupWait != nil {
			wait = *a.p.GroupWait
		}
		g = &group{p: a.p, key: key, flushAt: now.Add(wait), alerts: map[uint64]notify.Alert{}}
		e.groups[key] = g
	}
	na := notify.Alert{Status: status, Labels: a.labels, StartsAt: a.firingSince, Value: a.value, Fingerprint: a.fps}
	if status == notify.StatusResolved {
		na.EndsAt = a.resolvedAt
	}
	na.Annotations = a.p.Render(e.templateData(a))
	g.alerts[a.fp] = na
}

func (e *Engine) templateData(a *alertState) policy.TemplateData {
	d := policy.TemplateData{Policy: a.p.Name, Node: a.node, Metric: a.p.Metric, Value: a.value,
		Severity: a.p.Severity.String(), State: a.state.String(), Labels: a.labels}
	if a.p.Cond != nil {
		d.Threshold, d.Condition = a.p.Cond.Threshold, a.p.Cond.String()
	} else {
		d.Threshold, d.Condition = float64(a.p.NoData), "nodata"
	}
	return d
}

func (a *alertState) entry() LogEntry {
	return LogEntry{Fingerprint: a.fps, Policy: a.p.Name, Labels: a.labels, ActiveSince: a.activeSince,
		FiringSince: a.firingSince, LastSent: a.lastSent, Sent: a.sent}
}

// alertLabels are the labels of an alert: the reserved ones, the policy's, and the
// point's (a point label that collides with a reserved one is kept as exported_<name>).
func alertLabels(p *policy.Policy, node string, point map[string]string) map[string]string {
	l := make(map[string]string, 4+len(p.AlertLabels)+len(point))
	for k, v := range point {
		l[k] = v
	}
	for k, v := range p.AlertLabels {
		l[k] = v
	}
	for _, k := range []string{policy.LabelAlertName, policy.LabelNode, policy.LabelSeverity, policy.LabelMetric} {
		if v, ok := point[k]; ok {
			l["exported_"+k] = v
		}
	}
	l[policy.LabelAlertName] = p.Name
	l[policy.LabelNode] = node
	l[policy.LabelSeverity] = p.Severity.String()
	if p.Metric != "" {
		l[policy.LabelMetric] = p.Metric
	}
	return l
}

func nodataLabels(p *policy.Policy, node string) map[string]string {
	l := alertLabels(p, node, nil)
	l["reason"] = "nodata"
	return l
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0xff)
		b.WriteString(l[k])
		b.WriteByte(0xfe)
	}
	return b.String()
}

// fingerprint identifies an alert by its labels (FNV-64a over the sorted pairs).
func fingerprint(l map[string]string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(labelKey(l)))
	return h.Sum64()
}

func parseFP(s string) (uint64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	var fp uint64
	for _, c := range b {
		fp = fp<<8 | uint64(c)
	}
	return fp, true
}

func fpString(fp uint64) string {
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = byte(fp)
		fp >>= 8
	}
	return hex.EncodeToString(b[:])
}

// AlertView is an alert as GET /v1/alerts shows it.
type AlertView struct {
	Fingerprint   string            `json:"fingerprint"`
	State         string            `json:"state"`
	Labels        map[string]string `json:"labels"`
	Annotations   map[string]string `json:"annotations"`
	Value         float64           `json:"value"`
	ActiveSince   *time.Time        `json:"activeSince,omitempty"`
	FiringSince   *time.Time        `json:"firingSince,omitempty"`
	ResolvedAt    *time.Time        `json:"resolvedAt,omitempty"`
	LastNotified  *time.Time        `json:"lastNotified,omitempty"`
	Notifications int               `json:"notifications"`
	SilencedBy    []string          `json:"silencedBy"`
	Inhibited     bool              `json:"inhibited"`
}

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// Alerts lists the alerts that are not inactive, most severe first, then by name and node.
func (e *Engine) Alerts() []AlertView {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	out := make([]AlertView, 0, len(e.alerts))
	for _, a := range e.alerts {
		if a.state == StateInactive {
			continue
		}
		v := AlertView{Fingerprint: a.fps, State: a.state.String(), Labels: a.labels,
			Annotations: a.p.Render(e.templateData(a)), Value: a.value, ActiveSince: tp(a.activeSince),
			Notifications: a.sent, LastNotified: tp(a.lastSent), SilencedBy: e.silenced(a, now), Inhibited: a.state == StateFiring && e.inhibited(a)}
		if v.SilencedBy == nil {
			v.SilencedBy = []string{}
		}
		if a.state == StateFiring || a.state == StateResolved {
			v.FiringSince = tp(a.firingSince)
		}
		if a.state == StateResolved {
			v.ResolvedAt = tp(a.resolvedAt)
		}
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			v.Value = 0
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Labels, out[j].Labels
		if a[policy.LabelSeverity] != b[policy.LabelSeverity] {
			return a[policy.LabelSeverity] < b[policy.LabelSeverity]
		}
		if a[policy.LabelAlertName] != b[policy.LabelAlertName] {
			return a[policy.LabelAlertName] < b[policy.LabelAlertName]
		}
		if a[policy.LabelNode] != b[policy.LabelNode] {
			return a[policy.LabelNode] < b[policy.LabelNode]
		}
		return out[i].Fingerprint < out[j].Fingerprint
	})
	return out
}

// Counts returns how many alerts are pending, firing and resolved.
func (e *Engine) Counts() (pending, firing, resolved int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[StatePending], e.counts[StateFiring], e.counts[StateResolved]
}
