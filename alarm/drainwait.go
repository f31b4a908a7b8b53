package alarm

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// awaitedPage is a resolved notice held back from channels whose page of the episode a
// draining process (DrainingGroup) is still delivering. Sent at once, it could reach the
// receiver before that page; paged again from here first, the receiver had the page
// twice. The channels stay in the log's ResolveOwed meanwhile, so a stop or a crash of
// this process leaves them to the next sweeper.
type awaitedPage struct {
	by    string    // the draining process
	at    time.Time // the resolution (LogEntry.ResolvedAt)
	chans []string  // the channels waiting for its page
}

// awaitedWrites are the held-back resolutions whose draining process is done (its mark
// gone: it delivered, handed back, or died), as log reads for the writer.
func (e *Engine) awaitedWrites() []keyedWrite {
	e.infMu.Lock()
	defer e.infMu.Unlock()
	var writes []keyedWrite
	for fp, aw := range e.awaiting {
		if e.claimerDraining(aw.by) {
			continue
		}
		delete(e.awaiting, fp)
		writes = append(writes, keyedWrite{fp: fp, w: e.afterDrain(fp, aw)})
	}
	return writes
}

// afterDrain sends a held-back resolution once its draining process is done: to each
// channel its page reached (the log recorded the delivery), and, paged from here first,
// to each it did not reach, as for a process that died before paging (resolutionTo). An
// episode no longer resolving in the log (its notice delivered by another process, or
// collected) is left alone.
func (e *Engine) afterDrain(fp string, aw awaitedPage) logWrite {
	return func(ctx context.Context) ([]*pendingAlert, error) {
		le, _, err := e.o.Log.Get(ctx, fp)
		if err != nil && !errors.Is(err, coord.ErrNotFound) {
			return nil, err // the writer tries again once the log answers
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
		pa.to = slices.DeleteFunc(pa.to, func(c string) bool { return !slices.Contains(aw.chans, c) })
		if len(pa.to) == 0 {
			return nil, nil
		}
		e.debug("resolved notice sent after a drain", fp, "drained", aw.by, "to", pa.to)
		return e.pagedFirst(le, pa), nil
	}
}
