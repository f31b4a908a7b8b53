package alarm

import (
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// engineShards is how many shards the engine's state is split into. A node's series and
// alerts are all on one shard, so batches of different nodes, which the bus delivers
// from several partitions at once, are evaluated in parallel; more shards than cores
// keeps two busy partitions from colliding on one lock.
const engineShards = 16

// shard is the state of the nodes whose name hashes to it, under its own lock.
type shard struct {
	e  *Engine
	mu sync.Mutex

	series   map[seriesKey]*series
	layouts  map[string][]layoutEntry                  // node → its last batch's series, point by point
	nodes    map[string]map[*policy.Policy]*nodataSlot // node → nodata policy → slot
	alerts   map[uint64]*alertState                    // every alert not inactive
	restored map[string]map[uint64]LogEntry            // node → loaded, not yet seen here
	// missing: node → restored entry → when (on the clock) the node's batches began to
	// come without the entry's metric at all (see endRestored).
	missing map[string]map[uint64]time.Time
	counts  [4]int // alerts per state
	dirty   []*alertState
	gen     uint64    // marks the alerts process has seen in its current call
	prev    []*series // observe's scratch: the alerted series of the node's previous batch
}

func newShard(e *Engine) *shard {
	return &shard{e: e, series: map[seriesKey]*series{}, layouts: map[string][]layoutEntry{},
		nodes: map[string]map[*policy.Policy]*nodataSlot{}, alerts: map[uint64]*alertState{},
		restored: map[string]map[uint64]LogEntry{}, missing: map[string]map[uint64]time.Time{}}
}

func (e *Engine) shardOf(node string) *shard {
	h := fnv.New32a()
	h.Write([]byte(node))
	return e.shards[h.Sum32()%uint32(len(e.shards))]
}

// observe evaluates a batch of one of the shard's nodes. Called with sh.mu held.
//
// Its series' alerts step at the batch's own time (capped at the engine clock, so that a
// node whose clock runs ahead does not fire early): a backlog read after a restart or a
// rebalance counts `for` and keep_firing_for, and dates the episodes, as the alarm would
// have had it been up; live, the batch's time is the clock's, less the delivery's delay.
func (sh *shard) observe(b *metric.Batch, ts, now time.Time, interval time.Duration) int {
	at := minTime(ts, now)
	layout := sh.layouts[b.Node]
	prev := sh.prev[:0]
	for _, le := range layout {
		if le.s != nil && !le.s.gone && le.s.alerted() {
			prev = append(prev, le.s)
		}
	}
	if len(layout) != len(b.Points) {
		layout = append(layout[:0:0], layout[:min(len(layout), len(b.Points))]...)
		layout = append(layout, make([]layoutEntry, len(b.Points)-len(layout))...)
		sh.layouts[b.Node] = layout
	}
	rest := sh.restored[b.Node]
	evals := 0
	for i := range b.Points {
		pt := &b.Points[i]
		s := sh.seriesAt(b.Node, layout, i, pt)
		if s == nil || len(s.slots) == 0 {
			continue
		}
		if n := len(s.samples); n > 0 && !ts.After(s.samples[n-1].TS) {
			continue // a redelivered or out-of-order batch: already evaluated
		}
		s.add(policy.Sample{TS: ts, Value: pt.Value})
		s.lastSeen, s.lastTS, s.interval, s.live = now, at, interval, true
		for j := range s.slots {
			sl := &s.slots[j]
			value, active, ok := sl.eval(s)
			evals++
			if sl.a == nil && sl.p.By != nil {
				if !sl.byFPSet {
					sl.byFP, sl.byFPSet = fingerprint(alertLabels(sl.p, b.Node, pt.Labels)), true
				}
				if a := sh.alerts[sl.byFP]; a != nil && a.p == sl.p {
					// Another series of the same alert under the policy's by (a label left
					// out changed value): it takes the alert over, violating or not, so that
					// a recovery (the instance running again) resolves it on its own point.
					sh.rebind(a, s, sl)
				}
			}
			if sl.a == nil {
				if !active && len(rest) == 0 {
					continue
				}
				labels := alertLabels(sl.p, b.Node, pt.Labels)
				fp := fingerprint(labels)
				le, wasFiring := rest[fp]
				if !active && !wasFiring {
					continue
				}
				sl.a = sh.newAlert(fp, sl.p, labels, b.Node)
				sl.a.series = s
				if wasFiring {
					rest = sh.unrestore(b.Node, fp)
					sh.resume(sl.a, le, now)
				}
			}
			if !ok || !ts.After(sl.a.guardTS) {
				// Too few points to tell (a process that just took the series over), or
				// a replayed point no newer than the one the log's decision rested on:
				// either way the alert keeps its state until the series can tell.
				sh.dirty = append(sh.dirty, sl.a)
				continue
			}
			sl.a.guardTS, sl.a.ended = time.Time{}, endedByPoint
			sh.step(sl.a, active, value, at)
		}
	}
	for _, s := range prev {
		// A series this batch carried has a point at ts or later (a redelivered batch).
		// Only a batch that carries the series' metric under other labels says that the
		// series ended: one without the metric at all is a collector that failed this
		// tick (a scrape of the wave timed out), and ending its series there would
		// resolve a firing replication-lag alert to page again after its for.
		if ts.After(s.newest()) && hasMetric(b, s.metric) {
			sh.endSeries(s, ts, at)
		}
	}
	clear(prev)
	sh.prev = prev[:0]
	sh.observeNodata(b, at, now, interval)
	if len(sh.restored[b.Node]) > 0 {
		sh.endRestored(b, ts, at, now, interval)
	}
	return evals
}

// hasMetric reports whether the batch carries a point of the metric.
func hasMetric(b *metric.Batch, name string) bool {
	for i := range b.Points {
		if b.Points[i].Name == name {
			return true
		}
	}
	return false
}

// endSeries stops the alerts of a series that the node's newer batch (at ts) came
// without, though it carried the series' metric. An agent's batch is the whole of its node's points at its time, so a series
// missing from it has ended, as Prometheus marks a series missing from a scrape stale: a
// label that changed value (wave.instance_running's state going from "reconnecting" to
// "running") starts a new series and ends the old one, and an instance removed ends its
// own. Waiting for the old series to go stale (StaleIntervals) would keep its last point
// violating meanwhile: a pending alert fired on it a minute after the instance was
// running again. Its alerts stop holding at at, the batch's evaluation time (see
// observe), and resolve as any alert does (after keep_firing_for); a later point carries
// the series on.
func (sh *shard) endSeries(s *series, ts, at time.Time) {
	for i := range s.slots {
		a := s.slots[i].a
		if a == nil || !a.active {
			continue
		}
		if !ts.After(a.guardTS) {
			continue // a replayed batch from before the entry it resumed: it says nothing new
		}
		a.guardTS, a.endedTS, a.ended = time.Time{}, ts, endedBySeries
		sh.step(a, false, a.value, at)
	}
}

// endRestored resolves the alerts the notification log holds firing on series of the
// node that its batch at ts, newer than the points the log's decision rested on, does
// not carry. Those series ended while no process here evaluated them (across a restart,
// or before the node's partition moved here), so no point will ever come to continue
// their alerts: without this their entries stayed firing in the log for good. Nodata
// alerts are the node's, not a series', and continue in observeNodata. at is the batch's
// evaluation time (see observe).
//
// A node whose batches come without the entry's metric at all (the collector that sent
// it fails for good, the wave's last instance was removed) says nothing of the series
// in any one batch, as for a live series; but as a live series would, it goes stale once
// the node's batches kept coming without it for StaleIntervals of its intervals (on the
// clock, held while the stream is behind) and its alert resolves. Without this, an
// alert whose metric stopped while its partition moved (a member's stop, a rebalance,
// a restart) stayed firing in the log for good and its resolution was never sent.
func (sh *shard) endRestored(b *metric.Batch, ts, at, now time.Time, interval time.Duration) {
	var carried map[uint64]bool
	for fp, le := range sh.restored[b.Node] {
		p := sh.e.byName[le.Policy]
		if p == nil && ts.After(le.EvalTS) {
			if op := sh.e.policyOf(le); op != nil {
				sh.endOrphan(fp, le, op, b.Node, ts, at)
			}
			continue
		}
		if p == nil || p.Cond == nil || !ts.After(le.EvalTS) || fp == fingerprint(nodataLabels(p, b.Node)) {
			continue
		}
		if !hasMetric(b, p.Metric) {
			sh.staleRestored(b.Node, fp, le, p, now, interval)
			continue
		}
		if m := sh.missing[b.Node]; m != nil {
			delete(m, fp)
		}
		if carried == nil {
			carried = sh.carried(b)
		}
		if carried[fp] {
			continue // its point is in the batch, a replayed one: its series goes on
		}
		sh.unrestore(b.Node, fp)
		a := sh.newAlert(fp, p, le.Labels, b.Node)
		sh.resume(a, le, at)
		a.guardTS, a.endedTS, a.ended = time.Time{}, ts, endedBySeries
		sh.step(a, false, a.value, at)
	}
}

// decideRestored continues at once each restored alert whose series this process already
// evaluated past the log's decision, on the series' last point: the first batch of a
// partition just taken over can be evaluated before the log is read again (Restore, at
// the ownership's next answer), and then found no alert to step; the episode ended a
// batch later than it did (an outside trial: an endsAt one sample late). Called with
// sh.mu held.
func (sh *shard) decideRestored() {
	for node, rest := range sh.restored {
		for _, le := range sh.layouts[node] {
			s := le.s
			if s == nil || s.gone || !s.live || len(s.samples) == 0 || len(rest) == 0 {
				continue
			}
			ts := s.samples[len(s.samples)-1].TS
			for j := range s.slots {
				sl := &s.slots[j]
				if sl.a != nil {
					continue
				}
				labels := alertLabels(sl.p, node, s.labels)
				fp := fingerprint(labels)
				entry, ok := rest[fp]
				if !ok || !ts.After(entry.EvalTS) {
					continue
				}
				value, active, decided := sl.eval(s)
				if !decided {
					continue
				}
				rest = sh.unrestore(node, fp)
				sl.a = sh.newAlert(fp, sl.p, labels, node)
				sl.a.series = s
				sh.resume(sl.a, entry, s.lastSeen)
				sl.a.guardTS, sl.a.ended = time.Time{}, endedByPoint
				sh.step(sl.a, active, value, s.lastTS)
			}
		}
	}
}

// endOrphan resolves the restored alert of le, whose policy is gone from the file, by
// op (its stand-in, orphans.go), at the node's batch of ts: nothing evaluates it any
// more, so it is resolved as a series that ended.
func (sh *shard) endOrphan(fp uint64, le LogEntry, op *policy.Policy, node string, ts, at time.Time) {
	sh.unrestore(node, fp)
	a := sh.newAlert(fp, op, le.Labels, node)
	sh.resume(a, le, at)
	a.guardTS, a.endedTS, a.ended = time.Time{}, ts, endedOrphan
	sh.step(a, false, a.value, at)
}

// staleRestored counts the node's batches that come without a restored entry's metric
// at all, from the first one read while the stream is not behind, and resolves the
// entry's alert as gone silent once they lasted StaleIntervals of the node's interval.
func (sh *shard) staleRestored(node string, fp uint64, le LogEntry, p *policy.Policy, now time.Time, interval time.Duration) {
	if sh.e.heldAt(now, interval) {
		return
	}
	m := sh.missing[node]
	if m == nil {
		m = map[uint64]time.Time{}
		sh.missing[node] = m
	}
	since, ok := m[fp]
	if !ok {
		m[fp] = now
		return
	}
	if !metric.Stale(since, now, interval, sh.e.o.StaleIntervals) {
		return
	}
	sh.unrestore(node, fp)
	a := sh.newAlert(fp, p, le.Labels, node)
	sh.resume(a, le, now)
	a.guardTS, a.ended = time.Time{}, endedStale
	sh.step(a, false, a.value, now)
}

// carried returns the fingerprints of the alerts the policies could raise on the
// batch's points (observe has resolved each point's series in the node's layout).
func (sh *shard) carried(b *metric.Batch) map[uint64]bool {
	out := map[uint64]bool{}
	layout := sh.layouts[b.Node]
	for i := range b.Points {
		if s := layout[i].s; s != nil {
			for j := range s.slots {
				out[fingerprint(alertLabels(s.slots[j].p, b.Node, b.Points[i].Labels))] = true
			}
		}
	}
	return out
}

// unrestore forgets a restored entry now continued by a live alert and returns the
// node's remaining ones.
func (sh *shard) unrestore(node string, fp uint64) map[uint64]LogEntry {
	if m := sh.missing[node]; m != nil {
		delete(m, fp)
		if len(m) == 0 {
			delete(sh.missing, node)
		}
	}
	rest := sh.restored[node]
	delete(rest, fp)
	if len(rest) == 0 {
		delete(sh.restored, node)
		return nil
	}
	return rest
}

func (sh *shard) observeNodata(b *metric.Batch, ts, now time.Time, interval time.Duration) {
	for _, p := range sh.e.nodata {
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
		slots := sh.nodes[b.Node]
		if slots == nil {
			slots = map[*policy.Policy]*nodataSlot{}
			sh.nodes[b.Node] = slots
		}
		sl := slots[p]
		if sl == nil {
			sl = &nodataSlot{}
			slots[p] = sl
		}
		if ts.After(sl.lastTS) {
			if sl.lastTS.IsZero() || ts.Sub(sl.lastTS) > time.Duration(float64(p.NoData)*float64(interval)) {
				sl.backTS = ts
			}
			sl.lastTS = ts
		}
		sl.interval = interval
		sh.resumeNodata(b.Node, p, sl, now)
		if a := sl.a; a != nil {
			if !ts.After(a.guardTS) {
				// A replayed batch from before the node fell silent says nothing new.
				sh.dirty = append(sh.dirty, a)
				continue
			}
			a.guardTS = time.Time{}
			sh.step(a, false, silence(a, ts), now)
		}
	}
}

// silence is a nodata alert's value as its node sends again at ts: how long the node was
// silent, from the last point its firing rested on (evalTS) to the first one after it.
// The minutes a resolved agent-dead names, not the seconds since the point that resolved
// it (it read "sent no metrics for 0s"); nor up to a later point, when the alert was
// continued from the log after the node's first points were read here (a kill -9's
// backlog, read before the gained partition's log: a 10 s silence read 21 s). An alert
// that is not firing on the silence keeps its value.
func silence(a *alertState, ts time.Time) float64 {
	if a.state != StateFiring || !a.active || a.evalTS.IsZero() {
		return a.value
	}
	if nd := a.nd; nd != nil && nd.backTS.After(a.evalTS) && !nd.backTS.After(ts) {
		ts = nd.backTS
	}
	return ts.Sub(a.evalTS).Seconds()
}

// resumeNodata continues a nodata alert the notification log holds firing for the
// node, if the slot has none yet.
func (sh *shard) resumeNodata(node string, p *policy.Policy, sl *nodataSlot, now time.Time) {
	if sl.a != nil || len(sh.restored[node]) == 0 {
		return
	}
	labels := nodataLabels(p, node)
	fp := fingerprint(labels)
	le, ok := sh.restored[node][fp]
	if !ok {
		return
	}
	sh.unrestore(node, fp)
	sl.a = sh.newAlert(fp, p, labels, node)
	sl.a.nd = sl
	sh.resume(sl.a, le, now)
}

// resume continues an alert the notification log holds firing: firing here too, with
// its episode's start and the evidence time its decision rested on. It adopts nothing
// from the entry it was loaded from (a copy that another process may have changed
// since): being firing and never paged here, it claims at once, and the log decides
// whether a page is due (see Engine.claim).
func (sh *shard) resume(a *alertState, le LogEntry, now time.Time) {
	sh.setState(a, StateFiring)
	a.active, a.value, a.lastEval = true, le.Value, now
	a.activeSince, a.firingSince = le.ActiveSince, le.FiringSince
	a.evalTS, a.guardTS = le.EvalTS, le.EvalTS
	// A channel still owed the page gets it, whatever max_notifications, as does one the
	// policy gained since the page.
	a.sent, a.owed = le.Sent, le.owes() || len(le.addedChannels(a.p.Channels)) > 0
	if mx := a.p.MaxNotifications; mx > 0 && a.sent >= mx && !a.owed {
		// Never claimed again, so no claim sets when it was last notified: the log says
		// it (and should the cap be raised, the repeat interval runs from that page).
		a.lastSent = le.LastSent
	}
	sh.dirty = append(sh.dirty, a)
}

// tick advances the shard's timers (see Engine.Tick). Called with sh.mu held.
func (sh *shard) tick(now time.Time, held heldFunc, ef *effects) {
	for node, slots := range sh.nodes {
		for p, sl := range slots {
			sh.resumeNodata(node, p, sl, now)
			missing := now.Sub(sl.lastTS)
			active := missing > time.Duration(float64(p.NoData)*float64(sl.interval))
			if held(sl.interval) {
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
				sl.a = sh.newAlert(fingerprint(labels), p, labels, node)
				sl.a.nd = sl
			}
			value := missing.Seconds()
			if !active {
				value = silence(sl.a, sl.lastTS)
			}
			sh.step(sl.a, active, value, now)
		}
	}
	all := make([]*alertState, 0, len(sh.alerts))
	for _, a := range sh.alerts {
		if a.series != nil && a.state != StateResolved {
			s := a.series
			// Stale on what the alarm received, not on the last point's own time: a node
			// whose clock lags the alarm's by more than the window went stale at every
			// tick, which took its pending alerts back to inactive, and it never paged
			// (while a backlog is read, held says nothing).
			if metric.Stale(s.lastSeen, now, s.interval, sh.e.o.StaleIntervals) && !held(s.interval) {
				if a.state != StateResolved && a.active {
					a.ended = endedStale
				}
				sh.step(a, false, a.value, now)
			} else {
				sh.step(a, a.active, a.value, s.evalTime(now))
			}
		} else if a.nd == nil {
			sh.step(a, a.active, a.value, now)
		}
		all = append(all, a)
	}
	sh.process(now, all, ef)
	sh.dirty = sh.dirty[:0]
}

// heldFunc reports whether silence of a series or node with this interval says nothing
// yet: the stream is not read up to date, or it caught up less than one interval ago
// (see Engine.SetCaughtUp).
type heldFunc func(interval time.Duration) bool

// release forgets nodes (see Engine.Release). Called with sh.mu held.
func (sh *shard) release(gone map[string]bool) {
	for n := range gone {
		delete(sh.nodes, n)
		delete(sh.layouts, n)
		delete(sh.missing, n)
	}
	for k, s := range sh.series {
		if gone[s.node] {
			s.gone = true
			delete(sh.series, k)
		}
	}
	for _, a := range sh.alerts {
		if gone[a.node] {
			sh.drop(a)
			// Its page, delivered everywhere, is no longer this process's to tell or
			// hand back; one still on its way is forgotten once it is (pageDone).
			sh.e.infMu.Lock()
			if inf := sh.e.paging[a.fps]; inf != nil && len(inf.left) == 0 && !inf.failed {
				delete(sh.e.paging, a.fps)
			}
			sh.e.infMu.Unlock()
		}
	}
}

// gc forgets series silent for an hour and without alerts, so churned node names do not
// pile up.
func (sh *shard) gc(now time.Time) {
	for k, s := range sh.series {
		if now.Sub(s.lastSeen) < time.Hour {
			continue
		}
		busy := false
		for _, sl := range s.slots {
			busy = busy || sl.a != nil
		}
		if !busy {
			s.gone = true
			delete(sh.series, k)
		}
	}
	for node, layout := range sh.layouts {
		live := false
		for _, le := range layout {
			live = live || le.s != nil && !le.s.gone
		}
		if !live {
			delete(sh.layouts, node)
		}
	}
}

func (sh *shard) newAlert(fp uint64, p *policy.Policy, labels map[string]string, node string) *alertState {
	a := sh.alertOf(fp, p, labels, node)
	sh.alerts[fp] = a
	sh.counts[StateInactive]++
	return a
}

// alertOf is a new alert of p on node, not yet one of the shard's.
func (sh *shard) alertOf(fp uint64, p *policy.Policy, labels map[string]string, node string) *alertState {
	a := &alertState{fp: fp, fps: fpString(fp), p: p, labels: labels, node: node, sh: sh}
	parts := make([]string, len(sh.e.o.Inhibition.Equal))
	for i, l := range sh.e.o.Inhibition.Equal {
		parts[i] = labels[l]
	}
	a.inhibitKey = strings.Join(parts, "\xff")
	return a
}

func (sh *shard) setState(a *alertState, s State) {
	if a.state == s {
		return
	}
	if a.state == StateFiring || s == StateFiring {
		sh.e.inhibit.move(a.inhibitKey, a.p.Severity, a.state == StateFiring, s == StateFiring)
	}
	sh.counts[a.state]--
	sh.counts[s]++
	a.state = s
}

// step is the state machine. active is the condition's latest result at time at, the
// evaluation's: a series' point's own time (see observe and series.evalTime), the
// engine's clock for nodata and staleness, which measure a silence against it. Every
// time of the alert's episode (its start, its end, for, keep_firing_for) is on it.
func (sh *shard) step(a *alertState, active bool, value float64, at time.Time) {
	if a.state != StateResolved || active {
		// A resolved alert keeps the value it resolved with, and so its annotations:
		// GET /v1/alerts shows the episode that ended, not the series' figure of the
		// moment (a resolved cpu-high read 45.4% minutes after it resolved at 70.3%).
		a.value = value
	}
	a.active, a.lastEval = active, at
	sh.dirty = append(sh.dirty, a)
	switch a.state {
	case StateInactive, StateResolved:
		if !active {
			return
		}
		a.activeSince = at
		if a.p.For <= 0 {
			sh.fire(a, at)
		} else {
			sh.setState(a, StatePending)
		}
	case StatePending:
		if !active {
			sh.setState(a, StateInactive)
			return
		}
		if at.Sub(a.activeSince) >= a.p.For {
			sh.fire(a, at)
		}
	case StateFiring:
		if active {
			a.inactiveSince = time.Time{}
			a.evalTS = a.evidenceTS() // a newer point bears the decision out
			return
		}
		if a.inactiveSince.IsZero() {
			a.inactiveSince = at
		}
		if at.Sub(a.inactiveSince) >= a.p.KeepFiringFor {
			sh.setState(a, StateResolved)
			a.resolvedAt, a.resolvedTS = at, a.evidenceTS()
			a.sendResolved = true
			if on := sh.e.o.OnAlert; on != nil {
				on(sh.e.notifyAlert(a, notify.StatusResolved))
			}
		}
	}
}

func (sh *shard) fire(a *alertState, at time.Time) {
	sh.setState(a, StateFiring)
	a.evalTS, a.guardTS = a.evidenceTS(), time.Time{}
	a.firingSince, a.inactiveSince, a.lastSent, a.sent = at, time.Time{}, time.Time{}, 0
	a.claimAt, a.holdUntil = time.Time{}, time.Time{}
	a.resolvedAt, a.ended = time.Time{}, endedByPoint
	a.sendResolved = false
	if on := sh.e.o.OnAlert; on != nil {
		on(sh.e.notifyAlert(a, notify.StatusFiring))
	}
}

// process decides the notifications of the given alerts and drops finished ones; what
// it decided goes into ef, for the writer. Called with sh.mu held.
func (sh *shard) process(now time.Time, as []*alertState, ef *effects) {
	e := sh.e
	sh.gen++
	for _, a := range as {
		if a.gen == sh.gen {
			continue
		}
		a.gen = sh.gen
		switch a.state {
		case StateInactive:
			sh.drop(a)
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
					ef.saves = append(ef.saves, a.entry())
				}
				continue
			}
			if mx := a.p.MaxNotifications; mx > 0 && a.sent >= mx && !a.owed {
				continue
			}
			held := now.Before(a.holdUntil) && !e.claimerGone(a.heldFor.ClaimedBy, a.heldFor.QueuedAt)
			if !a.lastSent.IsZero() && now.Sub(a.lastSent) < a.p.RepeatInterval || held || !a.claimAt.IsZero() {
				continue
			}
			a.lastSent, a.claimAt, a.holdUntil, a.owed = now, now, time.Time{}, false
			a.sent++
			ce := a.entry()
			ce.QueuedAt, ce.ClaimedBy = now, e.claimer()
			ce.PagedBy = ce.ClaimedBy
			ce.Owed, ce.Untold = slices.Clone(a.p.Channels), slices.Clone(a.p.Channels)
			ef.claims = append(ef.claims, claim{a: a, entry: ce, repeat: a.p.RepeatInterval, lease: e.lease(a), nodata: a.nd != nil,
				na: e.notifyAlert(a, notify.StatusFiring)})
		case StateResolved:
			if a.sendResolved {
				a.sendResolved, a.resolvedClock = false, now
				ef.resolves = append(ef.resolves, resolution{a: a, p: a.p, at: a.resolvedAt, ts: a.resolvedTS, value: a.value,
					pagedHere: a.sent > 0, held: a.heldBehind, na: e.notifyAlert(a, notify.StatusResolved),
					entry: a.entry()})
				a.heldBehind = false
			}
			if now.Sub(a.resolvedClock) >= e.o.ResolvedRetention {
				sh.drop(a)
			}
		}
	}
}

// rebind gives alert a to series s's slot sl, taking it from the series that held it,
// which then ends without it.
func (sh *shard) rebind(a *alertState, s *series, sl *slot) {
	if old := a.series; old != nil && old != s {
		for i := range old.slots {
			if old.slots[i].a == a {
				old.slots[i].a = nil
			}
		}
	}
	a.series, sl.a = s, a
}

// drop removes an alert from memory (it is inactive or resolved long enough).
func (sh *shard) drop(a *alertState) {
	if sh.alerts[a.fp] != a {
		return
	}
	sh.setState(a, StateInactive)
	sh.counts[StateInactive]--
	delete(sh.alerts, a.fp)
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

// inhibitions counts firing alerts per equal-labels key and severity, across shards (the
// equal labels need not include the node).
type inhibitions struct {
	mu sync.Mutex
	m  map[string]*[6]int
}

func (in *inhibitions) move(key string, sev policy.Severity, from, to bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	c := in.m[key]
	if c == nil {
		c = new([6]int)
		in.m[key] = c
	}
	if from {
		c[sev]--
	}
	if to {
		c[sev]++
	}
}

// above reports whether an alert more severe than sev fires under key.
func (in *inhibitions) above(key string, sev policy.Severity) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	c := in.m[key]
	if c == nil {
		return false
	}
	for s := policy.Severity(0); s < sev; s++ {
		if c[s] > 0 {
			return true
		}
	}
	return false
}
