package alarm

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord"
)

// claim is a page due: it is queued only if the shared notification log agrees that no
// process paged the alert within its repeat interval, none has a page in flight, and
// the points behind it are newer than the episode's resolution the log holds.
type claim struct {
	a      *alertState
	entry  LogEntry // QueuedAt is the claim's time; Owed the channels it pages
	repeat time.Duration
	lease  time.Duration
	// na is the page as the evaluation that claimed it saw the alert: the writer may get
	// to the claim after later points changed the alert (a backlog is evaluated ahead of
	// the log writes), and the page says what fired it, not what resolved it since.
	na notify.Alert
	// Outcome, set by the writer: queue it; or adopt the log's entry (another process
	// paged, or this one before a restart); or drop the alert (stale: a replay of points
	// the log's resolution already answered); or none of these (the log changed under
	// the claim: decide again at the next tick). resolveFirst is a resolved notice whose
	// sender is gone (after the page of its channels that never had one), due before
	// this episode's page. partial: the page reached some channels before (its process
	// stopped or crashed while the others retried); it goes to the rest (entry.Owed) and
	// does not count as another notification.
	queue        bool
	adopt        *LogEntry
	stale        *LogEntry
	resolveFirst []*pendingAlert
	partial      bool
	// held: the log holds the last episode's resolved notice on its way from another
	// process, which this page follows (decided again at the next tick). priorHere:
	// this process's own is on its way, kept as the entry's Prior; priorSent: it goes
	// again from here (resolveFirst), kept as the entry's Prior.
	held, priorHere, priorSent bool
	// priorsOut: the resolved notices of earlier episodes (the entry's Priors whose
	// sender is gone) that go from here before this page (in resolveFirst), recorded as
	// on their way once the claim is written.
	priorsOut []*pendingAlert
	// nodata: the claim is a nodata alert's, whose evidence is the node's last point
	// (see answered).
	nodata bool
}

// answered reports whether the resolution the log holds (le) already answered a claim
// whose decision rested on points up to evalTS: a replay. For a series that is a claim
// resting on no newer point than the resolution's. A nodata alert's evidence is the
// node's last point, which is the very point that resolved the previous episode when
// the node falls silent again right after it (one batch back): that silence is a new
// episode, and only a claim resting on an older point is a replay.
func answered(evalTS time.Time, le LogEntry, nodata bool) bool {
	if nodata {
		return evalTS.Before(le.ResolvedTS)
	}
	return !evalTS.After(le.ResolvedTS)
}

// claim asks the shared log whether the page of c may go out, and records it as queued
// if so. Without an answer from the log it pages: a duplicate is better than silence;
// the claim is then written once the log answers again (writer.owe).
func (e *Engine) claim(c *claim) {
	ctx, cancel := e.opContext()
	defer cancel()
	now := c.entry.QueuedAt
	fp := c.entry.Fingerprint
	if e.w.down() {
		c.queue = true
		e.w.owe(fp, e.recordClaim(c.entry, c.nodata), errLogDown)
		return
	}
	if err := e.w.flushOwed(ctx, fp); err != nil {
		// This process's earlier writes of the alert are not in the log yet: it cannot
		// tell, and pages.
		c.queue = true
		e.w.owe(fp, e.recordClaim(c.entry, c.nodata), err)
		return
	}
	le, ver, err := e.o.Log.Get(ctx, fp)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		ver = coord.NoVersion
		c.entry.LastSent, c.entry.Sent = time.Time{}, 0 // Sent counts deliveries
	case err != nil:
		c.queue = true
		e.w.owe(fp, e.recordClaim(c.entry, c.nodata), err)
		return
	case le.firing():
		c.entry.Prior = le.Prior // still owed: it goes before this episode's resolution
		// Another live process's claim is in flight however long its channel's queue
		// holds it (a slow receiver's backlog outlasts the lease): it delivers it, or
		// hands it back (claimerAlive). Outside trials, with a 4 s receiver 45 s behind:
		// every page claimed before a graceful stop, or before a rebalance moved the
		// partition, was paged again by the next owner.
		inFlight := le.pending() && (now.Sub(le.QueuedAt) < c.lease || e.claimerAlive(le.ClaimedBy)) &&
			!e.claimerGone(le.ClaimedBy, le.QueuedAt) && !e.gaveUp(fp, le.QueuedAt)
		recent := !le.LastSent.IsZero() && now.Sub(le.LastSent) < c.repeat
		added := le.addedChannels(c.a.p.Channels)
		if inFlight || !le.owes() && recent && len(added) == 0 {
			c.adopt = &le
			return
		}
		// The logged episode goes on, whoever evaluated it before: keep its start.
		c.entry.ActiveSince, c.entry.FiringSince = le.ActiveSince, le.FiringSince
		if !le.pending() && e.heldBehindPrior(c, le, now) {
			// This page follows it (see the resolved case below). The episode was
			// logged while it waited (holdInLog), by whichever process evaluated it.
			return
		}
		// Earlier resolutions still owed whose sender is gone go first.
		c.resolveFirst, c.priorsOut = e.duePriors(le)
		c.entry.LastSent, c.entry.Sent = le.LastSent, le.Sent
		if le.Sent > 0 || !le.LastSent.IsZero() {
			c.entry.Untold = slices.Concat(le.Untold, added)
		}
		owed := le.owedOf(c.a.p.Channels)
		if len(le.Owed) == 0 {
			owed = nil // no per-channel record: every channel is owed, or none
		}
		if owed = append(owed, added...); recent && len(owed) > 0 {
			// A page that reached some channels, and whose claim ended (handed back by
			// a stop, or its process crashed) before the others delivered, or channels
			// the policy gained since the page (a restart with a new file): the rest.
			c.entry.Owed, c.partial = owed, true
		}
	default: // the logged episode resolved
		if answered(c.entry.EvalTS, le, c.nodata) {
			c.stale = &le
			return
		}
		startAfter(&c.entry, le)
		c.entry.Prior = le.Prior // still owed: it goes before this episode's resolution
		if !le.resolving() && e.heldBehindPrior(c, le, now) {
			// A Prior kept by the last episode (resolveHeld): as below.
			e.holdInLog(ctx, c, le, ver)
			return
		}
		if le.resolving() {
			e.infMu.Lock()
			inf, mine := e.telling[le.Fingerprint]
			mine = mine && inf.at.Equal(le.ResolvedAt)
			onItsWay := mine && !inf.failed && len(inf.left) > 0
			gaveUp := mine && inf.failed
			if gaveUp {
				delete(e.telling, le.Fingerprint)
			}
			e.infMu.Unlock()
			switch {
			case onItsWay:
				// This process's own resolved notice, still on its way on some channels
				// (in its group, or a slow receiver's queue): this page follows it there,
				// and the entry keeps it as its Prior until every channel had it. Held
				// for it, or past the lease taken for lost and sent again with its page,
				// it was late or twice; forgotten with the entry, a stop or a failure
				// left it undelivered (outside trials).
				if p := priorOf(le, c.a.p.Channels, e.claimer()); p != nil {
					c.entry.Prior, c.priorHere = e.withPrior(fp, p, le.Prior), true
				}
			case gaveUp:
				// Its own resolved notice that a channel gave up (the receiver down): it
				// goes again before this page, to the channels still owed it. Taken for
				// one still in its group, it was dropped, and the episode the receiver
				// was paged for never ended there (an outside trial). The entry keeps it
				// as its Prior until every channel had it.
				c.resolveFirst = e.resolvedNotices(le)
				c.entry.Prior, c.priorSent = e.withPrior(fp, priorOf(le, c.a.p.Channels, e.claimer()), le.Prior), true
			case !le.ResolveQueuedAt.IsZero() && (now.Sub(le.ResolveQueuedAt) < c.lease || e.claimerAlive(le.ClaimedBy)) &&
				!e.claimerGone(le.ClaimedBy, le.ResolveQueuedAt):
				// Another process's resolved notice is on its way: this page follows it
				// (sent first, a late resolution of the last episode closed this one at
				// receivers that key incidents on the fingerprint, as Alertmanager does).
				// An episode that ends meanwhile is paged and resolved then (resolve).
				e.debug("page held: the last episode's resolved notice is on its way from another process", le.Fingerprint,
					"claimed_by", le.ClaimedBy, "ends_at", le.ResolvedAt)
				c.held = true
				e.holdInLog(ctx, c, le, ver)
				return
			default:
				c.resolveFirst = e.resolvedNotices(le) // its sender is gone
				c.entry.Prior, c.priorSent = e.withPrior(fp, priorOf(le, c.a.p.Channels, e.claimer()), le.Prior), true
			}
		}
		c.entry.LastSent, c.entry.Sent = time.Time{}, 0 // a new episode
	}
	err = e.o.Log.Put(ctx, c.entry, ver)
	switch {
	case errors.Is(err, coord.ErrVersionConflict):
		c.resolveFirst, c.priorsOut = nil, nil
		return // another process wrote it first: decide again next tick
	case err != nil:
		e.w.owe(fp, e.recordClaim(c.entry, c.nodata), err)
	}
	e.infMu.Lock()
	switch {
	case c.priorHere:
		if inf := e.telling[fp]; inf != nil && inf.at.Equal(c.entry.Prior.ResolvedAt) {
			delete(e.telling, fp)
			e.tellingPrior[priorKeyOf(fp, inf.at)] = inf
		}
	case c.priorSent && c.entry.Prior != nil && len(c.resolveFirst) > 0:
		pa := c.resolveFirst[len(c.resolveFirst)-1]
		e.tellingPrior[priorKeyOf(fp, pa.na.EndsAt)] = &inflight{at: pa.na.EndsAt, left: slices.Clone(pa.to)}
	}
	e.infMu.Unlock()
	e.tellPriors(fp, c.priorsOut)
	c.queue = true
}

// holdInLog writes the episode of a claim held behind the last episode's resolved
// notice (le, at version ver; another live process has it on its way) into the log,
// unclaimed, that notice kept as its Prior: whichever process evaluates the alert next
// (after a rebalance, a stop or a crash) continues the episode from its start and holds
// its page the same way (priorOnItsWay). Held in memory alone, the next owner started it
// at its own first point (an outside trial: 10 of 272 episodes with a later start). A
// failed write leaves the hold in memory, as before (resolveHeld).
func (e *Engine) holdInLog(ctx context.Context, c *claim, le LogEntry, ver int64) {
	he := c.entry
	he.Prior = le.Prior
	if le.resolving() {
		he.Prior = e.withPrior(he.Fingerprint, priorOf(le, c.a.p.Channels, le.ClaimedBy), le.Prior)
	}
	he.QueuedAt, he.ClaimedBy, he.PagedBy, he.LastSent, he.Sent = time.Time{}, "", "", time.Time{}, 0
	if err := e.o.Log.Put(ctx, he, ver); err != nil && !errors.Is(err, coord.ErrVersionConflict) {
		e.logError(err, he.Fingerprint)
	}
}

// heldBehindPrior holds claim c (c.held) when an earlier episode's resolved notice, a
// Prior of le, is on its way from another live process (priorOnItsWay).
func (e *Engine) heldBehindPrior(c *claim, le LogEntry, now time.Time) bool {
	p := e.priorOnItsWay(le, c.a.p.Channels, now, c.lease)
	if p == nil {
		return false
	}
	e.debug("page held: an earlier episode's resolved notice is on its way from another process", le.Fingerprint,
		"by", p.By, "ends_at", p.ResolvedAt)
	c.held = true
	return true
}

// priorOnItsWay is a Prior of le (an earlier episode's resolution) still owed to one of
// chans whose notice another process has on its way: that process lives (or its lease
// runs), and a page sent now could reach a receiver before it, whose late resolution
// would then close the new incident at receivers that key incidents on the fingerprint.
func (e *Engine) priorOnItsWay(le LogEntry, chans []string, now time.Time, lease time.Duration) *PriorResolution {
	self := e.claimer()
	for _, p := range le.priors() {
		if p.By == "" || p.By == self || !slices.ContainsFunc(p.Owed, func(c string) bool { return slices.Contains(chans, c) }) {
			continue
		}
		if (now.Sub(p.QueuedAt) < lease || e.claimerAlive(p.By)) && !e.claimerGone(p.By, p.QueuedAt) {
			return p
		}
	}
	return nil
}

// recordClaim writes a claim this process paged without the log's answer, once the log
// answers: onto the episode the log holds firing (unless a later claim is there), or as
// a new episode after the one the log holds resolved, unless that resolution rested on
// newer points than the page (it answered a replay).
func (e *Engine) recordClaim(ce LogEntry, nodata bool) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		return nil, e.update(ctx, ce.Fingerprint, func(le *LogEntry, found bool) bool {
			ce := ce
			ce.LastSent, ce.Sent = time.Time{}, 0 // the deliveries' records follow
			switch {
			case !found:
			case le.firing():
				if !le.QueuedAt.Before(ce.QueuedAt) {
					return false // this claim is there already, or a later one
				}
				ce.Prior = le.Prior
				ce.ActiveSince, ce.FiringSince = le.ActiveSince, le.FiringSince
				ce.LastSent, ce.Sent = le.LastSent, le.Sent
				if le.Sent > 0 || !le.LastSent.IsZero() {
					ce.Untold = slices.DeleteFunc(slices.Clone(ce.Untold), func(c string) bool { return !slices.Contains(le.Untold, c) })
				}
			case answered(ce.EvalTS, *le, nodata):
				return false
			default:
				startAfter(&ce, *le)
			}
			*le = ce
			return true
		})
	}
}

// settle applies a claim's outcome to its alert and returns the notifications to
// queue. A claim in the log is paged even if its alert resolved or moved away
// meanwhile: the page is owed (its resolution, or the new owner, follows it).
func (e *Engine) settle(c *claim) []*pendingAlert {
	a := c.a
	sh := a.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	current := sh.alerts[a.fp] == a && a.claimAt.Equal(c.entry.QueuedAt)
	switch {
	case c.queue:
		inf := &inflight{at: c.entry.QueuedAt, startsAt: c.entry.FiringSince, left: slices.Clone(c.entry.Owed), count: !c.partial}
		e.infMu.Lock()
		if prev := e.paging[a.fps]; prev != nil {
			inf.reached = prev.reached // the episode's earlier pages
		}
		e.paging[a.fps] = inf
		e.infMu.Unlock()
		na := c.na
		if na.Status == "" {
			na = e.notifyAlert(a, notify.StatusFiring)
		}
		na.StartsAt = c.entry.FiringSince
		if current {
			a.activeSince, a.firingSince = c.entry.ActiveSince, c.entry.FiringSince
			if c.partial {
				a.sent = max(c.entry.Sent, 1) // the rest of a page, not another one
			}
		}
		a.heldBehind = false
		out := slices.Clone(c.resolveFirst)
		e.debug("page claimed", a.fps, "node", na.Labels[policy.LabelNode], "starts_at", na.StartsAt, "to", c.entry.Owed,
			"partial", c.partial, "resolution_first", len(c.resolveFirst) > 0)
		return append(out, &pendingAlert{p: a.p, fp: a.fp, na: na, to: c.entry.Owed})
	case !current:
		return nil // resolved or dropped meanwhile, and nothing was claimed
	case c.adopt != nil:
		a.heldBehind = false
		e.debug("page adopted", a.fps, "starts_at", c.adopt.FiringSince, "claimed_by", c.adopt.ClaimedBy,
			"queued_at", c.adopt.QueuedAt, "owed", c.adopt.Owed)
		a.adopt(*c.adopt, c.lease)
	case c.stale != nil:
		e.debug("a replayed episode the log resolved already: dropped", a.fps, "resolved_ts", c.stale.ResolvedTS)
		if a.nd != nil && c.stale.ResolvedTS.After(a.nd.lastTS) {
			// The log knows a later point of the node than this process read.
			a.nd.lastTS = c.stale.ResolvedTS
		}
		sh.drop(a)
	default:
		a.claimAt, a.lastSent, a.sent = time.Time{}, time.Time{}, a.sent-1
		a.heldBehind = c.held
		if c.held {
			a.activeSince, a.firingSince = c.entry.ActiveSince, c.entry.FiringSince // startAfter
		}
	}
	return nil
}

// startAfter starts a claim's episode (ce) after the end of the last one, which the log
// holds resolved (le): an alert this process saw firing through that resolution (it took
// the last episode over from the log, or kept it from before its partition moved away
// and back, and its points never showed the gap another process resolved it on) is, by
// the log, a new episode. Paged with the last one's start, it came after that episode's
// resolution as a second page of an ended incident, and the new one went untold (an
// outside trial). It starts at the claim's evidence, a point that shows it firing after
// that end (the first such point, when the claim follows it at once, as it does).
func startAfter(ce *LogEntry, le LogEntry) {
	if !ce.FiringSince.Before(le.ResolvedAt) {
		return
	}
	start := ce.EvalTS
	if start.Before(le.ResolvedAt) {
		start = le.ResolvedAt
	}
	ce.FiringSince = start
	if ce.ActiveSince.Before(start) {
		ce.ActiveSince = start
	}
}

// adopt continues an alert another process (or this one before a restart) paged: no
// page before the repeat interval, or before that process's page in flight had time to
// be delivered.
func (a *alertState) adopt(le LogEntry, lease time.Duration) {
	a.claimAt = time.Time{}
	a.activeSince, a.firingSince = le.ActiveSince, le.FiringSince
	if le.pending() {
		// Another process's page on its way: counted once delivered (the log's Sent,
		// which the next claim reads), and owed until then, so that max_notifications
		// does not hold back its resend should its process die before delivering it.
		a.sent, a.owed = le.Sent, true
		a.lastSent, a.holdUntil, a.heldFor = time.Time{}, le.QueuedAt.Add(lease), le
		return
	}
	a.sent, a.owed = max(le.Sent, 1), false
	a.lastSent, a.holdUntil = le.LastSent, time.Time{}
}

// inflight is a notification this process queued, page or resolved notice, and what
// its channels made of it so far.
type inflight struct {
	at        time.Time // the page's claim, or the resolution
	startsAt  time.Time // the episode's start (the notice's StartsAt)
	left      []string  // the channels it went to that have not answered
	reached   []string  // pages: the channels that got a page of the episode from here
	delivered bool      // a channel delivered it
	failed    bool      // a channel gave it up
	count     bool      // pages: its first delivery counts as a notification (LogEntry.Sent)
	// Resolved notices: the episode's page from here still on its way when it resolved
	// (its claim, and the channels it had not answered on), and the channels that gave
	// that page up. The resolution follows the page on each channel's queue; where the
	// page was given up it is withheld (Prepare).
	pageAt     time.Time
	pageLeft   []string
	pageFailed []string
}

// Delivered reports the outcome of a notification given to Send, one channel's message.
// Each channel's delivery is recorded in the log: a page's channel leaves the entry's
// Owed and Untold (the first delivery counts the page as sent), a resolved notice's
// leaves ResolveOwed, and the entry becomes a tombstone once every channel got it. A
// channel that failed stays owed: a page is resent to it after its lease, a resolved
// notice by whichever process sweeps the log first. The record does not depend on the
// alert still being evaluated here: its partition may have moved meanwhile. The writes
// run on the engine's writer, after the claim they record.
func (e *Engine) Delivered(m notify.Message, err error) {
	now := e.now()
	var writes []keyedWrite
	for _, na := range m.Alerts {
		fp, ok := parseFP(na.Fingerprint)
		if !ok {
			continue
		}
		e.debug("notification outcome", na.Fingerprint, "channel", m.Receiver, "status", na.Status, "starts_at", na.StartsAt, "err", err)
		var w logWrite
		if na.Status == notify.StatusFiring {
			w = e.pageDone(fp, m.Receiver, na, err, now)
		} else {
			w = e.resolveDone(m.Receiver, na, err)
		}
		if w != nil {
			writes = append(writes, keyedWrite{fp: na.Fingerprint, w: w})
		}
	}
	if len(writes) > 0 {
		e.w.submit(effects{writes: writes}, now)
	}
}

func (e *Engine) pageDone(fp uint64, ch string, na notify.Alert, err error, now time.Time) logWrite {
	e.infMu.Lock()
	inf := e.paging[na.Fingerprint]
	// The page of this episode: an earlier episode's, delivered late (a slow receiver's
	// queue) after the next one's claim, was taken for the next one's, which the log then
	// held delivered; the next process resolved it without its page (an outside trial).
	mine := inf != nil && inf.startsAt.Equal(na.StartsAt) && slices.Contains(inf.left, ch)
	var (
		at                                  time.Time
		count, settled, failed, undelivered bool
	)
	if mine {
		at = inf.at
		inf.left = without(inf.left, ch)
		if err == nil {
			count = inf.count && !inf.delivered
			inf.delivered = true
			if !slices.Contains(inf.reached, ch) {
				inf.reached = append(inf.reached, ch)
			}
		} else {
			inf.failed = true
		}
		settled, failed = len(inf.left) == 0, inf.failed
		undelivered = inf.count && !inf.delivered
	}
	e.infMu.Unlock()
	if !mine {
		return e.resolvedPageDone(na.Fingerprint, na, ch, err, now)
	}
	var handBack bool
	if settled {
		sh := e.shardOf(na.Labels[policy.LabelNode])
		sh.mu.Lock()
		if sh.alerts[fp] == nil {
			// Its alert moved away meanwhile: forgotten here; given up, the claim is
			// handed back for the alert's owner, which leaves a live process's claim
			// alone (claimerAlive).
			e.forgetPage(na.Fingerprint, at)
			handBack = failed
		}
		if a := sh.alerts[fp]; a != nil && a.claimAt.Equal(at) {
			a.claimAt = time.Time{}
			if failed {
				// What a channel gave up is sent again, to the channels still owed it
				// when others delivered (see claim): by this process after failedPageRetry
				// (its claim is its own: gaveUp), by another after the claim's lease.
				// Waiting out the lease (2 minutes by default) left an episode shorter than
				// that unpaged once the receiver was back.
				a.holdUntil, a.lastSent, a.owed = minTime(at.Add(e.lease(a)), now.Add(failedPageRetry)), time.Time{}, true
				if undelivered && a.sent > 0 {
					a.sent-- // no channel had it: it was no notification
				}
			} else {
				a.lastSent = now
			}
		}
		sh.mu.Unlock()
	}
	if handBack {
		return e.handBack(na.Fingerprint, at)
	}
	if err != nil {
		return nil
	}
	return e.recordDelivery(na.Fingerprint, at, ch, count, now)
}

// handBack hands the page claimed at at back to the log (queued_at cleared) when the log
// still holds that claim undelivered, so that the process evaluating the alert sends it:
// as at a stop (releaseInflight), for a page given up here after the alert moved away.
// An episode resolved meanwhile is handed back too: its resolution pages the channels
// still owed first (afterDrain, sweep). It reports whether it did.
func (e *Engine) handBack(fp string, at time.Time) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		released := false
		err := e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			released = found && le.pending() && le.QueuedAt.Equal(at)
			if released {
				le.QueuedAt = time.Time{}
			}
			return released
		})
		if err == nil && released {
			e.debug("page handed back", fp, "queued_at", at)
		}
		return nil, err
	}
}

// resolvedPageDone takes a channel's outcome of a page whose episode resolved here while
// the page was on its way (telling1): a delivery is recorded in the log as any page's
// (a later sweep must not page it again), a failure withholds the resolution from that
// channel.
func (e *Engine) resolvedPageDone(fp string, na notify.Alert, ch string, err error, now time.Time) logWrite {
	e.infMu.Lock()
	inf := e.telling[fp]
	if inf == nil || !inf.startsAt.Equal(na.StartsAt) {
		inf = nil
		for k, p := range e.tellingPrior { // the next episode claimed meanwhile: a Prior of the entry
			if k.fp == fp && p.startsAt.Equal(na.StartsAt) {
				inf = p
			}
		}
	}
	if inf == nil || !inf.startsAt.Equal(na.StartsAt) || !slices.Contains(inf.pageLeft, ch) {
		e.infMu.Unlock()
		if err != nil {
			return nil
		}
		return e.recordPageOf(fp, na.StartsAt, ch, now)
	}
	inf.pageLeft = without(inf.pageLeft, ch)
	if err != nil {
		inf.pageFailed = append(inf.pageFailed, ch)
	}
	at := inf.pageAt
	e.infMu.Unlock()
	if err != nil {
		return nil
	}
	return e.recordDelivery(fp, at, ch, false, now)
}

// recordPageOf records in the log that channel ch delivered a page of the resolved
// episode that started at startsAt, which this process sent for another's claim, before
// the episode's resolved notice (pagedFirst: the channels no page of it reached, the
// claim handed back or its process gone): the entry's, while resolving, or one of its
// Priors. Unrecorded, the next process to send that resolution paged the channel again,
// after the resolution it had had (an outside trial: 5 episodes after a kill -9).
func (e *Engine) recordPageOf(fp string, startsAt time.Time, ch string, now time.Time) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		return nil, e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			switch {
			case !found:
				return false
			case le.resolving() && le.FiringSince.Equal(startsAt):
				le.Owed, le.Untold = without(le.Owed, ch), without(le.Untold, ch)
				if le.LastSent.Before(now) {
					le.LastSent = now
				}
				return true
			}
			for p := le.Prior; p != nil; p = p.Before {
				if p.FiringSince.Equal(startsAt) && slices.Contains(p.Unpaged, ch) {
					p.Unpaged = without(p.Unpaged, ch)
					return true
				}
			}
			return false
		})
	}
}

// failedPageRetry is how long after its channels gave a page up (each after its own
// attempts) this process claims it again while the alert fires.
const failedPageRetry = 10 * time.Second

// gaveUp reports whether the claim made at at is this process's page and every channel
// it went to has answered, one of them giving it up: no page of that claim is on its
// way, and this process may claim it again before the claim's lease ends.
func (e *Engine) gaveUp(fp string, at time.Time) bool {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	inf := e.paging[fp]
	return inf != nil && inf.at.Equal(at) && inf.failed && len(inf.left) == 0
}

// forgetPage forgets this process's page of an alert claimed at at.
func (e *Engine) forgetPage(fp string, at time.Time) {
	e.infMu.Lock()
	if inf := e.paging[fp]; inf != nil && inf.at.Equal(at) {
		delete(e.paging, fp)
	}
	e.infMu.Unlock()
}

// recordDelivery records in the log that channel ch delivered the page claimed at at.
func (e *Engine) recordDelivery(fp string, at time.Time, ch string, count bool, now time.Time) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		return nil, e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			if found && !le.QueuedAt.Equal(at) {
				for p := le.Prior; p != nil; p = p.Before {
					if p.PageAt.Equal(at) {
						// An earlier episode's page, delivered after a later one's claim:
						// its channel had it (a Prior sent again does not page it twice).
						p.Unpaged = without(p.Unpaged, ch)
						return true
					}
				}
			}
			if !found || !le.QueuedAt.Equal(at) {
				return false
			}
			le.Owed, le.Untold = without(le.Owed, ch), without(le.Untold, ch)
			if le.LastSent.Before(now) {
				le.LastSent = now
			}
			if count {
				le.Sent++
			}
			return true
		})
	}
}

// without returns list without s (a new slice; nil when nothing is left).
func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func (e *Engine) lease(a *alertState) time.Duration { return e.leaseOf(a.p) }

// leaseOf is how long a notification claimed by one process is left to it: as long as
// it may wait in its group (group_wait, or up to group_interval after the group's last
// message; group.go) plus the delivery timeout. After that it is taken for lost (the
// process crashed) and another sends it.
func (e *Engine) leaseOf(p *policy.Policy) time.Duration {
	return max(e.groupWait(p), e.groupInterval(p)) + e.o.DeliveryTimeout
}

func (e *Engine) logError(err error, fp string) {
	if e.o.OnLogError != nil {
		e.o.OnLogError()
	}
	e.log.Warn("notification log write failed", "err", err, "fingerprint", fp)
}

// opContext bounds one notification log operation: 10 s, less when a stop runs out of
// time (see Engine.Stop).
func (e *Engine) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(e.opsCtx, 10*time.Second)
}

// debug logs a decision about the notifications of the alert fp at debug level (what
// an operator reads to follow one alert across processes); nothing is built otherwise.
func (e *Engine) debug(msg, fp string, args ...any) {
	if !e.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	e.log.Debug(msg, append([]any{"fingerprint", fp}, args...)...)
}
