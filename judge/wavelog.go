package judge

import (
	"context"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// waveLogEvery is how often the judge looks for waves that went down or came back
// (waveLogLoop): a transition is logged within it.
const waveLogEvery = 5 * time.Second

// waveWatch is what the judge last logged of each wave's liveness (checkWaves), so that
// a transition makes one line, not one per check.
type waveWatch struct {
	mu    sync.Mutex
	waves map[string]waveSeen // by node: the waves of the last check
}

type waveSeen struct {
	down  string    // why it is down (api.WaveDown*); empty while it is live
	since time.Time // when the judge first counted it down, on its clock
}

// checkWaves logs each wave whose liveness changed since the last check (waveStatusOf,
// the rule of GET /v1/nodes, GET /v1/rebalance and the status page): a warning when it
// goes down, with the reason and the note (and again when the reason changes: its
// metrics stopped, then its node's batches did), and a line when it is live again, with
// how long the judge counted it down. Its log said nothing while a wave went silent,
// its node stale, and back. A node that never reported a wave.* series (an agent-only
// host) is no wave and never logged; one that was and no longer is listed (forgotten,
// or its wave series dropped at the hour) is forgotten without a line.
//
// It reads each node's liveness (Incremental.Liveness), not its series: copying every
// node's series (Incremental.Nodes, as GET /v1/rebalance does) took 6–7 ms and 3.8 MB a
// check on 1,000 waves running 10,000 instances, every 5 s, the copy under the
// analysis' read lock that every batch's Observe waits for (BenchmarkWaveLivenessCheck,
// BenchmarkIngestWhileLivenessCheck; now 0.15 ms and 250 kB).
func (j *Judge) checkWaves() {
	now := j.now()
	nodes := j.inc.Liveness()
	w := &j.waveWatch
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.waves
	w.waves = make(map[string]waveSeen, len(prev))
	for _, n := range nodes {
		ws, ok := j.waveStatus(n, now)
		if !ok {
			continue
		}
		was, known := prev[n.Node]
		cur := waveSeen{down: ws.Down}
		switch {
		case ws.Live:
			if known && was.down != "" {
				j.log.Info("wave live again", "node", n.Node, "down_for", now.Sub(was.since).Round(time.Second))
			}
		case known && was.down == ws.Down:
			cur.since = was.since
		default:
			cur.since = now
			if known && was.down != "" {
				cur.since = was.since // down all along, for another reason now
			}
			j.log.Warn("wave down", "node", n.Node, "reason", ws.Down, "note", ws.DownNote)
		}
		w.waves[n.Node] = cur
	}
}

// waveLogLoop runs checkWaves every waveLogEvery, on any clock (a transition is
// logged when the clock says it happened). It begins once a wave's window has passed
// since the judge started: a restored judge's nodes are as stale as when it stopped
// until their next batch, and each wave would have been logged down, then live again,
// at every restart.
func (j *Judge) waveLogLoop(ctx context.Context) {
	grace := metric.StaleAfter(j.o.Filters.DefaultInterval, j.o.Filters.StaleIntervals)
	for _, n := range j.inc.Liveness() {
		grace = max(grace, metric.StaleAfter(n.Interval, j.o.Filters.StaleIntervals))
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		j.checkWaves()
		t.Reset(waveLogEvery)
	}
}
