package alarm

import (
	"context"
	"errors"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord"
)

// resolution is an alert that stopped holding, for the writer to record in the log and,
// if the log agrees it is the one to tell, to announce.
type resolution struct {
	a     *alertState
	p     *policy.Policy
	at    time.Time // when it resolved
	ts    time.Time // the own time of the point that resolved it
	value float64
	// tell: no silence mutes it. pagedHere: this process paged it or adopted a page.
	tell, pagedHere bool
	na              notify.Alert // the resolved notice as this process renders it
}

// resolve moves the alert's log entry from firing to resolving and returns its resolved
// notice, or nil when there is nothing to tell: the log knows the episode resolved
// already (another process resolved it in the overlap of a rebalance, or this process
// resolved a stale copy of the log), or no page was ever sent for it. The notice is
// claimed in the entry (ResolveQueuedAt) before it is queued and acknowledged in it when
// delivered, so a crash or a stop in between leaves it for another process to send
// (sweep) rather than losing it.
func (e *Engine) resolve(r *resolution) *pendingAlert {
	fp := r.na.Fingerprint
	for range 3 {
		ctx, cancel := e.opContext()
		le, ver, err := e.o.Log.Get(ctx, fp)
		switch {
		case errors.Is(err, coord.ErrNotFound), err != nil:
			cancel()
			if err != nil && !errors.Is(err, coord.ErrNotFound) {
				e.logError(err, fp)
			}
			// Never logged (its claim could not be written), or collected long after it
			// resolved: a page this process sent still gets its resolution.
			if r.tell && r.pagedHere {
				return &pendingAlert{p: r.p, fp: r.a.fp, na: r.na}
			}
			return nil
		case !le.firing():
			cancel()
			return nil
		}
		told := r.tell && (le.Sent > 0 || !le.QueuedAt.IsZero())
		le.ResolvedAt, le.ResolvedTS, le.Value = r.at, r.ts, r.value
		if told {
			le.ResolveQueuedAt, le.ClaimedBy = e.now(), e.claimer()
		} else {
			le.ResolveSent = true // nothing to tell: a tombstone at once
		}
		err = e.o.Log.Put(ctx, le, ver)
		cancel()
		if errors.Is(err, coord.ErrVersionConflict) {
			continue // written meanwhile (a delivery record, another process): read it again
		}
		if err != nil {
			e.logError(err, fp)
		}
		if !told {
			return nil
		}
		e.infMu.Lock()
		e.telling[fp] = le.ResolvedAt
		e.infMu.Unlock()
		na := r.na
		na.StartsAt, na.EndsAt = le.FiringSince, le.ResolvedAt
		return &pendingAlert{p: r.p, fp: r.a.fp, na: na}
	}
	e.log.Warn("notification log: the entry kept changing; its resolution is left to the sweep", "fingerprint", fp)
	return nil
}

// resolveDone records a delivered resolved notice: its entry becomes a tombstone.
func (e *Engine) resolveDone(na notify.Alert) {
	e.infMu.Lock()
	if at, ok := e.telling[na.Fingerprint]; ok && at.Equal(na.EndsAt) {
		delete(e.telling, na.Fingerprint)
	}
	e.infMu.Unlock()
	ctx, cancel := e.opContext()
	defer cancel()
	le, ver, err := e.o.Log.Get(ctx, na.Fingerprint)
	if err != nil || !le.resolving() || !le.ResolvedAt.Equal(na.EndsAt) {
		return
	}
	le.ResolveSent = true
	if err := e.o.Log.Put(ctx, le, ver); err != nil && !errors.Is(err, coord.ErrVersionConflict) {
		e.logError(err, na.Fingerprint)
	}
}

// resolvedNotice renders the resolved notice of a logged episode, for a process that did
// not evaluate it; nil when its policy is gone from this process's file.
func (e *Engine) resolvedNotice(le LogEntry) *pendingAlert {
	p := e.byName[le.Policy]
	fp, ok := parseFP(le.Fingerprint)
	if p == nil || !ok {
		e.log.Warn("a logged resolution names a policy this alarm does not have; its notice cannot be sent",
			"policy", le.Policy, "fingerprint", le.Fingerprint)
		return nil
	}
	return &pendingAlert{p: p, fp: fp, na: notify.Alert{Status: notify.StatusResolved, Labels: le.Labels,
		Annotations: p.Render(templateData(p, le.Labels, le.Value, StateResolved)),
		StartsAt:    le.FiringSince, EndsAt: le.ResolvedAt, Value: le.Value, Fingerprint: le.Fingerprint}}
}

// sweep finishes what other processes left in the log: a resolved notice whose sender
// stopped or crashed before delivering it (its claim released, or its lease run out)
// is claimed and sent from here; tombstones older than ResolvedRetention are removed.
// Every change is a compare-and-set, so of several processes sweeping one acts.
func (e *Engine) sweep(ctx context.Context, entries []LogEntry) {
	now := e.now()
	var notices []*pendingAlert
	for _, le := range entries {
		switch {
		case le.resolving():
			p := e.byName[le.Policy]
			if p != nil && !le.ResolveQueuedAt.IsZero() && now.Sub(le.ResolveQueuedAt) < e.leaseOf(p) &&
				!e.claimerGone(le.ClaimedBy, le.ResolveQueuedAt) {
				continue // its sender has time left
			}
			if pa := e.takeResolution(ctx, le, now); pa != nil {
				notices = append(notices, pa)
			}
		case !le.firing() && now.Sub(le.ResolvedAt) >= e.o.ResolvedRetention:
			e.collect(ctx, le)
		}
	}
	if len(notices) > 0 {
		e.log.Info("sending resolved notices another alarm process left undelivered", "alerts", len(notices))
		e.w.submit(effects{notices: notices}, now)
	}
}

// takeResolution claims the resolved notice of a logged resolution whose sender is gone.
func (e *Engine) takeResolution(ctx context.Context, seen LogEntry, now time.Time) *pendingAlert {
	le, ver, err := e.o.Log.Get(ctx, seen.Fingerprint)
	if err != nil || !le.resolving() || !le.ResolveQueuedAt.Equal(seen.ResolveQueuedAt) {
		return nil // changed meanwhile: someone else took it
	}
	pa := e.resolvedNotice(le)
	if pa == nil {
		le.ResolveSent = true // nobody can route it: do not try forever
	} else {
		le.ResolveQueuedAt, le.ClaimedBy = now, e.claimer()
	}
	if err := e.o.Log.Put(ctx, le, ver); err != nil {
		if !errors.Is(err, coord.ErrVersionConflict) {
			e.logError(err, le.Fingerprint)
		}
		return nil
	}
	if pa != nil {
		e.infMu.Lock()
		e.telling[le.Fingerprint] = le.ResolvedAt
		e.infMu.Unlock()
	}
	return pa
}

// collect removes a tombstone that is still the one seen.
func (e *Engine) collect(ctx context.Context, seen LogEntry) {
	le, ver, err := e.o.Log.Get(ctx, seen.Fingerprint)
	if err != nil || le.firing() || le.resolving() || !le.ResolvedAt.Equal(seen.ResolvedAt) {
		return
	}
	if err := e.o.Log.Remove(ctx, le.Fingerprint, ver); err != nil && !errors.Is(err, coord.ErrVersionConflict) {
		e.logError(err, le.Fingerprint)
	}
}

// releaseInflight hands this process's undelivered notifications back to the log, for
// a stopping process: a page claimed and not delivered becomes due again for whoever
// evaluates the alert next, a resolved notice for whoever sweeps the log next, without
// waiting out their leases. It returns how many of each it released.
func (e *Engine) releaseInflight(ctx context.Context) (pages, resolutions int) {
	e.infMu.Lock()
	paging, telling := e.paging, e.telling
	e.paging, e.telling = map[string]time.Time{}, map[string]time.Time{}
	e.infMu.Unlock()
	for fp, at := range paging {
		le, ver, err := e.o.Log.Get(ctx, fp)
		if err != nil || !le.firing() || !le.pending() || !le.QueuedAt.Equal(at) {
			continue
		}
		le.QueuedAt = time.Time{}
		if e.o.Log.Put(ctx, le, ver) == nil {
			pages++
		}
	}
	for fp, at := range telling {
		le, ver, err := e.o.Log.Get(ctx, fp)
		if err != nil || !le.resolving() || !le.ResolvedAt.Equal(at) {
			continue
		}
		le.ResolveQueuedAt = time.Time{}
		if e.o.Log.Put(ctx, le, ver) == nil {
			resolutions++
		}
	}
	return pages, resolutions
}
