package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
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
// records (restoreRecords). Run calls it before any batch or placement.
func (j *Judge) restore(ctx context.Context) {
	j.rebuildCurrentHour(ctx)
	j.restoreRecords(ctx)
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
	ctx, cancel := context.WithTimeout(ctx, rebuildTimeout)
	defer cancel()
	intervals, err := j.o.Store.Records(ctx, recordInterval)
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
	stored, err := j.o.Store.Records(ctx, recordReservation)
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
