package alarm

import (
	"context"
	"errors"
	"slices"
	"time"

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

// The log can be out of reach (a ZooKeeper partition, a session lost) while this process
// goes on paging: a page claimed without the log's answer goes out (a duplicate is better
// than silence), and so do its deliveries and its resolution. Their writes are not
// dropped: they wait in the writer, in order per alert, and are tried again until the log
// answers, so that it learns of the episode and its resolution is told (without them the
// log kept the previous episode's tombstone, and the resolution of a page sent in a
// partition was refused as already told). A decision about an alert with writes waiting
// first tries them: the log cannot answer for the alert before it knows what this process
// did.

// The retries back off between rounds while the log stays out of reach (each
// attempt may wait out its operation's timeout), and until the next round is due the log
// counts as down: decisions do not wait out a timeout each (in a ZooKeeper partition
// every page and resolution waited 10 s per alert before going out without the log),
// and their writes wait behind the others.
const (
	owedRetryFirst = time.Second
	owedRetryMax   = 15 * time.Second
	// owedMax bounds the writes waiting; past it a new one is dropped, logged.
	owedMax = 100000
)

// write runs kw now unless writes of its alert are waiting (it then waits behind them), and
// keeps it for a retry when the log cannot be reached. Only on the writer's goroutine.
func (w *writer) write(kw keyedWrite) {
	if q := w.owed[kw.fp]; len(q) > 0 || w.down() {
		w.owed[kw.fp] = append(q, kw.w)
		w.owedCount.Add(1)
		return
	}
	ctx, cancel := w.e.opContext()
	notices, err := kw.w(ctx)
	cancel()
	if err != nil {
		w.owe(kw.fp, kw.w, err)
		return
	}
	w.notices = append(w.notices, notices...)
}

// owe keeps a write the log refused for a retry. Only on the writer's goroutine.
func (w *writer) owe(fp string, lw logWrite, err error) {
	e := w.e
	if !errors.Is(err, errLogDown) {
		e.logError(err, fp)
	}
	if w.owedCount.Load() >= owedMax {
		e.log.Error("notification log: too many writes waiting for the log; dropping this one", "fingerprint", fp)
		return
	}
	if len(w.owed) == 0 {
		e.log.Warn("notification log out of reach; its writes wait and are tried again until it answers", "err", err)
		w.retryWait = owedRetryFirst
		w.retryAt.Store(e.now().Add(w.retryWait).UnixNano())
	}
	w.owed[fp] = append(w.owed[fp], lw)
	w.owedCount.Add(1)
}

// flushOwed tries the alert's waiting writes, in order, and returns the first error (the
// rest wait on). Only on the writer's goroutine.
func (w *writer) flushOwed(ctx context.Context, fp string) error {
	q := w.owed[fp]
	for len(q) > 0 {
		notices, err := q[0](ctx)
		if err != nil {
			w.owed[fp] = q
			return err
		}
		w.notices = append(w.notices, notices...)
		q = q[1:]
		w.owedCount.Add(-1)
		w.recorded++
	}
	delete(w.owed, fp)
	if len(w.owed) == 0 && w.recorded > 0 {
		w.e.log.Info("notification log reachable again; the writes that waited for it are recorded", "writes", w.recorded)
		w.recorded = 0
	}
	return nil
}

// retryOwed tries the waiting writes, alert by alert, until one fails. Only on the
// writer's goroutine.
func (w *writer) retryOwed() {
	fps := make([]string, 0, len(w.owed))
	for fp := range w.owed {
		fps = append(fps, fp)
	}
	slices.Sort(fps)
	for _, fp := range fps {
		ctx, cancel := w.e.opContext()
		err := w.flushOwed(ctx, fp)
		cancel()
		if err != nil {
			w.retryWait = min(2*w.retryWait, owedRetryMax)
			w.retryAt.Store(w.e.now().Add(w.retryWait).UnixNano())
			return
		}
	}
}

// errLogDown is the error of a log operation not tried while the log is down.
var errLogDown = errors.New("notification log out of reach; not tried before the next retry")

// down reports whether the log failed lately: writes wait for it, and their next round of
// retries is not due yet.
func (w *writer) down() bool {
	return w.owedCount.Load() > 0 && w.e.now().UnixNano() < w.retryAt.Load()
}

// retryDue reports whether writes wait for the log and their next round is due.
func (w *writer) retryDue(now time.Time) bool {
	return w.owedCount.Load() > 0 && now.UnixNano() >= w.retryAt.Load()
}

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
