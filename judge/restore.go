package judge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
)

// Kinds of the judge's records (store.Record), which recordMirror keeps in the store.
const (
	// recordReservation is a pending reservation, by instance: its api.Reservation as JSON.
	recordReservation = "reservation"
)

// reservationRecord is the record of instance's reservation r; nil ends it.
func reservationRecord(instance string, r *api.Reservation) store.Record {
	rec := store.Record{Kind: recordReservation, Key: instance}
	if r != nil {
		rec.Value, _ = json.Marshal(r) // plain fields: it cannot fail
	}
	return rec
}

// restore rebuilds what a judge before this one knew, so that a restarted judge answers
// as it did: the current hour from the stored points (rebuildCurrentHour), then its
// records (restoreRecords). Run calls it before any batch or placement.
func (j *Judge) restore(ctx context.Context) {
	j.rebuildCurrentHour(ctx)
	j.restoreRecords(ctx)
}

// restoreRecords restores the reservations that have not expired: without them,
// placements right after a restart (a deploy) landed on the nodes that the placements
// just before it had filled. The records of expired ones are deleted. A store that
// cannot be read is logged, and the judge starts without them.
func (j *Judge) restoreRecords(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, rebuildTimeout)
	defer cancel()
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
	j.log.Info("restored the judge's records from the store", "reservations", restored, "expired", len(list)-restored)
}
