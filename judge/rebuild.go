package judge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/binlake/binlake/judge/store"
)

// Bounds of the restart rebuild. The level a plugin reads is an EWMA that forgets a
// sample within a few dozen batches, so ten minutes before the hour are enough to carry
// it across xx:00 as a running judge would; the previous hour's own statistics are
// discarded at the rollover anyway.
const (
	rebuildLead    = 10 * time.Minute
	rebuildTimeout = 2 * time.Minute
	rebuildLogStep = 5 * time.Second
)

// rebuildCurrentHour replays the stored points of the current hour (and the last
// minutes of the previous one) into the incremental analysis, so that a restarted judge
// answers as it did before. It runs before any batch is ingested; a store that cannot be
// read is logged and the judge starts from live traffic, as before.
//
// The same scan gives the load model its window of samples (rebalance.fit_window, which
// reaches further back than the hour), so that a restarted judge prices work as it did.
// It reports whether the store answered its first read (the refresh, within
// restoreReadTimeout).
func (j *Judge) rebuildCurrentHour(ctx context.Context) (answered bool) {
	now := j.now()
	incFrom := now.UTC().Truncate(time.Hour).Add(-rebuildLead)
	from := incFrom
	if w := now.Add(-j.model.Window()); w.Before(from) {
		from = w
	}
	ctx, cancel := context.WithTimeout(ctx, rebuildTimeout)
	defer cancel()
	start := time.Now()
	lastLog := start
	var points, skipped, dropped int
	states := stateReplay{} // the wave instances' states, for the status page
	j.log.Info("rebuilding the current hour and the load model's window from the store", "from", from, "to", now.Add(maxAhead),
		"hour_from", incFrom, "fit_window", j.model.Window())
	// Points written within the store's refresh interval before the restart are durable
	// but not yet searchable: make them so first.
	rctx, rcancel := context.WithTimeout(ctx, restoreReadTimeout)
	err := j.o.Store.Refresh(rctx)
	rcancel()
	answered = err == nil
	if err == nil {
		// As far ahead as the judge admits a batch (admit): a node whose clock runs
		// ahead has its latest batches, or all of them, dated past the judge's clock, and
		// a scan that stopped at now left it out of GET /v1/nodes until its next batch.
		err = j.o.Store.Scan(ctx, from, now.Add(maxAhead+time.Second), func(chunk []store.Point) error {
			points += len(chunk)
			if slices.ContainsFunc(chunk, implausible) {
				n := len(chunk)
				chunk = slices.DeleteFunc(slices.Clone(chunk), implausible)
				dropped += n - len(chunk)
			}
			j.model.Replay(chunk)
			if i, ok := slices.BinarySearchFunc(chunk, incFrom, func(p store.Point, t time.Time) int { return p.TS.Compare(t) }); ok || i < len(chunk) {
				skipped += j.inc.Replay(chunk[i:])
				states.add(chunk[i:])
			}
			if time.Since(lastLog) >= rebuildLogStep {
				lastLog = time.Now()
				j.log.Info("rebuilding the current hour", "points", points, "elapsed", time.Since(start).Round(time.Second))
			}
			return nil
		})
	}
	j.model.EndReplay()
	states.observe(&j.states) // what was read, also of a scan that failed part way
	j.changes.Add(1)
	if err != nil {
		j.log.Warn("rebuilding the current hour failed; the analysis continues from live batches",
			"err", fmt.Errorf("judge: %w", err), "points_replayed", points)
		return answered
	}
	j.log.Info("rebuilt the current hour and the load model's window from the store", "points", points, "not_analysed", skipped,
		"nodes", len(j.inc.NodeIDs()), "took", time.Since(start).Round(time.Millisecond))
	if dropped > 0 {
		j.log.Warn("stored points outside what a host reports were left out of the rebuild (stored before the judge refused them)", "points", dropped)
	}
	return true
}
