package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
)

// Bounds of the restore at start. The API serves while it runs (GET /healthz answers
// 200 from the start, GET /readyz 503 starting): each read that tells whether the store
// answers at all (the refresh before the rebuild's scan, each kind of record) gets
// restoreReadTimeout, so that a store that is down, or an engine that takes connections
// and never answers, costs a few seconds of the start and not the client's retries of
// every read one after another (18 s); a store that did not answer the first is not read
// again. The rebuild's scan itself keeps rebuildTimeout: a store that answers may hold
// hours of points. A request that needs the restored state (placements, ingest, the node
// listings, rebalance) waits for the restore up to startupWait, then is answered 503
// (Retry-After) and asked again.
const (
	restoreReadTimeout = 3 * time.Second
	startupWait        = 5 * time.Second
)

// Kinds of the judge's records (store.Record), which recordMirror keeps in the store.
const (
	// recordReservation is a pending reservation, by instance: its api.Reservation as JSON.
	recordReservation = "reservation"
	// recordInterval is the interval a node last declared, by node: intervalValue as JSON.
	recordInterval = "interval"
)

// intervalValue is a node's timing: the interval it declares, and how long after their
// timestamps its batches reach the judge (0 in records written before it was kept).
type intervalValue struct {
	IntervalS float64 `json:"interval_s"`
	OffsetS   float64 `json:"offset_s,omitempty"`
}

// reservationRecord is the record of instance's reservation r; nil ends it.
func reservationRecord(instance string, r *api.Reservation) store.Record {
	rec := store.Record{Kind: recordReservation, Key: instance}
	if r != nil {
		rec.Value, _ = json.Marshal(r) // plain fields: it cannot fail
	}
	return rec
}

func intervalRecord(node string, interval, offset time.Duration) store.Record {
	v, _ := json.Marshal(intervalValue{IntervalS: interval.Seconds(), OffsetS: offset.Seconds()}) // finite numbers: it cannot fail
	return store.Record{Kind: recordInterval, Key: node, Value: v}
}

// restore rebuilds what a judge before this one knew, so that a restarted judge answers
// as it did: the current hour from the stored points (rebuildCurrentHour), then its
// records (restoreRecords). Run calls it before any batch from the bus, and the API's
// requests that need what it restores wait for it (afterRestore). A store that does not
// answer within restoreReadTimeout is not read further: the judge starts from live
// batches, as it does after a failed rebuild.
func (j *Judge) restore(ctx context.Context) {
	if !j.rebuildCurrentHour(ctx) {
		j.log.Warn("the store did not answer at start: the restore is skipped (no current hour from the stored points, no node intervals, no pending reservations); the judge answers from live batches",
			"waited", restoreReadTimeout)
		return
	}
	j.restoreRecords(ctx)
	j.restoreHistory(ctx)
}

// historyAtStart bounds the historical analysis's first refresh within the restore: past
// it, the judge answers without the hour-of-day profiles until the refresh, made again
// at once with its own timeout, completes.
const historyAtStart = 10 * time.Second

// restoreHistory makes the historical analysis's first refresh part of the restore: it
// ran only once the restore was done, and for the seconds it took placements and plans
// saw each wave's load now, not its peak hour (a wave at 0.21 by its 4 o'clock profile
// read 0.15 after a restart: an outside trial).
func (j *Judge) restoreHistory(ctx context.Context) {
	hctx, cancel := context.WithTimeout(ctx, historyAtStart)
	defer cancel()
	began := time.Now()
	if err := j.hist.Refresh(hctx); err != nil {
		if ctx.Err() == nil {
			j.log.Warn("the historical analysis was not ready at start; placements and plans go without the hour-of-day profiles until it is",
				"waited", time.Since(began).Round(time.Millisecond), "err", err)
		}
		return
	}
	j.log.Info("historical analysis restored", "took", time.Since(began).Round(time.Millisecond))
}

// startRestore marks the judge as restoring until the returned func is called: GET
// /readyz answers 503 starting, and afterRestore holds the requests that need the
// restored state.
func (j *Judge) startRestore() (done func()) {
	ch := make(chan struct{})
	j.restoring.Store(&ch)
	return func() {
		j.restoring.Store(nil)
		close(ch)
	}
}

// Restoring reports whether Run is still restoring the judge's state from the store,
// and a channel closed when it is done (nil when it is not restoring). The Go API
// (Ingest, Place) does not wait for it; a caller that runs the judge does.
func (j *Judge) Restoring() <-chan struct{} {
	if p := j.restoring.Load(); p != nil {
		return *p
	}
	return nil
}

// errStarting answers a request that waited startupWait for the restore.
var errStarting = httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeUnavailable,
	"starting: the judge is still restoring its state from the store; ask again")

// afterRestore holds a request while the judge restores its state (restore), up to
// startupWait, and answers 503 starting after that. A placement before the rebuild
// would use no history and none of the reservations placements made just before a
// restart; once the restore is done, or gave up because the store did not answer, the
// judge answers from what it has (live batches), as it does with its store down.
// Ingest waits too: the rebuild replays the stored points before any live batch.
func (j *Judge) afterRestore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ch := j.Restoring(); ch != nil {
			t := time.NewTimer(startupWait)
			defer t.Stop()
			select {
			case <-ch:
			case <-t.C:
				j.writeError(w, r, errStarting)
				return
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// restoreRecords gives each node the rebuild brought back the interval it last declared
// and the offset of its batches (so that it is as stale as before), and restores the reservations that have not expired. Without the intervals a
// restarted judge judged staleness by the gaps between the stored batches' timestamps
// until each node's next batch; without the reservations, placements right after a
// restart (a deploy) landed on the nodes that the placements just before it had filled.
// Records that no longer apply (an expired reservation, the interval of a node silent
// for longer than the rebuild reaches) are deleted. A store that cannot be read is
// logged, and the judge starts without them.
func (j *Judge) restoreRecords(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, restoreReadTimeout)
	intervals, err := j.o.Store.Records(rctx, recordInterval)
	cancel()
	if ctx.Err() != nil {
		return // stopping (a start refused elsewhere): nothing to restore, nothing to say
	}
	if err != nil {
		j.log.Warn("reading the nodes' intervals from the store failed; nodes without one count as reporting every placement.default_interval until their next batch",
			"err", fmt.Errorf("judge: %w", err))
	}
	declared := 0
	for _, r := range intervals {
		var v intervalValue
		if json.Unmarshal(r.Value, &v) == nil && v.IntervalS > 0 &&
			j.inc.Declare(r.Key, time.Duration(v.IntervalS*float64(time.Second)), time.Duration(v.OffsetS*float64(time.Second))) {
			declared++
			continue
		}
		j.records.put(store.Record{Kind: recordInterval, Key: r.Key})
	}
	rctx, cancel = context.WithTimeout(ctx, restoreReadTimeout)
	stored, err := j.o.Store.Records(rctx, recordReservation)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		j.log.Warn("reading the pending reservations from the store failed; placements start without them",
			"err", fmt.Errorf("judge: %w", err))
	}
	var list []api.Reservation
	for _, r := range stored {
		var res api.Reservation
		if err := json.Unmarshal(r.Value, &res); err != nil || res.Instance != r.Key {
			j.log.Warn("dropping an unreadable reservation record", "instance", r.Key, "err", err)
			j.records.put(reservationRecord(r.Key, nil))
			continue
		}
		list = append(list, res)
	}
	restored := j.res.Restore(list, j.now())
	j.log.Info("restored the judge's records from the store", "reservations", restored, "expired", len(list)-restored,
		"node_intervals", declared)
}
