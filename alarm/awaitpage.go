package alarm

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// awaitedPage is a resolved notice held back from channels whose page of the episode
// another live process (claimerAlive: in the group, or draining) is still delivering: its
// partition moved here, by a rebalance or a stop, while a slow receiver's queue held the
// page there. Sent at once, the resolution could reach the receiver before that page;
// paged again from here first, the receiver had the page twice (outside trials). The
// channels stay in the log's ResolveOwed meanwhile, so a stop or a crash of this process
// leaves them to the next sweeper.
type awaitedPage struct {
	by      string    // the process whose page it waits for
	claimAt time.Time // that page's claim (LogEntry.QueuedAt)
	at      time.Time // the resolution (LogEntry.ResolvedAt)
	chans   []string  // the channels waiting for its page
}

// awaitedWrites are the held-back resolutions, as log reads for the writer (afterPage):
// at each tick, each is sent once the page it waits for settled, or held again.
func (e *Engine) awaitedWrites() []keyedWrite {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	writes := make([]keyedWrite, 0, len(e.awaiting))
	for fp, aw := range e.awaiting {
		delete(e.awaiting, fp)
		writes = append(writes, keyedWrite{fp: fp, w: e.afterPage(fp, aw)})
	}
	return writes
}

// afterPage sends a held-back resolution once the page it waits for settled: delivered
// (the log recorded it), handed back (its claim cleared: given up, or its process's drain
// ended), or its process gone. It goes to each channel that page reached, and, paged from
// here first, to each it did not reach, as for a process that died before paging
// (resolutionTo). While the page is still that live process's, it is held again. An
// episode no longer resolving in the log (its notice delivered by another process, or
// collected) is left alone, unless the next episode's claim made it the entry's Prior,
// on its way from here (holdInLog: that episode's page waits for it).
func (e *Engine) afterPage(fp string, aw awaitedPage) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		le, _, err := e.o.Log.Get(ctx, fp)
		if err != nil && !errors.Is(err, coord.ErrNotFound) {
			e.hold(fp, aw) // the log does not answer: asked again at the next tick
			return nil, nil
		}
		claimAt := le.QueuedAt
		if p := le.prior(aw.at); err == nil && p != nil && p.By == e.claimer() {
			le, claimAt = priorView(le, p), p.PageAt
		}
		if err != nil || !le.resolving() || !le.ResolvedAt.Equal(aw.at) {
			e.infMu.Lock()
			if inf := e.telling[fp]; inf != nil && inf.at.Equal(aw.at) {
				inf.left = slices.DeleteFunc(inf.left, func(c string) bool { return slices.Contains(aw.chans, c) })
			}
			e.infMu.Unlock()
			return nil, nil
		}
		pa := e.resolvedNotice(le)
		if pa == nil {
			return nil, nil
		}
		if e.mayBeAlive(aw.by) && claimAt.Equal(aw.claimAt) &&
			slices.ContainsFunc(le.owedOf(pa.p.Channels), func(c string) bool { return slices.Contains(aw.chans, c) }) {
			e.hold(fp, aw) // still on its way there
			return nil, nil
		}
		pa.to = slices.DeleteFunc(pa.to, func(c string) bool { return !slices.Contains(aw.chans, c) })
		if len(pa.to) == 0 {
			return nil, nil
		}
		e.debug("resolved notice sent after the page it waited for", fp, "page_claimed_by", aw.by, "to", pa.to)
		return e.pagedFirst(le, pa), nil
	}
}

// hold keeps a resolution waiting for another process's page (awaitedWrites).
func (e *Engine) hold(fp string, aw awaitedPage) {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	if _, newer := e.awaiting[fp]; !newer {
		e.awaiting[fp] = aw
	}
}
