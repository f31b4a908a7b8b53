package alarm

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord"
)

// effects are what one evaluation decided that touches the notification log: the log's
// writes (an fsync and a rename each on coord/single, a round trip on ZooKeeper) run on
// the writer's goroutine, not in the evaluation, and a notification goes out only after
// the write it depends on: a page once its claim is in the log, a resolution once its
// entry is removed.
type effects struct {
	claims []claim
	ops    []logOp
	// ack, when set, is called once the writes are done: the bus then commits the
	// batch's position, so a crash before the writes redelivers the batch.
	ack func()
}

func (ef *effects) empty() bool { return len(ef.claims) == 0 && len(ef.ops) == 0 }

// claim is a page due: it is queued only if the shared notification log agrees that no
// process paged the alert within its repeat interval and none has a page in flight.
type claim struct {
	a      *alertState
	entry  LogEntry // QueuedAt is the claim's time
	repeat time.Duration
	lease  time.Duration
	// Outcome, set by the writer: queue it, or adopt the log's entry (another process
	// paged), or neither (the log changed under the claim: decide again at the next tick).
	queue bool
	adopt *LogEntry
}

type logOp struct {
	remove bool
	entry  LogEntry
	then   *pendingAlert // a resolution to group once the entry is removed
}

// pendingAlert is a notification on its way into its group.
type pendingAlert struct {
	p  *policy.Policy
	fp uint64
	na notify.Alert
}

type group struct {
	p       *policy.Policy
	key     string
	labels  map[string]string // the message's GroupLabels: the group_by labels
	flushAt time.Time         // when alerts is sent; meaningless while alerts is empty
	alerts  map[uint64]notify.Alert
	sentAt  time.Time // the group's last notification; zero before its first (see group.go)
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

// writer runs the effects in the order they were decided (each shard submits under its
// lock, so an alert's writes never overtake each other), on one goroutine started when
// work arrives and ended when none is left; it owns the notification groups.
type writer struct {
	e *Engine

	mu      sync.Mutex
	idle    *sync.Cond
	queue   []*effects
	running bool

	groups    map[string]*group // only the writer's goroutine
	nextFlush atomic.Int64      // Unix ns of the earliest group flush; MaxInt64 when none
}

func newWriter(e *Engine) *writer {
	w := &writer{e: e, groups: map[string]*group{}}
	w.idle = sync.NewCond(&w.mu)
	w.nextFlush.Store(math.MaxInt64)
	return w
}

// submit queues ef. An evaluation with nothing to write is only queued when a group is
// due, so the common batch costs no hand-over.
func (w *writer) submit(ef effects, now time.Time) {
	if ef.empty() && now.UnixNano() < w.nextFlush.Load() {
		if ef.ack != nil {
			ef.ack()
		}
		return
	}
	queued := new(effects) // only now: the common call above stays off the heap
	*queued = ef
	w.mu.Lock()
	w.queue = append(w.queue, queued)
	if !w.running {
		w.running = true
		go w.drain()
	}
	w.mu.Unlock()
}

// sync waits until everything submitted so far was written and sent.
func (w *writer) sync() {
	w.mu.Lock()
	for w.running {
		w.idle.Wait()
	}
	w.mu.Unlock()
}

func (w *writer) drain() {
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		if len(batch) == 0 {
			w.running = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, ef := range batch {
			w.run(ef)
		}
		w.flush(w.e.now())
	}
}

// run writes one evaluation's effects, then groups the notifications they cleared.
func (w *writer) run(ef *effects) {
	e := w.e
	for i := range ef.claims {
		e.claim(&ef.claims[i])
	}
	var resolved []*pendingAlert
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
		if op.then != nil {
			resolved = append(resolved, op.then)
		}
	}
	if ef.ack != nil {
		ef.ack()
	}
	now := e.now()
	for _, pa := range resolved {
		w.enqueue(pa, now)
	}
	for i := range ef.claims {
		if pa := w.e.settle(&ef.claims[i]); pa != nil {
			w.enqueue(pa, now)
		}
	}
}

// settle applies a claim's outcome to its alert and returns the page to queue, if any.
func (e *Engine) settle(c *claim) *pendingAlert {
	a := c.a
	sh := a.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.alerts[a.fp] != a || !a.claimAt.Equal(c.entry.QueuedAt) {
		return nil // resolved or dropped meanwhile
	}
	switch {
	case c.queue:
		return &pendingAlert{p: a.p, fp: a.fp, na: e.notifyAlert(a, notify.StatusFiring)}
	case c.adopt != nil:
		a.adopt(*c.adopt, c.lease)
	default:
		a.claimAt, a.lastSent, a.sent = time.Time{}, time.Time{}, a.sent-1
	}
	return nil
}

func (w *writer) enqueue(pa *pendingAlert, now time.Time) {
	p := pa.p
	key, labels := p.Group(pa.na.Labels)
	g := w.groups[key]
	if g == nil {
		g = &group{p: p, key: key, labels: labels, alerts: map[uint64]notify.Alert{}}
		w.groups[key] = g
	}
	if len(g.alerts) == 0 {
		g.flushAt = g.sendAt(now, w.e.groupWait(p), w.e.groupInterval(p))
		if at := g.flushAt.UnixNano(); at < w.nextFlush.Load() {
			w.nextFlush.Store(at)
		}
	}
	g.alerts[pa.fp] = pa.na
}

// flush sends the groups whose group_wait or group_interval has passed, in the documented
// order (deploy/alarm.example.yaml, notify.group_wait): groups that only resolve come before groups that
// fire, each set by group key, and the alerts of a message by node, then fingerprint. A
// receiver that keeps state (a pager, a chat thread) thus sees what cleared before what is
// new, and the same evaluation always yields the same sequence. A group sent is kept, empty,
// until its group_interval ran out (group.go).
func (w *writer) flush(now time.Time) {
	var due []*group
	next := int64(math.MaxInt64)
	for k, g := range w.groups {
		if len(g.alerts) == 0 {
			if !now.Before(g.sentAt.Add(w.e.groupInterval(g.p))) {
				delete(w.groups, k)
			}
			continue
		}
		if now.Before(g.flushAt) {
			next = min(next, g.flushAt.UnixNano())
			continue
		}
		due = append(due, g)
	}
	w.nextFlush.Store(next)
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
		clear(g.alerts)
		g.sentAt = now
		if w.e.groupInterval(g.p) <= 0 {
			delete(w.groups, g.key)
		}
		for _, ch := range g.p.Channels {
			w.e.o.Send(notify.Message{
				Receiver: ch, GroupKey: g.key, ExternalURL: w.e.o.ExternalURL, Alerts: alerts,
				GroupLabels: maps.Clone(g.labels),
			})
		}
	}
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
func (a *alertState) adopt(le LogEntry, lease time.Duration) {
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
	now := e.now()
	for _, na := range m.Alerts {
		if na.Status != notify.StatusFiring {
			continue
		}
		fp, ok := parseFP(na.Fingerprint)
		if !ok {
			continue
		}
		sh := e.shardOf(na.Labels[policy.LabelNode])
		sh.mu.Lock()
		if a := sh.alerts[fp]; a != nil && !a.claimAt.IsZero() {
			if err == nil {
				ds = append(ds, done{a.fps, a.claimAt})
				a.claimAt, a.lastSent = time.Time{}, now
			} else {
				a.holdUntil = a.claimAt.Add(e.lease(a))
				a.claimAt, a.lastSent = time.Time{}, time.Time{}
			}
		}
		sh.mu.Unlock()
	}
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
	// A page waits in its group group_wait, or up to group_interval after the group's last
	// notification (group.go).
	return max(e.groupWait(a.p), e.groupInterval(a.p)) + e.o.DeliveryTimeout
}
