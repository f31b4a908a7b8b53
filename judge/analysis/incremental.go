// Package analysis holds the judge's two views of load: the incremental analysis of the
// current hour (in memory, updated by every batch) and the historical analysis of the
// hours before it (from the store, recomputed in the background and cached).
package analysis

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// IncrementalOptions configure the current-hour analysis.
type IncrementalOptions struct {
	// Now is the clock; time.Now when nil. Tests inject one to cross the hour.
	Now func() time.Time
	// Alpha is the EWMA's weight of a new sample, 0 < Alpha ≤ 1; 0.2 when zero.
	Alpha float64
	// ForgetAfter drops, at each rollover, nodes silent for longer; 24 h when zero.
	ForgetAfter time.Duration
	// DefaultInterval and StaleIntervals are the judge's staleness (metric.StaleAfter;
	// the metric package's defaults when zero): a batch older than a node's last counts
	// toward its liveness only while the node is live by them (nodeState.seen).
	DefaultInterval time.Duration
	StaleIntervals  float64
}

// Incremental keeps streaming statistics per node and series for the current hour
// (by the judge's clock). It is safe for concurrent use.
//
// At every hour (xx:00) the hour's statistics restart but each series' level (last
// value, EWMA, standard deviation) is carried over, marked Carried until the series'
// first sample of the new hour: placements at xx:00 see every node's level, not only
// the first node to report. A series with no sample during a whole hour is dropped at
// the next rollover, so a level is carried at most to the end of the hour after its
// last sample. Carrying never refreshes a node's LastSeen: a silent node still goes stale.
type Incremental struct {
	now    func() time.Time
	alpha  float64
	forget time.Duration
	seed   maphash.Seed // of the labelled series' keys
	// defaultInterval and staleIntervals: IncrementalOptions'.
	defaultInterval time.Duration
	staleIntervals  float64

	mu sync.RWMutex
	// hour is the start of the hour the statistics are of; zero until the first data, so
	// that a Replay on start may begin in the previous hour whatever was read before.
	hour    time.Time
	nodes   map[string]*nodeState
	ids     []string // the nodes' ids, sorted, kept as nodes come and go (Liveness)
	version uint64   // bumped by every change, so readers can cache derived views
	late    int64    // points not analysed: their batch is from an earlier hour, or redelivered
}

type nodeState struct {
	lastSeen time.Time // when the judge received the last batch
	lastTS   time.Time // the last batch's own timestamp
	// declared is the interval the node's last batch declared (interval_s, which every
	// batch carries), or Declare restored; zero until then. It is never guessed from the
	// times between batches: after a restart those are the stored batches' timestamps,
	// whose gaps (an outage, a restarted agent, two senders for one node) made a judge
	// call live a node it had called stale, and the reverse, before the node's next batch.
	declared time.Duration
	// offset is how long after its own timestamp the node's batches reach the judge
	// (its clock's lag behind the judge's, and the delivery's), in whole seconds, as last
	// reported by Observe: a replay dates the node's last batch by its timestamp, and a
	// restored offset moves that to when it was received (Declare).
	offset  time.Duration
	batches int64 // this hour
	series  seriesIndex
}

// NewIncremental returns an empty analysis.
func NewIncremental(o IncrementalOptions) (*Incremental, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Alpha == 0 {
		o.Alpha = 0.2
	}
	if !(o.Alpha > 0 && o.Alpha <= 1) {
		return nil, fmt.Errorf("ewma alpha %v: want 0 < alpha ≤ 1", o.Alpha)
	}
	if o.ForgetAfter <= 0 {
		o.ForgetAfter = 24 * time.Hour
	}
	return &Incremental{
		now: o.Now, alpha: o.Alpha, forget: o.ForgetAfter, seed: maphash.MakeSeed(),
		defaultInterval: o.DefaultInterval, staleIntervals: o.StaleIntervals,
		nodes: map[string]*nodeState{},
	}, nil
}

func hourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// rollLocked starts a new hour when now has left the current one: every series carries
// its level into the new hour and restarts its statistics; liveness is kept. Callers
// hold mu exclusively.
func (a *Incremental) rollLocked(now time.Time) {
	h := hourOf(now)
	if !h.After(a.hour) {
		return
	}
	a.hour = h
	a.version++
	forgot := false
	for id, n := range a.nodes {
		if now.Sub(n.lastSeen) > a.forget {
			delete(a.nodes, id)
			forgot = true
			continue
		}
		n.series.roll()
		n.batches = 0
	}
	if forgot {
		a.ids = slices.DeleteFunc(a.ids, func(id string) bool { return a.nodes[id] == nil })
	}
}

// rlock takes the read lock after rolling the hour if the clock has left it, so that a
// read alone starts the new hour.
func (a *Incremental) rlock() time.Time {
	now := a.now()
	a.mu.RLock()
	if len(a.nodes) > 0 && hourOf(now).After(a.hour) {
		a.mu.RUnlock()
		a.mu.Lock()
		a.rollLocked(now)
		a.mu.Unlock()
		a.mu.RLock()
	}
	return now
}

func (a *Incremental) nodeLocked(id string) *nodeState {
	n, ok := a.nodes[id]
	if !ok {
		n = &nodeState{series: newSeriesIndex()}
		a.nodes[id] = n
		i, _ := slices.BinarySearch(a.ids, id)
		a.ids = slices.Insert(a.ids, i, id)
	}
	return n
}

// seen records a batch received at `at` carrying timestamp ts, and reports whether it is
// news of the node: a timestamp after its last batch's (or none), which alone moves the
// node's clock offset and interval. A batch not newer than the last (the bus's
// redelivery, a late delivery) keeps a live node live, but says nothing of one gone
// stale: one batch of three hours ago brought a dead wave back to life, dated three hours
// ahead of the judge's clock, and placements chose it; and its offset made a wave whose
// process had died look alive (an outside trial). But one dated within staleAfter of
// the judge's clock was sent now: a stale node whose clock stepped back (an NTP
// correction after an outage) is back with it, its clock taken from there, where it
// stayed stale until its clock passed its old last batch, up to the 10 minutes ahead the
// judge admits (an outside trial).
func (n *nodeState) seen(at, ts time.Time, staleAfter time.Duration) (news bool) {
	if !ts.IsZero() && !ts.After(n.lastTS) {
		live := !n.lastSeen.IsZero() && at.Sub(n.lastSeen) <= staleAfter
		if live {
			n.lastSeen = at
		}
		if live || at.Sub(ts) > staleAfter {
			return false
		}
	}
	n.lastSeen = at
	if !ts.IsZero() {
		n.lastTS = ts
	}
	return true
}

// Observe adds a batch. The node's liveness, interval and offset are updated by a batch
// newer than its last (seen); its points count toward the current hour unless the batch is from an earlier hour (a
// late delivery), in which case they are only stored, not analysed. A point not newer
// than its series' last is not analysed twice either: the bus delivers at least once,
// and a restarted judge replays what the store has before the bus delivers it again.
// It reports whether the batch declared an interval other than the node's last (a new
// node's first batch too), or reached the judge offsetStep or more later or earlier after
// its timestamp than the node's last reported offset: what the judge keeps in its store
// for a restart (Timing, Declare).
func (a *Incremental) Observe(b metric.Batch) (intervalChanged bool) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rollLocked(now)
	a.version++
	n := a.nodeLocked(b.Node)
	interval := n.declared
	if interval <= 0 {
		interval = a.defaultInterval
	}
	stale := metric.StaleAfter(interval, a.staleIntervals)
	news := n.seen(now, b.TS, stale)
	if iv := time.Duration(b.IntervalS * float64(time.Second)); iv != n.declared && news {
		n.declared, intervalChanged = iv, true
	}
	if !b.TS.IsZero() && news {
		if off := now.Sub(b.TS).Round(time.Second); off-n.offset >= offsetStep || n.offset-off >= offsetStep {
			n.offset, intervalChanged = off, true
		}
	}
	if !b.TS.IsZero() && b.TS.Before(a.hour) {
		a.late += int64(len(b.Points))
		return intervalChanged
	}
	n.batches++ // this hour's: a late delivery of an earlier hour's is not (an outside trial saw 361 for 49)
	ts := b.TS.UnixNano()
	for i := range b.Points {
		p := &b.Points[i]
		s := n.series.get(a.seed, p.Name, p.Labels)
		if !b.TS.IsZero() {
			if ts <= s.lastTS {
				a.late++
				continue
			}
			s.restartAfter(ts, stale)
			n.series.stamp(s, ts)
		}
		s.add(p.Value, a.alpha)
	}
	return intervalChanged
}

// Declare restores the interval a node declared and the offset of its batches (Observe
// reported them; Timing reads them), after a Replay: stored points do not carry their
// batch's interval, nor when it was received. It reports false, changing nothing, for a
// node the analysis does not hold.
func (a *Incremental) Declare(node string, interval, offset time.Duration) bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.nodes[node]
	if !ok {
		return false
	}
	n.declared, n.offset = interval, offset
	if !n.lastTS.IsZero() {
		// The replay dated the node's last batch by its timestamp: a node whose clock
		// lags the judge's by a minute, live before the restart, looked a minute staler,
		// and one whose clock runs ahead looked live after it had stopped.
		n.lastSeen = minTime(n.lastTS.Add(offset), now)
	}
	a.version++
	return true
}

// Timing is the interval node last declared and the offset of its batches (see
// nodeState), for the record Observe reported a change of; ok false for a node the
// analysis does not hold.
func (a *Incremental) Timing(node string) (interval, offset time.Duration, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.nodes[node]
	if !ok {
		return 0, 0, false
	}
	return n.declared, n.offset, true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// offsetStep is how far a node's offset (nodeState.offset) must move for Observe to
// report it: a delivery that takes half a second, then a little more, does not rewrite
// the node's record at every batch.
const offsetStep = 2 * time.Second

// Replay rebuilds the analysis from stored points, in non-decreasing TS order (as
// store.Scan gives them, in as many calls as it has chunks), as if each had been received
// at its own TS: the node's LastSeen is the TS, the points of one node and TS make one
// batch and the hours roll over as they do live, carrying levels. A node's interval is
// not among the points: a node new to the analysis has none until Declare or its next
// batch. TSs later than the clock count as now, and the analysis never goes back in
// time: a point of an hour before the current one (the judge must replay before its
// first Observe) is not analysed and is counted in skipped.
func (a *Incremental) Replay(points []store.Point) (skipped int) {
	if len(points) == 0 {
		return 0
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.version++
	var n *nodeState
	for i := range points {
		p := &points[i]
		at := p.TS
		if at.After(now) {
			at = now
		}
		hour := a.hour
		a.rollLocked(at)
		// The node is looked up again when it changes and after a rollover, which may
		// have forgotten it.
		if n == nil || p.Node != points[i-1].Node || !a.hour.Equal(hour) {
			n = a.nodeLocked(p.Node)
		}
		// A batch dated past the clock counts as received now, as do the ones after it:
		// it is still a batch, and its TS the node's last, which Declare dates by the
		// node's offset (the first such batch stood for all of them, and a node whose
		// clock runs ahead came back as stale as its first batch past the clock).
		if at.After(n.lastSeen) || p.TS.After(n.lastTS) {
			n.seen(at, p.TS, math.MaxInt64) // a stored point was news when it came
			if !at.Before(a.hour) {
				n.batches++
			}
		}
		if at.Before(a.hour) {
			skipped++
			continue
		}
		s := n.series.get(a.seed, p.Name, p.Labels)
		ts := p.TS.UnixNano()
		if ts <= s.lastTS {
			skipped++
			continue
		}
		s.restartAfter(ts, metric.StaleAfter(cmp.Or(n.declared, a.defaultInterval), a.staleIntervals))
		n.series.stamp(s, ts)
		s.add(p.Value, a.alpha)
	}
	return skipped
}

// Hour returns the start of the current hour.
func (a *Incremental) Hour() time.Time {
	now := a.rlock()
	defer a.mu.RUnlock()
	if a.hour.IsZero() {
		return hourOf(now)
	}
	return a.hour
}

// Version changes whenever the analysis changes.
func (a *Incremental) Version() uint64 {
	a.rlock()
	defer a.mu.RUnlock()
	return a.version
}

// Late is the number of points not analysed because their batch was from an earlier hour
// or not newer than their series' last sample (a redelivery).
func (a *Incremental) Late() int64 {
	a.rlock()
	defer a.mu.RUnlock()
	return a.late
}
