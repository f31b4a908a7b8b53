package alarm

import (
	"context"
	"errors"

	"github.com/binlake/binlake/internal/coord"
)

// logWrite is a notification log write this process decided: a claim it paged, a
// channel's delivery, a resolution. It returns the notices it found due (a resolution
// recorded late may owe channels that its first notice did not go to), or the error of
// a log it could not reach.
type logWrite func(ctx context.Context) ([]*pendingAlert, error)

// keyedWrite is a logWrite and the fingerprint of the entry it writes.
type keyedWrite struct {
	fp string
	w  logWrite
}

// write runs a write on the writer's goroutine; what it found due is queued after it.
func (w *writer) write(kw keyedWrite) {
	ctx, cancel := w.e.opContext()
	notices, err := kw.w(ctx)
	cancel()
	if err != nil {
		w.owe(kw.fp, kw.w, err)
		return
	}
	w.notices = append(w.notices, notices...)
}

// owe reports a write the log refused.
func (w *writer) owe(fp string, _ logWrite, err error) { w.e.logError(err, fp) }

// update reads an entry and writes what f makes of it, with compare-and-set, reading it
// again when another write came first (another channel's delivery, another process). f
// gets the entry (zero when not found) and reports whether to write it.
func (e *Engine) update(ctx context.Context, fp string, f func(le *LogEntry, found bool) bool) error {
	for range 10 {
		le, ver, err := e.o.Log.Get(ctx, fp)
		found := err == nil
		switch {
		case errors.Is(err, coord.ErrNotFound):
			ver = coord.NoVersion
		case err != nil:
			return err
		}
		if !f(&le, found) {
			return nil
		}
		le.Fingerprint = fp
		err = e.o.Log.Put(ctx, le, ver)
		if errors.Is(err, coord.ErrVersionConflict) {
			continue
		}
		return err
	}
	e.log.Warn("notification log: the entry kept changing under a write; given up", "fingerprint", fp)
	return nil
}
