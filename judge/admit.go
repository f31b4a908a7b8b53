package judge

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// What the judge admits beyond the metric contract. The contract takes any finite value
// and any time to 9999; the judge's models divide and multiply what the agents report,
// and a value far outside what a host can show (a wave.tps of 1e300) overflowed a plan's
// figures to infinity: every POST /v1/rebalance and the node's GET /v1/nodes/{id}
// answered 500, and again after a restart, from the store. A batch dated ahead of the
// judge's clock made its node look idle (its figures not yet begun) and win placements.
// So a batch whose time is past the judge's clock by more than maxAhead, or with a point
// of a metric the judge models outside that metric's range, is refused as a whole
// (400 on the API, counted and skipped on the bus), naming the point.

// maxAhead is how far past the judge's clock a batch may be dated (metric.MaxAhead).
const maxAhead = metric.MaxAhead

// valueRange is the values a metric the judge models can take; whole ones only when
// whole (a count, a state).
type valueRange struct {
	lo, hi float64
	what   string
	whole  bool
}

// refuses says whether r refuses v.
func (r valueRange) refuses(v float64) bool {
	return v < r.lo || v > r.hi || r.whole && v != math.Trunc(v)
}

// ranges are the metrics the judge's placements, costs and load model read, with what a
// host can report of each (percentages with a point of slack for rounding): every
// resource of lbplugins (TestEveryModelledMetricHasARange). The network's had none: a
// net.rx_bps of −10³⁰⁰ was taken, and won leastload its best network score.
var ranges = map[string]valueRange{
	metric.CPUCores:    {0.01, 100_000, "cores", false},
	metric.CPUUtil:     {0, 101, "a percentage", false},
	metric.MemUsedPct:  {0, 101, "a percentage", false},
	metric.DiskUsedPct: {0, 101, "a percentage", false},
	metric.Load1:       {0, 1e6, "runnable threads", false},
	metric.Load5:       {0, 1e6, "runnable threads", false},
	metric.Load15:      {0, 1e6, "runnable threads", false},
	// Bytes a second through every interface but lo: 10¹³ is 80 Tbit/s.
	metric.NetRxBps:            {0, 1e13, "bytes/s", false},
	metric.NetTxBps:            {0, 1e13, "bytes/s", false},
	metric.WaveCPUCores:        {0, 100_000, "cores", false},
	metric.WaveTPS:             {0, 1e12, "rows/s", false},
	metric.WaveBytesPerS:       {0, 1e14, "bytes/s", false},
	metric.WaveBinlogBytesPerS: {0, 1e14, "bytes/s", false},
	metric.WaveInstances:       {0, 1e6, "instances", true},
	metric.WaveInstanceRunning: {0, 1, "a state: 1 running, 0 not", true},
}

// aheadBy says how far ahead of now t is: rounded to the second, or, past what a
// time.Duration holds (Sub saturates at 292 years), in years, not the saturated figure
// as if it were real (a year 2999 read "more than 292 years": an outside trial).
func aheadBy(t, now time.Time) string {
	d := t.Sub(now)
	if d == math.MaxInt64 {
		return fmt.Sprintf("about %d years", t.Year()-now.Year())
	}
	return d.Round(time.Second).String()
}

// admit reports what the judge refuses in b (a batch the metric contract accepted), or
// nil.
func (j *Judge) admit(b metric.Batch) error {
	if ahead := b.TS.Sub(j.now()); ahead > maxAhead {
		return fmt.Errorf("ts %s is %s ahead of the judge's clock (at most %s)", b.TS.UTC().Format(time.RFC3339), aheadBy(b.TS, j.now()), maxAhead)
	}
	cores, process := -1.0, -1.0
	for i, p := range b.Points {
		if r, ok := ranges[p.Name]; ok && r.refuses(p.Value) {
			span := fmt.Sprintf("%g to %g", r.lo, r.hi)
			if r.whole {
				span = "a whole number from " + span
			}
			return fmt.Errorf("point %d: %s %v is outside what a host reports (%s, %s)", i, p.Name, p.Value, r.what, span)
		}
		if len(p.Labels) == 0 {
			switch p.Name {
			case metric.CPUCores:
				cores = p.Value
			case metric.WaveCPUCores:
				process = p.Value
			}
		}
	}
	if i, k := duplicate(b.Points); k >= 0 {
		return fmt.Errorf("points %d and %d are both %s: a batch holds one value of a series at its time", i, k, seriesName(b.Points[k]))
	}
	if cores <= 0 && process > 0 { // a batch without them: the node's last
		cores, _ = j.model.Cores(b.Node)
	}
	if cores > 0 && process > cores*overCores {
		// A process cannot use more cores than its host has: one of the two is wrong,
		// and a fit on it priced the wave's work at several times the fleet's.
		return fmt.Errorf("%s %v is over twice the host's %s %v: a process cannot use more cores than its host has", metric.WaveCPUCores, process, metric.CPUCores, cores)
	}
	return nil
}

// overCores is how far past its host's cores a process's CPU may read before the batch
// is refused: the agent's rate divides the process's CPU time by the time between its
// scrapes, and on a pegged host a late answer to one scrape puts a pegged wave over its
// cores by the delay's share of the interval (a refusal then would drop a busy node's
// figures when they matter most). Twice is past any such skew.
const overCores = 2

// implausible reports whether a stored point is one admit would have refused for its
// value: a store written before the judge refused them keeps them, and a restarted
// judge leaves them out of what it rebuilds.
func implausible(p store.Point) bool {
	r, ok := ranges[p.Name]
	return ok && r.refuses(p.Value)
}

// duplicate finds two points of one series (name and labels) in ps: the first's index
// and the second's, or k -1. The analysis took the first and the store kept the last,
// so a node's figure changed across a restart (an outside trial). Pairwise for the
// batches agents send (tens of points), by a map past that.
func duplicate(ps []metric.Point) (i, k int) {
	if len(ps) <= 64 {
		for k := 1; k < len(ps); k++ {
			for i := range k {
				if ps[i].Name == ps[k].Name && maps.Equal(ps[i].Labels, ps[k].Labels) {
					return i, k
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, len(ps))
	for k, p := range ps {
		key := seriesName(p)
		if i, ok := seen[key]; ok {
			return i, k
		}
		seen[key] = k
	}
	return -1, -1
}

// seriesName is a point's series as PromQL writes one: name{k="v",…}, the labels sorted.
func seriesName(p metric.Point) string {
	var b strings.Builder
	b.WriteString(p.Name)
	b.WriteByte('{')
	for j, k := range slices.Sorted(maps.Keys(p.Labels)) {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, p.Labels[k])
	}
	b.WriteByte('}')
	return b.String()
}
