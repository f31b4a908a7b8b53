package wave

import (
	"context"
	"log/slog"
	"time"

	"github.com/binlake/binlake/wave/cluster"
)

// pollSnapshotRequests hands the capture the instance's snapshot request whenever it
// changes (and once when the leadership starts): the capture ignores the request whose
// progress the offset already carries.
func (w *Wave) pollSnapshotRequests(ctx context.Context, id string, out chan<- cluster.SnapshotRequest, log *slog.Logger) {
	t := time.NewTicker(w.opts.PollInterval)
	defer t.Stop()
	last := ""
	for {
		req, ok, err := cluster.ReadSnapshotRequest(ctx, w.opts.Coord, id)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("read the snapshot request", "err", err)
		case ok && req.ID != last:
			select {
			case out <- req:
				last = req.ID
			default: // the capture has not taken the previous one yet
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
