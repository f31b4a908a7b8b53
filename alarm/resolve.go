package alarm

import (
	"context"
	"errors"
	"slices"
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
	// pagedHere: this process paged it or adopted a page.
	pagedHere bool
	na        notify.Alert // the resolved notice as this process renders it
	// entry is the alert's episode as this process knows it, for a log that never
	// recorded it (its claim's write failed).
	entry LogEntry
	// held: the episode's page was held behind the last episode's resolved notice,
	// another process's, on its way (claim), and was never claimed.
	held bool
	// first, set by resolve, is what goes before the resolved notice: the episode's page
	// to the channels another process's claim still owed (resolutionTo), or, for a held
	// episode, the last episode's resolved notice taken over and this one's page.
	first []*pendingAlert
}

// resolve moves the alert's log entry from firing to resolving and returns its resolved
// notice, or nil when there is nothing to tell: the log knows the episode resolved
// already (another process resolved it in the overlap of a rebalance, or this process
// resolved a stale copy of the log), or no page of it reached any channel. The notice
// goes to the channels a page reached, or is on its way to (a receiver never gets a
// resolution for a page it did not get). It is claimed in the entry (ResolveQueuedAt,
// ResolveOwed) before it is queued and acknowledged in it channel by channel as they
// deliver, so a crash or a stop in between leaves it for another process to send
// (sweep) rather than losing it. Without an answer from the log, a page this process sent
// still gets its resolution, and the log is told once it answers (writer.owe).
func (e *Engine) resolve(r *resolution) *pendingAlert {
	fp := r.na.Fingerprint
	ctx, cancel := e.opContext()
	defer cancel()
	if e.w.down() {
		return e.resolveUnanswered(ctx, r, errLogDown)
	}
	if err := e.w.flushOwed(ctx, fp); err != nil {
		return e.resolveUnanswered(ctx, r, err)
	}
	for range 3 {
		le, ver, err := e.o.Log.Get(ctx, fp)
		switch {
		case errors.Is(err, coord.ErrNotFound):
			// Never logged, or collected long after it resolved: a page this process
			// sent still gets its resolution.
			return e.resolveUnlogged(ctx, r, coord.NoVersion, nil)
		case err != nil:
			return e.resolveUnanswered(ctx, r, err)
		case !le.firing() && le.ResolvedAt.Before(r.entry.FiringSince) && e.paged(fp):
			// The log holds an earlier episode's resolution, and this process paged
			// this one: that claim never reached the log. Episodes are compared on their
			// own times (the page's claim is on the engine's clock): another process
			// that resolved this episode reading a backlog dates it before this page.
			return e.resolveUnlogged(ctx, r, ver, nil)
		case !le.firing() && r.held && !le.ResolvedAt.After(r.entry.FiringSince):
			pa, err := e.resolveHeld(ctx, r, le, ver)
			if errors.Is(err, coord.ErrVersionConflict) {
				continue
			}
			return pa
		case !le.firing():
			return nil
		}
		to, unpaged, awaited := e.resolutionTo(le, r.p)
		aw := awaitedPage{by: le.ClaimedBy, claimAt: le.QueuedAt, chans: awaited} // before the entry names this process
		told := len(to) > 0
		page := e.unpagedNotice(le, r.p, unpaged) // before the entry takes the resolution
		first, priorsOut := e.duePriors(le)       // as read, each named as on its way from here
		le.ResolvedAt, le.ResolvedTS, le.Value = r.at, r.ts, r.value
		if told {
			le.ResolveQueuedAt, le.ClaimedBy, le.ResolveOwed = e.now(), e.claimer(), to
		} else {
			le.ResolveSent = true // nothing to tell: a tombstone at once
		}
		err = e.o.Log.Put(ctx, le, ver)
		if errors.Is(err, coord.ErrVersionConflict) {
			continue // written meanwhile (a delivery record, another process): read it again
		}
		if err != nil {
			e.w.owe(fp, e.recordResolve(le, r.p, to), err)
		}
		e.tellPriors(fp, priorsOut)
		r.first = first
		if page != nil {
			r.first = append(r.first, page)
		}
		e.debug("resolved", fp, "starts_at", le.FiringSince, "ends_at", le.ResolvedAt, "to", to, "paged_first", unpaged,
			"awaited", awaited, "page_claimed_by", aw.by)
		return e.telling1(r, le, told, to, aw)
	}
	e.log.Warn("notification log: the entry kept changing; its resolution is left to the sweep", "fingerprint", fp)
	return nil
}

// resolveHeld pages and resolves an episode whose page was held behind the last
// episode's resolved notice (another process's, on its way: claim) and that ended before
// it could be claimed: its page never went out, and an episode shorter than the hold was
// never told (an outside trial: 21 of 289 episodes around restarts beside a slow
// receiver). The log's entry (the last episode, le at version ver) becomes this one,
// claimed and resolved here; the last episode's resolved notice, when still owed, is
// taken over and goes first (its sender's copy may come too: a second resolution of an
// ended incident harms nothing, where this episode's page before it would have been
// closed by it at receivers that key incidents on the fingerprint). A version conflict is
// returned for the caller to read the entry again.
func (e *Engine) resolveHeld(ctx context.Context, r *resolution, le LogEntry, ver int64) (*pendingAlert, error) {
	first, priorsOut := e.duePriors(le)
	now, chans := e.now(), r.p.Channels
	ne := r.entry
	switch {
	case le.resolving() && e.claimerAlive(le.ClaimedBy):
		// Its sender is alive and delivers it (or hands it back): kept as this entry's
		// Prior, not sent twice (an outside trial: 11 resolutions twice). This episode's
		// page may reach a receiver before it; this episode's end follows at once.
		ne.Prior = e.withPrior(ne.Fingerprint, priorOf(le, chans, le.ClaimedBy), le.Prior)
	case le.resolving():
		first = append(first, e.resolvedNotices(le)...)
	}
	ne.QueuedAt, ne.ClaimedBy, ne.Owed, ne.Untold, ne.Sent, ne.LastSent = now, e.claimer(), slices.Clone(chans), slices.Clone(chans), 0, time.Time{}
	ne.PagedBy = ne.ClaimedBy
	ne.ResolvedAt, ne.ResolvedTS, ne.Value = r.at, r.ts, r.value
	ne.ResolveQueuedAt, ne.ResolveOwed, ne.ResolveSent = now, slices.Clone(chans), len(chans) == 0
	if err := e.o.Log.Put(ctx, ne, ver); errors.Is(err, coord.ErrVersionConflict) {
		return nil, err
	} else if err != nil {
		e.logError(err, ne.Fingerprint) // told all the same: a duplicate is better than silence
	}
	e.tellPriors(ne.Fingerprint, priorsOut)
	page := e.unpagedNotice(ne, r.p, chans)
	if page == nil {
		return nil, nil
	}
	r.first = append(first, page)
	e.infMu.Lock()
	e.paging[ne.Fingerprint] = &inflight{at: ne.QueuedAt, startsAt: ne.FiringSince, left: slices.Clone(chans)}
	e.infMu.Unlock()
	e.debug("an episode held behind the last one's resolved notice ended before its page: paged and resolved now", ne.Fingerprint,
		"starts_at", ne.FiringSince, "ends_at", ne.ResolvedAt, "last_resolution_taken_over", len(first) > 0)
	return e.telling1(r, ne, true, slices.Clone(chans), awaitedPage{}), nil
}

// telling1 forgets the alert's pages in flight (its resolution follows them on each
// channel's queue) and returns its resolved notice, to the channels to, if told. Of
// those, the channels aw names wait for another live process's page (awaitpage.go): the
// notice returned leaves them out, nil when no other channel is left.
func (e *Engine) telling1(r *resolution, le LogEntry, told bool, to []string, aw awaitedPage) *pendingAlert {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	page := e.paging[le.Fingerprint]
	delete(e.paging, le.Fingerprint)
	if !told {
		return nil
	}
	inf := &inflight{at: le.ResolvedAt, startsAt: le.FiringSince, left: slices.Clone(to)}
	if page != nil && page.at.Equal(le.QueuedAt) {
		inf.pageAt, inf.pageLeft = page.at, slices.Clone(page.left)
	}
	e.telling[le.Fingerprint] = inf
	if len(aw.chans) > 0 {
		aw.at = le.ResolvedAt
		e.awaiting[le.Fingerprint] = aw
		to = slices.DeleteFunc(slices.Clone(to), func(c string) bool { return slices.Contains(aw.chans, c) })
		if len(to) == 0 {
			return nil
		}
	}
	na := r.na
	na.StartsAt, na.EndsAt = le.FiringSince, le.ResolvedAt
	return &pendingAlert{p: r.p, fp: r.a.fp, na: na, to: to}
}

// resolutionTo is the channels a resolution of le goes to, in the policy's order: those
// a page of the episode reached, and those one is on its way to (this process's, ahead
// of the resolution on the channel's queue), or that another process's claim still owes
// (unpaged: they get the page from here, then the resolution). That process may have
// died, or been paused, inside its group's wait before the group listed it gone: its page
// never comes, and a resolution alone reached receivers that never had the page (an
// outside trial: a third of the alerts of a member killed inside group_wait). Paged,
// then resolved, as a backlog's episode is; should its page come after all, the
// receiver has it twice (a late one is dropped: writer.fence). A process the group still
// lists, or that stands in DrainingGroup, is still delivering its page: its channels are
// awaited instead, their resolution held back until that page settles (awaitpage.go;
// outside trials: a graceful stop, or a rebalance, beside a 4 s receiver paged twice,
// the second page after the resolution).
func (e *Engine) resolutionTo(le LogEntry, p *policy.Policy) (to, unpaged, awaited []string) {
	told := le.toldOf(p.Channels)
	var flying []string
	e.infMu.Lock()
	inf := e.paging[le.Fingerprint]
	mine := inf != nil && inf.at.Equal(le.QueuedAt)
	if mine {
		// This process's page: what its channels made of it is known here. One that gave
		// it up (a receiver down) has no page coming, whatever the log's claim says.
		flying = slices.Concat(inf.left, inf.reached)
	}
	e.infMu.Unlock()
	if !mine && le.owes() {
		unpaged = le.unpagedOf(p.Channels, nil)
		flying = unpaged
		if e.mayBeAlive(le.ClaimedBy) {
			unpaged, awaited = nil, unpaged
		}
	}
	return slices.DeleteFunc(slices.Clone(p.Channels), func(c string) bool {
		return !slices.Contains(told, c) && !slices.Contains(flying, c)
	}), unpaged, awaited
}

// unpagedNotice is the page of le's episode, as its claim would have sent it, to the
// channels unpaged; nil when there are none.
func (e *Engine) unpagedNotice(le LogEntry, p *policy.Policy, unpaged []string) *pendingAlert {
	fp, ok := parseFP(le.Fingerprint)
	if len(unpaged) == 0 || !ok {
		return nil
	}
	return &pendingAlert{p: p, fp: fp, na: notify.Alert{Status: notify.StatusFiring, Labels: le.Labels,
		Annotations: p.Render(templateData(p, le.Labels, le.Value, StateFiring)),
		StartsAt:    le.FiringSince, Value: le.Value, Fingerprint: le.Fingerprint}, to: unpaged}
}

// paged reports whether this process queued a page of the alert's current episode.
func (e *Engine) paged(fp string) bool {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	return e.paging[fp] != nil
}

// resolveUnanswered resolves an episode the log could not be asked about (err): at
// once, unlogged (resolveUnlogged: a duplicate is better than silence), except just after
// the process was paused. Its coordinator session was lost in the pause, and another
// process may have taken the alert over and resolved it meanwhile: the resolution then
// waits for the log (recordResolve, once it answers), which sends it only where the
// episode is still firing there. (An outside trial: a process paused 30 s resent 35
// resolutions another had sent, with its own later end.)
func (e *Engine) resolveUnanswered(ctx context.Context, r *resolution, err error) *pendingAlert {
	if !e.justResumed() {
		return e.resolveUnlogged(ctx, r, 0, err)
	}
	le := r.entry
	le.QueuedAt, le.Owed, le.Untold = time.Time{}, nil, nil
	le.ResolvedAt, le.ResolvedTS, le.Value = r.at, r.ts, r.value
	le.ResolveQueuedAt, le.ClaimedBy, le.ResolveSent = e.now(), e.claimer(), true // told by recordResolve, if at all
	e.w.owe(le.Fingerprint, e.recordResolve(le, r.p, nil), err)
	return e.telling1(r, le, false, nil, awaitedPage{})
}

// resolveUnlogged resolves an episode the log does not hold (not found: version
// NoVersion; an earlier episode's tombstone: its version) or cannot be asked about (err
// set): the notice goes to the channels this process's pages reached or are on their way
// to (all of them for a page it adopted), and the resolution is written now, or once the
// log answers.
func (e *Engine) resolveUnlogged(ctx context.Context, r *resolution, ver int64, err error) *pendingAlert {
	var to []string
	if r.pagedHere {
		e.infMu.Lock()
		if inf := e.paging[r.na.Fingerprint]; inf != nil {
			to = slices.DeleteFunc(slices.Clone(r.p.Channels), func(c string) bool {
				return !slices.Contains(inf.left, c) && !slices.Contains(inf.reached, c)
			})
		} else {
			to = slices.Clone(r.p.Channels)
		}
		e.infMu.Unlock()
	}
	told := len(to) > 0
	le := r.entry
	le.QueuedAt, le.Owed, le.Untold = time.Time{}, nil, nil
	le.ResolvedAt, le.ResolvedTS, le.Value = r.at, r.ts, r.value
	if told {
		le.ResolveQueuedAt, le.ClaimedBy, le.ResolveOwed = e.now(), e.claimer(), to
	} else {
		le.ResolveSent = true
	}
	if err == nil {
		err = e.o.Log.Put(ctx, le, ver)
		if errors.Is(err, coord.ErrVersionConflict) {
			err = nil // another process wrote it meanwhile; this page's resolution still goes out
		}
	}
	if err != nil {
		e.w.owe(le.Fingerprint, e.recordResolve(le, r.p, to), err)
	}
	return e.telling1(r, le, told, to, awaitedPage{})
}

// recordResolve writes a resolution this process decided without the log's answer, once
// the log answers: onto the episode the log holds firing, or over an earlier episode's
// tombstone (this one's claim never reached the log). Channels the log says a page reached
// that the resolved notice did not go to (another process's page) are sent it now.
func (e *Engine) recordResolve(want LogEntry, p *policy.Policy, sentTo []string) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		var extra []string
		err := e.update(ctx, want.Fingerprint, func(le *LogEntry, found bool) bool {
			extra = nil
			switch {
			case !found:
				*le = want
				return true
			case !le.firing() && le.ResolvedAt.Equal(want.ResolvedAt):
				return false // recorded already
			case !le.firing() && le.ResolvedAt.Before(want.FiringSince):
				*le = want // an earlier episode's tombstone
				return true
			case !le.firing():
				return false // another process resolved it
			}
			for _, c := range le.toldOf(p.Channels) {
				if !slices.Contains(sentTo, c) {
					extra = append(extra, c)
				}
			}
			le.ResolvedAt, le.ResolvedTS, le.Value = want.ResolvedAt, want.ResolvedTS, want.Value
			le.ResolveQueuedAt, le.ClaimedBy = want.ResolveQueuedAt, want.ClaimedBy
			le.ResolveOwed = slices.Concat(want.ResolveOwed, extra)
			le.ResolveSent = len(le.ResolveOwed) == 0
			if le.ResolveSent {
				le.ResolveOwed = nil
			}
			return true
		})
		if err != nil || len(extra) == 0 {
			return nil, err
		}
		pa := e.resolvedNotice(want)
		if pa == nil {
			return nil, nil
		}
		pa.to = extra
		e.infMu.Lock()
		if inf := e.telling[want.Fingerprint]; inf != nil && inf.at.Equal(want.ResolvedAt) {
			inf.left = append(inf.left, extra...)
		} else {
			e.telling[want.Fingerprint] = &inflight{at: want.ResolvedAt, left: extra}
		}
		e.infMu.Unlock()
		return []*pendingAlert{pa}, nil
	}
}

// resolveDone takes a channel's outcome of a resolved notice; a delivery is recorded in
// the log, and the entry becomes a tombstone once every channel it owed delivered.
func (e *Engine) resolveDone(ch string, na notify.Alert, err error) logWrite {
	e.infMu.Lock()
	took := func(inf *inflight) bool {
		if inf == nil || !inf.at.Equal(na.EndsAt) || !slices.Contains(inf.left, ch) {
			return false
		}
		inf.left = without(inf.left, ch)
		if err == nil {
			inf.delivered = true
		} else {
			inf.failed = true
		}
		return true
	}
	priorFailed := false
	if inf := e.telling[na.Fingerprint]; took(inf) && len(inf.left) == 0 && !inf.failed {
		delete(e.telling, na.Fingerprint)
	} else if inf != nil && err != nil {
		// Given up: when the next episode's claim made it the entry's Prior, named as on
		// its way from here, its page waits for it while this process lives; handed back,
		// it goes before that page (duePriors).
		priorFailed = true
	}
	pk := priorKeyOf(na.Fingerprint, na.EndsAt)
	if inf := e.tellingPrior[pk]; took(inf) {
		priorFailed = err != nil
		if len(inf.left) == 0 {
			delete(e.tellingPrior, pk) // a Prior that failed stays owed in the log alone
		}
	}
	e.infMu.Unlock()
	if priorFailed {
		return e.handPriorBack(na.Fingerprint, na.EndsAt)
	}
	if err != nil {
		return nil
	}
	fp, at := na.Fingerprint, na.EndsAt
	return func(ctx context.Context) ([]*pendingAlert, error) {
		return nil, e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			if p := le.prior(at); found && p != nil {
				if p.Owed = without(p.Owed, ch); len(p.Owed) == 0 {
					le.dropPrior(at)
				}
				return true
			}
			if !found || !le.resolving() || !le.ResolvedAt.Equal(at) {
				return false
			}
			var chans []string
			if p := e.policyOf(*le); p != nil {
				chans = p.Channels
			}
			le.ResolveOwed = without(le.resolveOwedOf(chans), ch)
			le.ResolveSent = len(le.ResolveOwed) == 0
			return true
		})
	}
}

// handPriorBack records that the entry's Prior resolved at at is no longer on its way
// from this process (a channel gave it up, or the process stops): whoever resolves the
// entry next sends it again.
func (e *Engine) handPriorBack(fp string, at time.Time) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		return nil, e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			p := le.prior(at)
			if !found || p == nil || p.By == "" {
				return false
			}
			p.By = ""
			return true
		})
	}
}

// resolvedNotices is a logged resolution's notices for a process sending it again
// (resolvedNotice): first the episode's page, to the channels owed it that no page of it
// reached (its page was given up, or its process died before delivering), then the
// resolved notice. A receiver never gets the end of an incident it never heard of.
func (e *Engine) resolvedNotices(le LogEntry) []*pendingAlert {
	pa := e.resolvedNotice(le)
	if pa == nil {
		return nil
	}
	return e.pagedFirst(le, pa)
}

// pagedFirst is the resolved notice pa of le's episode, preceded by the episode's page to
// those of its channels that are owed a page no page of the episode reached, and to which
// this process's own page of it is not on its way (ahead of pa on the channel's queue:
// paged again, the receiver had it twice, an outside trial).
func (e *Engine) pagedFirst(le LogEntry, pa *pendingAlert) []*pendingAlert {
	unpaged := le.unpagedOf(pa.p.Channels, pa.to)
	e.infMu.Lock()
	if inf := e.paging[le.Fingerprint]; inf != nil && inf.startsAt.Equal(le.FiringSince) {
		unpaged = slices.DeleteFunc(unpaged, func(c string) bool { return slices.Contains(inf.left, c) })
	}
	e.infMu.Unlock()
	if page := e.unpagedNotice(le, pa.p, unpaged); page != nil {
		return []*pendingAlert{page, pa}
	}
	return []*pendingAlert{pa}
}

// resolvedNotice renders the resolved notice of a logged episode, for a process that did
// not evaluate it; nil when its policy is gone from this process's file and the entry
// recorded no channels (policyOf).
func (e *Engine) resolvedNotice(le LogEntry) *pendingAlert {
	p := e.policyOf(le)
	fp, ok := parseFP(le.Fingerprint)
	if p == nil || !ok {
		e.log.Warn("a logged resolution names a policy this alarm does not have; its notice cannot be sent",
			"policy", le.Policy, "fingerprint", le.Fingerprint)
		return nil
	}
	return &pendingAlert{p: p, fp: fp, na: notify.Alert{Status: notify.StatusResolved, Labels: le.Labels,
		Annotations: p.Render(templateData(p, le.Labels, le.Value, StateResolved)),
		StartsAt:    le.FiringSince, EndsAt: le.ResolvedAt, Value: le.Value, Fingerprint: le.Fingerprint},
		to: le.resolveOwedOf(p.Channels)}
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
			p := e.policyOf(le)
			if p != nil && !le.ResolveQueuedAt.IsZero() && (now.Sub(le.ResolveQueuedAt) < e.leaseOf(p) ||
				e.claimerAlive(le.ClaimedBy) || e.resolutionInFlight(le)) && !e.claimerGone(le.ClaimedBy, le.ResolveQueuedAt) {
				continue // its sender has time left, or is alive and delivers it (or this process does)
			}
			if le.pending() && le.PagedBy != "" && !e.membersHeard() {
				continue // whether its page's process lives is known once the group answers
			}
			notices = append(notices, e.takeResolution(ctx, le, now)...)
		case !le.firing() && now.Sub(le.resolvedClock()) >= e.o.ResolvedRetention:
			e.collect(ctx, le)
		}
	}
	if len(notices) > 0 {
		e.log.Info("sending resolved notices another alarm process left undelivered", "alerts", len(notices))
		e.w.submit(effects{notices: notices}, now)
	}
}

// onItsWayHere reports whether this process has the resolved notice of the entry fp's
// episode that resolved at at on its way: as a Prior, or as the resolution it made (the
// next episode's claim elsewhere made it the entry's Prior since: sent again, the
// receiver had it twice after a partition came back, an outside trial).
func (e *Engine) onItsWayHere(fp string, at time.Time) bool {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	if inf := e.tellingPrior[priorKeyOf(fp, at)]; inf != nil && len(inf.left) > 0 {
		return true
	}
	inf := e.telling[fp]
	return inf != nil && inf.at.Equal(at) && len(inf.left) > 0
}

// tellPriors records the Priors' resolved notices of duePriors as on their way from
// here, once the entry that names this process their sender is written.
func (e *Engine) tellPriors(fp string, resolved []*pendingAlert) {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	for _, pa := range resolved {
		e.tellingPrior[priorKeyOf(fp, pa.na.EndsAt)] = &inflight{at: pa.na.EndsAt, startsAt: pa.na.StartsAt, left: slices.Clone(pa.to)}
	}
}

// duePriors are the notices of le's Priors to go again from here before le's own next
// notice (its page, or its resolution): still owed, not on their way from here, and
// whose sender is gone (or handed them back). Each goes after its page to the channels
// no page of it reached (pagedFirst), oldest first. A second resolution of an ended
// episode harms nothing, where its absence left the receiver's incident open. It returns
// the notices, and of those the resolved notices alone, for tellPriors once the entry is
// written: each one's By in le becomes this process, so that no other sends it while
// this one lives (the resolution's write did not name it: another process sent it
// again, a dup in an outside trial).
func (e *Engine) duePriors(le LogEntry) (notices, resolved []*pendingAlert) {
	for _, p := range le.priors() {
		pv := priorView(le, p)
		pa := e.resolvedNotice(pv)
		if pa == nil || e.onItsWayHere(le.Fingerprint, p.ResolvedAt) || e.mayBeAlive(p.By) {
			continue // on its way from here, or from another live process (it hands it back if it fails)
		}
		p.By, p.QueuedAt = e.claimer(), e.now()
		e.debug("an earlier episode's resolved notice goes again before this one's", le.Fingerprint, "ends_at", pa.na.EndsAt,
			"to", pa.to, "paged_first", p.Unpaged)
		notices = append(notices, e.pagedFirst(pv, pa)...)
		resolved = append(resolved, pa)
	}
	return notices, resolved
}

// withPrior is p (the last episode's resolution still owed, nil when none is) as the
// Prior of the entry fp, ahead of older, the Priors it held; the oldest past maxPriors
// is dropped, with a warning.
func (e *Engine) withPrior(fp string, p, older *PriorResolution) *PriorResolution {
	head, dropped := withPrior(p, older)
	for ; dropped != nil; dropped = dropped.Before {
		e.log.Warn("an earlier episode's resolved notice was never delivered to some channels for many episodes; the oldest is forgotten",
			"fingerprint", fp, "ends_at", dropped.ResolvedAt, "channels", dropped.Owed)
	}
	return head
}

// takeResolution claims the resolved notice of a logged resolution whose sender is gone,
// and returns it, after the page of channels that never had one (resolvedNotices).
func (e *Engine) takeResolution(ctx context.Context, seen LogEntry, now time.Time) []*pendingAlert {
	le, ver, err := e.o.Log.Get(ctx, seen.Fingerprint)
	if err != nil || !le.resolving() || !le.ResolveQueuedAt.Equal(seen.ResolveQueuedAt) {
		return nil // changed meanwhile: someone else took it
	}
	pa := e.resolvedNotice(le)
	if pa == nil || len(pa.to) == 0 {
		pa, le.ResolveSent = nil, true // nobody can route it: do not try forever
	} else {
		le.ResolveQueuedAt, le.ClaimedBy = now, e.claimer()
	}
	notices, priorsOut := e.duePriors(le)
	if err := e.o.Log.Put(ctx, le, ver); err != nil {
		if !errors.Is(err, coord.ErrVersionConflict) {
			e.logError(err, le.Fingerprint)
		}
		return nil
	}
	e.tellPriors(le.Fingerprint, priorsOut)
	if pa == nil {
		return notices
	}
	e.infMu.Lock()
	e.telling[le.Fingerprint] = &inflight{at: le.ResolvedAt, left: slices.Clone(pa.to)}
	var awaited []string
	if le.pending() && e.claimerAlive(le.PagedBy) {
		// The episode's page is still on its way from a live process: the channels it
		// owes wait for it, as at the resolution (resolutionTo); paged again from here
		// first, the receiver had it twice (an outside trial).
		if awaited = le.unpagedOf(pa.p.Channels, pa.to); len(awaited) > 0 {
			e.awaiting[le.Fingerprint] = awaitedPage{by: le.PagedBy, claimAt: le.QueuedAt, at: le.ResolvedAt, chans: awaited}
			pa.to = slices.DeleteFunc(pa.to, func(c string) bool { return slices.Contains(awaited, c) })
		}
	}
	e.infMu.Unlock()
	e.debug("resolved notice taken over", le.Fingerprint, "ends_at", le.ResolvedAt, "from", seen.ClaimedBy, "to", pa.to,
		"awaited", awaited, "page_claimed_by", le.PagedBy)
	if len(pa.to) > 0 {
		notices = append(notices, e.pagedFirst(le, pa)...)
	}
	return notices
}

// collect removes a tombstone that is still the one seen.
func (e *Engine) collect(ctx context.Context, seen LogEntry) {
	le, ver, err := e.o.Log.Get(ctx, seen.Fingerprint)
	if err != nil || le.firing() || le.resolving() || !le.ResolvedAt.Equal(seen.ResolvedAt) {
		return
	}
	for _, p := range le.priors() {
		e.log.Warn("an earlier episode's resolved notice was never delivered to some channels; it is forgotten with the entry",
			"fingerprint", le.Fingerprint, "node", le.Labels[policy.LabelNode], "ends_at", p.ResolvedAt, "channels", p.Owed)
	}
	if err := e.o.Log.Remove(ctx, le.Fingerprint, ver); err != nil && !errors.Is(err, coord.ErrVersionConflict) {
		e.logError(err, le.Fingerprint)
	}
}

// releaseInflight hands this process's undelivered notifications back to the log, for
// a stopping process: a page claimed and not delivered to every channel becomes due
// again, to the channels still owed it, for whoever evaluates the alert next, a resolved
// notice for whoever sweeps the log next, without waiting out their leases. It returns
// how many of each it released.
func (e *Engine) releaseInflight(ctx context.Context) (pages, resolutions int) {
	e.infMu.Lock()
	paging, telling, priors := e.paging, e.telling, e.tellingPrior
	e.paging, e.telling, e.tellingPrior = map[string]*inflight{}, map[string]*inflight{}, map[priorKey]*inflight{}
	e.infMu.Unlock()
	for k, inf := range priors {
		if len(inf.left) > 0 || inf.failed {
			_, _ = e.handPriorBack(k.fp, inf.at)(ctx) // best effort: a stopped process is not alive for long
		}
	}
	for fp, inf := range paging {
		if len(inf.left) == 0 && !inf.failed {
			continue // delivered everywhere
		}
		// A resolved episode's too: the process that resolved it waits for this page
		// (claimerAlive) and pages the channels still owed once it is handed back.
		released := false
		err := e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			released = found && le.pending() && le.QueuedAt.Equal(inf.at)
			if released {
				le.QueuedAt = time.Time{}
			}
			return released
		})
		if err == nil && released {
			pages++
			e.debug("page handed back", fp, "queued_at", inf.at, "undelivered_to", inf.left, "failed", inf.failed)
		}
	}
	for fp, inf := range telling {
		released := false
		err := e.update(ctx, fp, func(le *LogEntry, found bool) bool {
			released = found && le.resolving() && le.ResolvedAt.Equal(inf.at)
			if released {
				le.ResolveQueuedAt = time.Time{}
			}
			return released
		})
		if err == nil && released {
			resolutions++
			e.debug("resolved notice handed back", fp, "ends_at", inf.at, "undelivered_to", inf.left, "failed", inf.failed)
		} else if err == nil && (len(inf.left) > 0 || inf.failed) {
			_, _ = e.handPriorBack(fp, inf.at)(ctx) // the next episode's Prior meanwhile (holdInLog)
		}
	}
	return pages, resolutions
}

// errPageNotDelivered is the outcome of a resolved notice withheld by Prepare.
var errPageNotDelivered = errors.New("withheld: the channel gave up the episode's page")

// Prepare withholds, from a message whose turn came on its channel, the resolved notices
// of episodes whose page from here that channel gave up while the resolution queued
// behind it: the receiver would get the end of an incident it never heard of (an outside
// trial). Each one withheld counts as a failed delivery: it stays owed in the log, and
// whoever sends it again (sweep, or this process before the alert's next page) pages
// the channel first (resolvedNotices). It returns the rest of the message, and false
// when nothing is left to send.
func (e *Engine) Prepare(m notify.Message) (notify.Message, bool) {
	var withheld []notify.Alert
	e.infMu.Lock()
	keep := slices.DeleteFunc(slices.Clone(m.Alerts), func(na notify.Alert) bool {
		if na.Status != notify.StatusResolved {
			return false
		}
		inf := e.telling[na.Fingerprint]
		if inf == nil || !inf.at.Equal(na.EndsAt) || !slices.Contains(inf.pageFailed, m.Receiver) {
			return false
		}
		withheld = append(withheld, na)
		return true
	})
	e.infMu.Unlock()
	if len(withheld) == 0 {
		return m, true
	}
	for _, na := range withheld {
		e.resolveDone(m.Receiver, na, errPageNotDelivered)
		e.log.Warn("a resolved notice is withheld from a channel that gave up its page; both go to it once it delivers again",
			"channel", m.Receiver, "fingerprint", na.Fingerprint, "node", na.Labels[policy.LabelNode])
	}
	m.Alerts = keep
	return m, len(keep) > 0
}

// resolutionInFlight reports whether le's resolved notice is still on its way from here (its
// channels have not all answered): a sweep must not send it again after its lease, while
// a slow receiver's queue holds it.
func (e *Engine) resolutionInFlight(le LogEntry) bool {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	inf := e.telling[le.Fingerprint]
	return inf != nil && inf.at.Equal(le.ResolvedAt) && len(inf.left) > 0
}
