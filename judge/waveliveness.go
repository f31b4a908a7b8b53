package judge

import (
	"fmt"
	"time"

	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
)

// waveStatusOf says whether node n's wave is up at now (ok false: n has reported no
// wave.* series, an agent-only host such as the judge's or the alarm's, which is no
// wave). A wave is down when its node is (the node's batches stopped), or when its
// wave.* series stopped while the node's batches go on, after the same window
// (j.live: placement.stale_intervals of the node's interval): a wave process that
// crashed on a host that stayed up was live to the judge for as long as its agent
// reported the host, and GET /v1/rebalance planned no failover of its instances.
func (j *Judge) waveStatusOf(n analysis.Node, now time.Time) (api.WaveStatus, bool) {
	return j.waveStatus(n.Liveness(), now)
}

// waveStatus is waveStatusOf of the node whose liveness is n (analysis.Liveness: what
// its series say of its wave, without them), for the check that runs every 5 s
// (checkWaves), which reads no series.
func (j *Judge) waveStatus(n analysis.Liveness, now time.Time) (api.WaveStatus, bool) {
	if !n.Wave {
		return api.WaveStatus{}, false
	}
	last := n.WaveTS
	// The series' times are the batches' own (the agent's clock); the node's offset
	// puts the wave's last report on the judge's clock, where the node's staleness is
	// judged. The offset in whole seconds (analysis.Node.Offset), not the last batch's
	// delivery (LastSeen against LastBatchTS): that one moved by milliseconds with every
	// batch, and a down wave's last_seen with it from read to read though no sample had
	// come. It is how a restored node's LastSeen is dated too (Incremental.Declare). A
	// batch without a timestamp dates no series: the wave is then as recent as the node.
	seen := n.LastSeen
	if !last.IsZero() && !n.LastBatchTS.IsZero() {
		seen = last.Add(n.Offset)
	}
	s := api.WaveStatus{Live: true, LastSeen: seen.UTC()}
	switch {
	case !j.live(n.LastSeen, n.Interval, now):
		s.Live, s.Down = false, api.WaveDownNodeStale
		s.DownNote = fmt.Sprintf("the node's batches stopped at %s", n.LastSeen.UTC().Format(time.RFC3339))
	case !j.live(seen, n.Interval, now) && (last.IsZero() || n.LastBatchTS.After(last)):
		// Silent only when the host sent a batch after the wave's last metrics: when its
		// last batch carried them, the node is what stopped, and the wave's time (on the
		// judge's clock by a whole-second offset) could fall out of the window up to a
		// second before the node's, which called it "silent while the host reports" for
		// that moment (an outside trial).
		s.Live, s.Down = false, api.WaveDownSilent
		s.DownNote = fmt.Sprintf("the wave's metrics stopped at %s while the host reports (last batch %s)",
			s.LastSeen.Format(time.RFC3339), n.LastSeen.UTC().Format(time.RFC3339))
	}
	return s, true
}

// lastWaveTS is the batch time of node n's newest wave.* sample (zero when its
// batches carried no time); ok false when n has no wave.* series.
func lastWaveTS(n analysis.Node) (last time.Time, ok bool) {
	l := n.Liveness()
	return l.WaveTS, l.Wave
}

// asOfWave is node n as its wave's last report left it: a wave whose series stopped
// still runs, as far as the judge knows, the instances it last said it ran (costsOf
// counts only the series in the node's recent batches, which had none of a silent
// wave's), so that a plan fails them over as it does a dead node's.
func asOfWave(n analysis.Node) analysis.Node {
	last, ok := lastWaveTS(n)
	if !ok || last.IsZero() {
		return n
	}
	if last.Before(n.LastBatchTS) {
		n.LastBatchTS = last
	}
	return n
}
