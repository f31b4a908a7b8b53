package wave

import (
	"context"
	"encoding/json"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// The lag in instances/<id>/status (RecordedStatus.Lag), which `binlake instance show`
// reads on any host: the wave leading the instance writes it with each state it
// records, and rewrites the record when the lag computed from it strays lagRecordSlack
// from its own.

// putStatus writes instance id's status record: rec when given (a new state), else the
// record last written, with the lag as it is now. Nothing is written before a state is.
func (w *Wave) putStatus(id string, rec *cluster.RecordedStatus) {
	w.recordMu.Lock()
	defer w.recordMu.Unlock()
	if rec != nil {
		w.records[id] = *rec
	}
	r, ok := w.records[id]
	if !ok {
		return
	}
	l := w.m.lag.tracker(id)
	var ls cluster.LagState
	if l != nil {
		if ls = l.State(); ls.Known() {
			r.Lag = &ls
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A removed instance is not brought back as an empty node holding its status, nor is
	// one being removed (its definition withdrawn) given a status its removal must delete.
	if v, err := w.opts.Coord.Get(ctx, cluster.InstanceKey(id)); err != nil || len(v.Data) == 0 {
		w.log.Debug("instance status not written: the instance is removed or being removed", "instance", id, "err", err)
		return
	}
	data, _ := json.Marshal(r)
	if _, err := w.opts.Coord.Put(ctx, cluster.StatusKey(id), data, coord.AnyVersion); err != nil {
		w.log.Debug("write instance status", "instance", id, "err", err)
		return
	}
	if l != nil {
		l.Wrote(ls)
	}
}

// dropRecord forgets the record last written for id (its runner stopped).
func (w *Wave) dropRecord(id string) {
	w.recordMu.Lock()
	defer w.recordMu.Unlock()
	delete(w.records, id)
}

// recordLag keeps the lag in instance id's status record close to the wave's own (l)
// for as long as this term leads it, so that `binlake instance show` on any host says
// what /status says. It looks every second and rewrites the record only when the lag
// computed from it has strayed lagRecordSlack from the wave's: once when an idle
// instance becomes caught up, every couple of seconds while a busy one's binlog time
// moves, never while nothing changes (a lag growing behind a stalled sink grows in
// the record's reader too).
func (w *Wave) recordLag(ctx context.Context, id string, l *capture.LagTracker, lost <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if isClosed(lost) {
			return // another wave may lead it now: its record is that wave's to write
		}
		if l.Stale(time.Now()) {
			w.putStatus(id, nil)
		}
	}
}
