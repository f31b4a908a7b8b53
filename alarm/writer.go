package alarm

import (
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
)

// effects are what one evaluation decided that touches the notification log: the log's
// writes (an fsync and a rename each on coord/single, a round trip on ZooKeeper) run on
// the writer's goroutine, not in the evaluation, and a notification goes out only after
// the write it depends on: a page once its claim is in the log, a resolution once the
// log says it resolves (and only if the log did not know it resolved already).
type effects struct {
	claims   []claim
	saves    []LogEntry   // firing states to remember without a page (muted alerts)
	resolves []resolution // alerts that stopped holding
	notices  []*pendingAlert
	// writes are the deliveries' records (Engine.Delivered); retry tries the writes
	// that wait for the log to answer again (see logwrites.go).
	writes []keyedWrite
	retry  bool
	// expedite sends every notification group at once, whatever its group_wait (a
	// stopping process).
	expedite bool
	// ack, when set, is called once the writes are done: the bus then commits the
	// batch's position, so a crash before the writes redelivers the batch.
	ack func()
}

func (ef *effects) empty() bool {
	return len(ef.claims) == 0 && len(ef.saves) == 0 && len(ef.resolves) == 0 && len(ef.notices) == 0 &&
		len(ef.writes) == 0 && !ef.retry && !ef.expedite
}

// pendingAlert is a notification on its way into its group.
type pendingAlert struct {
	p  *policy.Policy
	fp uint64
	na notify.Alert
	// to are the channels it goes to; nil: every channel of the policy.
	to []string
}

// queuedAlert is a notification in its group, and its channels (nil: all).
type queuedAlert struct {
	na notify.Alert
	to []string
}

// episodeKey is an alert's notice in a group's message: its fingerprint and the start of
// its episode (StartsAt), so that an episode's resolution and the next episode's page can
// go in one message.
type episodeKey struct {
	fp       uint64
	startsAt int64 // Unix nanoseconds
}

type group struct {
	p       *policy.Policy
	key     string
	labels  map[string]string // the message's GroupLabels: the group_by labels
	flushAt time.Time         // when alerts is sent; meaningless while alerts is empty
	alerts  map[episodeKey]queuedAlert
	// later are the next messages' alerts, each sent after the one before: the
	// resolution of an alert whose page is in a message not yet sent waits for the next
	// message instead of replacing the page, so that a claimed page is delivered and a
	// receiver never gets a resolution for a page it did not get. Another notice of the
	// same episode replaces the older one (the latest state: a repeat, a refreshed
	// value); the next episode's page goes beside the last one's resolution, which it
	// replaced, and a receiver keeping an incident per fingerprint and startsAt never
	// heard the first one end (an outside trial). Empty while alerts is.
	later  []map[episodeKey]queuedAlert
	sentAt time.Time // the group's last notification; zero before its first (see group.go)
}

// firing reports whether the group carries at least one firing alert.
func (g *group) firing() bool {
	for _, a := range g.alerts {
		if a.na.Status == notify.StatusFiring {
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

	// The writes waiting for the log to answer again, per alert in order (logwrites.go);
	// only the writer's goroutine, but for the counts.
	owed      map[string][]logWrite
	owedCount atomic.Int64
	retryAt   atomic.Int64 // Unix ns of the next round of retries
	retryWait time.Duration
	recorded  int             // writes recorded late since the log was last caught up
	notices   []*pendingAlert // what the writes found due, for run to queue
}

func newWriter(e *Engine) *writer {
	w := &writer{e: e, groups: map[string]*group{}, owed: map[string][]logWrite{}}
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

// syncUntil is sync, giving up at deadline; it returns how many evaluations' effects
// were still waiting for the writer then (0: all done).
func (w *writer) syncUntil(deadline time.Time) int {
	wake := time.AfterFunc(time.Until(deadline), func() {
		w.mu.Lock()
		w.idle.Broadcast()
		w.mu.Unlock()
	})
	defer wake.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.running && time.Now().Before(deadline) {
		w.idle.Wait()
	}
	if !w.running {
		return 0
	}
	return len(w.queue) + 1 // the queue, and the batch in hand
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
	if ef.retry {
		w.retryOwed()
	}
	for _, kw := range ef.writes {
		w.write(kw)
	}
	for i := range ef.claims {
		e.claim(&ef.claims[i])
	}
	for _, le := range ef.saves {
		ctx, cancel := e.opContext()
		if err := e.o.Log.Save(ctx, le); err != nil {
			e.logError(err, le.Fingerprint)
		}
		cancel()
	}
	notices := ef.notices
	for i := range ef.resolves {
		pa := e.resolve(&ef.resolves[i])
		// What goes first (a page, an earlier episode's resolution) goes even when this
		// resolution has nothing to tell now (awaiting another process's page): an earlier
		// episode's resolution was dropped so (an outside trial).
		notices = append(notices, ef.resolves[i].first...)
		if pa != nil {
			notices = append(notices, pa)
		}
	}
	if ef.ack != nil {
		ef.ack()
	}
	now := e.now()
	for _, pa := range notices {
		w.enqueue(pa, now)
	}
	for i := range ef.claims {
		for _, pa := range e.settle(&ef.claims[i]) {
			w.enqueue(pa, now)
		}
	}
	for _, pa := range w.notices {
		w.enqueue(pa, now)
	}
	w.notices = nil
	if ef.expedite {
		for _, g := range w.groups {
			g.flushAt = now
		}
		w.nextFlush.Store(now.UnixNano())
	}
}

func (w *writer) enqueue(pa *pendingAlert, now time.Time) {
	p := pa.p
	key, labels := p.Group(pa.na.Labels)
	g := w.groups[key]
	if g == nil {
		g = &group{p: p, key: key, labels: labels, alerts: map[episodeKey]queuedAlert{}}
		w.groups[key] = g
	}
	if len(g.alerts) == 0 {
		g.flushAt = g.sendAt(now, w.e.groupWait(p), w.e.groupInterval(p))
		if at := g.flushAt.UnixNano(); at < w.nextFlush.Load() {
			w.nextFlush.Store(at)
		}
	}
	g.add(pa.fp, queuedAlert{na: pa.na, to: pa.to})
}

// add puts a into the group's last message that holds its alert (an episode of it), or
// the first message when none does; a resolution of a page not yet sent goes into the
// message after it.
func (g *group) add(fp uint64, a queuedAlert) {
	k := episodeKey{fp: fp, startsAt: a.na.StartsAt.UnixNano()}
	i := len(g.later) - 1
	for ; i >= 0 && !holds(g.later[i], fp); i-- {
	}
	m := g.alerts
	if i >= 0 {
		m = g.later[i]
	}
	if old, ok := m[k]; ok && old.na.Status == notify.StatusFiring && a.na.Status == notify.StatusResolved {
		if i+1 == len(g.later) {
			g.later = append(g.later, map[episodeKey]queuedAlert{})
		}
		m = g.later[i+1]
	}
	m[k] = a
}

// holds reports whether m has a notice of the alert fp, of any episode.
func holds(m map[episodeKey]queuedAlert, fp uint64) bool {
	for k := range m {
		if k.fp == fp {
			return true
		}
	}
	return false
}

// sent moves the group's next message up after one went out at now, and tells when it
// goes: group_interval after this one, or group_wait when that is 0.
func (g *group) sent(now time.Time, wait, interval time.Duration) {
	g.sentAt = now
	if len(g.later) == 0 {
		clear(g.alerts)
		return
	}
	g.alerts, g.later = g.later[0], g.later[1:]
	g.flushAt = g.sendAt(now, wait, interval)
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
		if now.Sub(g.flushAt) > lateFlush {
			w.fence(g)
		}
		// A group's next message goes at once when neither group_wait nor
		// group_interval holds it (group.sent).
		for len(g.alerts) > 0 && !now.Before(g.flushAt) {
			w.send(g, now)
		}
		if len(g.alerts) > 0 {
			next = min(next, g.flushAt.UnixNano())
		} else if w.e.groupInterval(g.p) <= 0 {
			delete(w.groups, g.key)
		}
	}
	w.nextFlush.Store(next)
}

// lateFlush is how late a group's message may go out before its pages are checked
// against the log first (fence): later, the process was paused (SIGSTOP, a frozen VM)
// and may have lost its alerts to another meanwhile.
const lateFlush = 5 * time.Second

// fence drops from the group's next message the pages whose claim the log no longer
// holds: decided before a pause, their alerts were taken over (the claim's process left
// the group) and paged, or resolved, by another process meanwhile. A page sent now
// would reach the receiver after the resolution, and leave it firing for ever (found
// from outside: 30 s of SIGSTOP). The alert's later notices in the group go with it.
// Without an answer from the log the page goes: a duplicate is better than silence.
func (w *writer) fence(g *group) {
	e := w.e
	for k, q := range g.alerts {
		if q.na.Status != notify.StatusFiring {
			continue
		}
		e.infMu.Lock()
		inf := e.paging[q.na.Fingerprint]
		e.infMu.Unlock()
		if inf == nil {
			continue
		}
		ctx, cancel := e.opContext()
		err := w.flushOwed(ctx, q.na.Fingerprint) // this process's own record of the claim first
		var le LogEntry
		if err == nil {
			le, _, err = e.o.Log.Get(ctx, q.na.Fingerprint)
		}
		cancel()
		if err != nil || le.firing() && le.QueuedAt.Equal(inf.at) {
			continue
		}
		if le.ResolveSent && le.ResolveQueuedAt.IsZero() && le.FiringSince.Equal(q.na.StartsAt) {
			// The process that took the alert over resolved this episode with nothing to
			// tell (no page of it was delivered): paged, then resolved, as an episode of a
			// backlog is, or it would be reported nowhere.
			if pa := e.resolvedNotice(le); pa != nil {
				pa.to = q.to
				g.add(k.fp, queuedAlert{na: pa.na, to: pa.to})
				e.log.Info("a page queued before this process was paused goes out with its resolution: the process that took the alert over resolved it meanwhile, unpaged",
					"fingerprint", q.na.Fingerprint, "node", q.na.Labels[policy.LabelNode], "queued_at", inf.at)
				continue
			}
		}
		e.log.Warn("a page queued before this process was paused is not sent: the notification log no longer holds its claim (another process took the alert over)",
			"fingerprint", q.na.Fingerprint, "node", q.na.Labels[policy.LabelNode], "queued_at", inf.at)
		delete(g.alerts, k)
		for _, m := range g.later { // its episode's later notices, and the next ones'
			maps.DeleteFunc(m, func(l episodeKey, _ queuedAlert) bool { return l.fp == k.fp && l.startsAt >= k.startsAt })
		}
		e.forgetPage(q.na.Fingerprint, inf.at)
	}
}

// send sends the group's first message on each of its channels, each with the alerts
// that go to it (a page's rest goes to the channels that missed it, a resolution to
// those that got a page).
func (w *writer) send(g *group, now time.Time) {
	queued := slices.Collect(maps.Values(g.alerts))
	sort.Slice(queued, func(i, j int) bool {
		a, b := queued[i].na, queued[j].na
		if a.Labels[policy.LabelNode] != b.Labels[policy.LabelNode] {
			return a.Labels[policy.LabelNode] < b.Labels[policy.LabelNode]
		}
		if a.Fingerprint != b.Fingerprint {
			return a.Fingerprint < b.Fingerprint
		}
		return a.StartsAt.Before(b.StartsAt) // an episode's resolution before the next one's page
	})
	g.sent(now, w.e.groupWait(g.p), w.e.groupInterval(g.p))
	for _, ch := range g.p.Channels {
		alerts := make([]notify.Alert, 0, len(queued))
		for _, q := range queued {
			if q.to == nil || slices.Contains(q.to, ch) {
				alerts = append(alerts, q.na)
			}
		}
		if len(alerts) == 0 {
			continue
		}
		w.e.o.Send(notify.Message{
			Receiver: ch, GroupKey: g.key, ExternalURL: w.e.o.ExternalURL, Alerts: alerts,
			GroupLabels: maps.Clone(g.labels),
		})
	}
}
