package alarm

import (
	"context"
	"errors"
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
	entry  LogEntry // QueuedAt is the claim's time
	repeat time.Duration
	lease  time.Duration
	// Outcome, set by the writer: queue it; or adopt the log's entry (another process
	// paged, or this one before a restart); or drop the alert (stale: a replay of points
	// the log's resolution already answered); or none of these (the log changed under
	// the claim: decide again at the next tick). resolveFirst is a resolved notice whose
	// sender is gone, due before this episode's page.
	queue        bool
	adopt        *LogEntry
	stale        *LogEntry
	resolveFirst *pendingAlert
}

// claim asks the shared log whether the page of c may go out, and records it as queued
// if so. Without an answer from the log it pages: a duplicate is better than silence.
func (e *Engine) claim(c *claim) {
	ctx, cancel := e.opContext()
	defer cancel()
	now := c.entry.QueuedAt
	le, ver, err := e.o.Log.Get(ctx, c.entry.Fingerprint)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		ver = coord.NoVersion
		c.entry.LastSent, c.entry.Sent = time.Time{}, 0 // Sent counts deliveries
	case err != nil:
		e.logError(err, c.entry.Fingerprint)
		c.queue = true
		return
	case le.firing():
		inFlight := le.pending() && now.Sub(le.QueuedAt) < c.lease && !e.claimerGone(le.ClaimedBy, le.QueuedAt)
		if inFlight || !le.pending() && !le.LastSent.IsZero() && now.Sub(le.LastSent) < c.repeat {
			c.adopt = &le
			return
		}
		// The logged episode goes on, whoever evaluated it before: keep its start.
		c.entry.ActiveSince, c.entry.FiringSince = le.ActiveSince, le.FiringSince
		c.entry.LastSent, c.entry.Sent = le.LastSent, le.Sent
	default: // the logged episode resolved
		if !c.entry.EvalTS.After(le.ResolvedTS) {
			c.stale = &le
			return
		}
		if le.resolving() {
			e.infMu.Lock()
			at, mine := e.telling[le.Fingerprint]
			mine = mine && at.Equal(le.ResolvedAt)
			if mine {
				// This process's own resolved notice, still in its group: the new
				// episode takes its place there, as the alert's latest state (a flap
				// within the group's wait is one firing notice, as in Alertmanager).
				delete(e.telling, le.Fingerprint)
			}
			e.infMu.Unlock()
			switch {
			case mine:
			case !le.ResolveQueuedAt.IsZero() && now.Sub(le.ResolveQueuedAt) < c.lease && !e.claimerGone(le.ClaimedBy, le.ResolveQueuedAt):
				return // another process's resolved notice is on its way: this page follows it
			default:
				c.resolveFirst = e.resolvedNotice(le) // its sender is gone
			}
		}
		c.entry.LastSent, c.entry.Sent = time.Time{}, 0 // a new episode
	}
	err = e.o.Log.Put(ctx, c.entry, ver)
	switch {
	case errors.Is(err, coord.ErrVersionConflict):
		c.resolveFirst = nil
		return // another process wrote it first: decide again next tick
	case err != nil:
		e.logError(err, c.entry.Fingerprint)
	}
	c.queue = true
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
		e.infMu.Lock()
		e.paging[a.fps] = c.entry.QueuedAt
		e.infMu.Unlock()
		na := e.notifyAlert(a, notify.StatusFiring)
		na.StartsAt = c.entry.FiringSince
		if current {
			a.activeSince, a.firingSince = c.entry.ActiveSince, c.entry.FiringSince
		}
		var out []*pendingAlert
		if c.resolveFirst != nil {
			out = append(out, c.resolveFirst)
		}
		return append(out, &pendingAlert{p: a.p, fp: a.fp, na: na})
	case !current:
		return nil // resolved or dropped meanwhile, and nothing was claimed
	case c.adopt != nil:
		a.adopt(*c.adopt, c.lease)
	case c.stale != nil:
		if a.nd != nil && c.stale.ResolvedTS.After(a.nd.lastTS) {
			// The log knows a later point of the node than this process read.
			a.nd.lastTS = c.stale.ResolvedTS
		}
		sh.drop(a)
	default:
		a.claimAt, a.lastSent, a.sent = time.Time{}, time.Time{}, a.sent-1
	}
	return nil
}

// adopt continues an alert another process (or this one before a restart) paged: no
// page before the repeat interval, or before that process's page in flight had time to
// be delivered.
func (a *alertState) adopt(le LogEntry, lease time.Duration) {
	a.claimAt = time.Time{}
	a.sent = max(le.Sent, 1)
	a.activeSince, a.firingSince = le.ActiveSince, le.FiringSince
	if le.pending() {
		a.lastSent, a.holdUntil, a.heldFor = time.Time{}, le.QueuedAt.Add(lease), le
		return
	}
	a.lastSent, a.holdUntil = le.LastSent, time.Time{}
}

// Delivered reports the outcome of a notification given to Send. A firing page
// delivered to a channel is recorded in the log as sent (the first channel counts); a
// failed one stays pending, so it is resent after its lease. A delivered resolved notice
// turns its entry into a tombstone; a failed one stays resolving, resent after its
// lease by whichever process sweeps the log first. The record does not depend on the
// alert still being evaluated here: its partition may have moved meanwhile.
func (e *Engine) Delivered(m notify.Message, err error) {
	now := e.now()
	for _, na := range m.Alerts {
		fp, ok := parseFP(na.Fingerprint)
		if !ok {
			continue
		}
		if na.Status == notify.StatusFiring {
			e.pageDone(fp, na, err, now)
		} else if err == nil {
			e.resolveDone(na)
		}
	}
}

func (e *Engine) pageDone(fp uint64, na notify.Alert, err error, now time.Time) {
	e.infMu.Lock()
	at, mine := e.paging[na.Fingerprint]
	if mine && err == nil {
		delete(e.paging, na.Fingerprint)
	}
	e.infMu.Unlock()
	sh := e.shardOf(na.Labels[policy.LabelNode])
	sh.mu.Lock()
	if a := sh.alerts[fp]; a != nil && mine && a.claimAt.Equal(at) {
		if err == nil {
			a.claimAt, a.lastSent = time.Time{}, now
		} else {
			a.holdUntil = a.claimAt.Add(e.lease(a))
			a.claimAt, a.lastSent = time.Time{}, time.Time{}
		}
	}
	sh.mu.Unlock()
	if !mine || err != nil {
		return
	}
	ctx, cancel := e.opContext()
	defer cancel()
	le, ver, gerr := e.o.Log.Get(ctx, na.Fingerprint)
	if gerr == nil && le.QueuedAt.Equal(at) && le.pending() {
		le.LastSent, le.Sent = now, le.Sent+1
		if perr := e.o.Log.Put(ctx, le, ver); perr != nil && !errors.Is(perr, coord.ErrVersionConflict) {
			e.logError(perr, na.Fingerprint)
		}
	}
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
