package wave

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// errResnapshot ends the term of an instance stopped on a purged binlog once its offset
// was moved to the source's end for a snapshot: the next term captures from there and
// takes the snapshot request.
var errResnapshot = errors.New("restarting at the source's end with the snapshot requested")

// awaitResnapshot holds an instance stopped on a purged binlog (its resume position is
// gone from the source), or on a position the source cannot send from, until an operator asks for a snapshot (`binlake instance
// snapshot`), a request other than the one its offset already carries; it then moves the
// offset to the source's current end, without snapshot progress, and returns true: the
// next term resumes from there, and its capture takes the request as new, so that the
// tables' rows come as snapshot messages while the binlog streams on from the end. The
// changes in the purged part are not sent as such: a row they changed comes as its
// current state, a row they deleted does not come at all. It returns false when ctx ends
// or the leadership is lost first.
func (w *Wave) awaitResnapshot(ctx context.Context, inst *cluster.Instance, lead coord.Leadership, log *slog.Logger) bool {
	tick := time.NewTicker(w.opts.PollInterval)
	defer tick.Stop()
	said := false
	for {
		if w.resnapshot(ctx, inst, lead, log, &said) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-lead.Lost():
			return false
		case <-tick.C:
		}
	}
}

// resnapshot is one look at the snapshot request; said: the wait was logged.
func (w *Wave) resnapshot(ctx context.Context, inst *cluster.Instance, lead coord.Leadership, log *slog.Logger, said *bool) bool {
	id := inst.ID
	off, version, ok, err := cluster.ReadOffset(ctx, w.opts.Coord, id)
	if err != nil {
		log.Warn("read the offset of the stopped instance", "err", err)
		return false
	}
	req, pending, err := cluster.ReadSnapshotRequest(ctx, w.opts.Coord, id)
	if err != nil {
		log.Warn("read the snapshot request", "err", err)
		return false
	}
	if !pending || (ok && off.Snapshot != nil && off.Snapshot.Request == req.ID) {
		if !*said {
			*said = true
			log.Info("binlog purged: waiting for `binlake instance snapshot`, which restarts the instance at the source's current end with a snapshot, or for its removal")
		}
		return false
	}
	password, err := w.opts.Password(inst.Source)
	if err != nil {
		log.Warn("snapshot requested: the source's password", "err", err)
		return false
	}
	end, err := capture.CurrentPosition(ctx, inst.Source, password.Reveal())
	if err != nil {
		log.Warn("snapshot requested: read the source's current position; trying again", "err", err)
		return false
	}
	end.Rows = off.Rows
	data, _ := json.Marshal(end)
	if isClosed(lead.Lost()) {
		return false
	}
	if !ok {
		version = coord.NoVersion
	}
	if _, err := w.opts.Coord.Put(ctx, cluster.OffsetKey(id), data, version); err != nil {
		log.Warn("snapshot requested: move the offset to the source's end", "err", err)
		return false
	}
	what := "every subscribed table"
	if len(req.Tables) > 0 {
		what = "only the tables named: the others' changes in the purged binlog are lost"
	}
	log.Warn("binlog purged: restarting at the source's current end with the snapshot requested; rows deleted in the purged binlog are not sent",
		"request", req.ID, "tables", what, "purged_at", off.String(), "position", end.String())
	return true
}
