package alarm

import (
	"time"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// Lookback is how far before its first message of a partition a process reads the
// partition's history back (see History): the longest that a policy looks back, its time
// window, or the points before the newest that its count window needs (all(#3) two,
// diff(#2) two) at the slowest interval an agent is expected to keep (a minute), an hour
// at most. Zero when no policy looks back past its newest point: nothing is read then.
func (e *Engine) Lookback() time.Duration { return Lookback(e.o.Policies) }

// Lookback is Engine.Lookback of the policies.
func Lookback(pols []*policy.Policy) time.Duration {
	var lb time.Duration
	for _, p := range pols {
		if p.Cond == nil {
			continue // a nodata policy: silence, no points
		}
		// At most an hour for a count window: all(#1000) would read 16 hours back.
		lb = max(lb, p.Cond.Window, min(time.Duration(max(p.Cond.Need()-1, 0))*time.Minute, time.Hour))
	}
	return lb
}

// Warm adds a batch read back from the stream's history (History) to its series,
// without evaluating a condition or touching an alert: the points fill the windows that
// the next live point's evaluation reads, as the process would have held them had it
// been up. A point no newer than its series' newest is skipped, as a redelivered one is:
// history only ever comes before what the process holds, or fills a gap after it.
// It returns how many points it added.
func (e *Engine) Warm(b metric.Batch) int {
	ts := pointTime(b.TS)
	if ts.IsZero() {
		return 0
	}
	sh := e.shardOf(b.Node)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Seen now, so that a series the history holds and the stream no longer carries is
	// forgotten an hour on like any silent one (gc), not at once; a replay's clock has not
	// begun while it warms: the batch's own time then.
	seen := e.now()
	if seen.Before(ts) {
		seen = ts
	}
	interval := time.Duration(b.IntervalS * float64(time.Second))
	added := 0
	for i := range b.Points {
		pt := &b.Points[i]
		pols := e.byMetric[pt.Name]
		if len(pols) == 0 {
			continue
		}
		s := sh.seriesFor(b.Node, pt, pols)
		if len(s.slots) == 0 {
			continue
		}
		if n := len(s.samples); n > 0 && !ts.After(s.samples[n-1].TS) {
			continue
		}
		s.add(policy.Sample{TS: ts, Value: pt.Value})
		s.lastSeen, s.lastTS, s.warm = seen, ts, true
		if interval > 0 {
			s.interval = interval
		}
		added++
	}
	return added
}

// Unwarm drops the points Warm gave the series of the given nodes that no live point has
// reached yet: a read back cut short holds the oldest part of the windows only, and the
// next live point, evaluated on it, would read the gap as the window (an outside trial
// paged on a half-read 30-minute window). The windows then start from the stream, as
// without a history. It returns how many points it dropped.
func (e *Engine) Unwarm(nodes []string) int {
	dropped := 0
	for _, node := range nodes {
		sh := e.shardOf(node)
		sh.mu.Lock()
		for _, s := range sh.series {
			if s.node != node || !s.warm || s.live {
				continue
			}
			dropped += len(s.samples)
			s.base += int64(len(s.samples))
			s.buf = s.buf[:0]
			s.samples = s.buf
			s.warm = false
		}
		sh.mu.Unlock()
	}
	return dropped
}

// pointTime is a batch's time as the engine keeps it: to the millisecond, as the judge's
// store keeps it (and Prometheus its samples), so that a batch read back from the store
// and the same batch redelivered on the stream are one point, not two a few hundred
// microseconds apart (counted twice in a window after a restart: an outside trial).
func pointTime(ts time.Time) time.Time { return ts.Truncate(time.Millisecond) }
