package analysis

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/lbplugins"
)

// seriesState is one series: the hour's statistics, which restart every hour, and its
// level, which carries over.
type seriesState struct {
	name     string
	labels   map[string]string
	pairs    []labelPair  // labels, to compare without ranging over a map
	labelKey string       // metric.LabelSetKey(labels), for sorting exports
	next     *seriesState // the next series whose key hashes alike (seriesIndex)
	lastTS   int64        // UnixNano of the batch of the last sample, to skip redeliveries
	wave     bool         // a wave.* series (IsWaveSeries)

	// The hour's statistics.
	count  int64
	mean   float64
	m2     float64 // Welford's sum of squared deviations
	min    float64
	max    float64
	sketch topSketch
	// The p95 is read from the sketch lazily, at most once per sample, by readers that
	// hold only the read lock (so several at once): p95Of is the count it was read at.
	// Both are atomics so that concurrent readers may each store the same value.
	p95   atomic.Uint64 // math.Float64bits
	p95Of atomic.Int64  // -1: none

	// The level.
	leveled bool // last and ewma hold a value: false only before the first sample
	last    float64
	ewma    float64
	sd      float64 // the previous hour's closing standard deviation
}

func newSeries(name string, labels map[string]string) *seriesState {
	s := &seriesState{name: name, labels: labels, pairs: pairsOf(labels), labelKey: metric.LabelSetKey(labels), sketch: newTopSketch(),
		wave: IsWaveSeries(name)}
	s.p95Of.Store(-1)
	return s
}

// add takes one sample. It must stay cheap: it runs for every point under the write lock.
func (s *seriesState) add(v, alpha float64) {
	s.count++
	d := v - s.mean
	s.mean += d / float64(s.count)
	s.m2 += d * (v - s.mean)
	if s.count == 1 {
		s.min, s.max = v, v
	} else {
		s.min = math.Min(s.min, v)
		s.max = math.Max(s.max, v)
	}
	s.last = v
	if s.leveled {
		s.ewma = alpha*v + (1-alpha)*s.ewma // continues across the hour
	} else {
		s.ewma, s.leveled = v, true
	}
	s.sketch.add(v)
}

// restartAfter makes the sample of batch time ts start the series' level anew when it
// comes longer than stale after the last (the series stopped, and its level is that of
// another time): a wave restarted after 77 s down read its old instances' count for 40 s
// more, the EWMA walking down from the level it had before (an outside trial).
func (s *seriesState) restartAfter(ts int64, stale time.Duration) {
	if s.lastTS != 0 && ts-s.lastTS > int64(stale) {
		s.leveled = false
	}
}

func (s *seriesState) stddev() float64 {
	if s.count > 1 {
		return math.Sqrt(s.m2 / float64(s.count-1))
	}
	return s.sd
}

// roll starts a new hour: the level is carried and the statistics restart. It reports
// false for a series that had no sample during the hour ending, whose carried level is
// now an hour old: the caller drops it.
func (s *seriesState) roll() (keep bool) {
	if s.count == 0 {
		return false
	}
	s.sd = s.stddev()
	s.count, s.mean, s.m2, s.min, s.max = 0, 0, 0, 0, 0
	s.sketch.clear()
	s.p95Of.Store(-1)
	return true
}

// p95Locked returns the hour's p95, reading the sketch only when a sample came since the
// last read. Callers hold the read lock at least.
func (s *seriesState) p95Locked() float64 {
	if s.count == 0 {
		return 0
	}
	if s.p95Of.Load() == s.count {
		return math.Float64frombits(s.p95.Load())
	}
	q, _ := s.sketch.quantile(0.95) // 0 when only NaN or infinite values came
	// The sketch's answer is within its relative accuracy of the true p95, which may put
	// it outside what was seen (3.96 for a constant 4): the hour's range holds it.
	q = min(max(q, s.min), s.max)
	s.p95.Store(math.Float64bits(q))
	s.p95Of.Store(s.count)
	return q
}

// current exports the series. Callers hold the read lock at least.
func (s *seriesState) current() lbplugins.Current {
	return lbplugins.Current{Count: s.count, Mean: s.mean, Stddev: s.stddev(), Min: s.min, Max: s.max,
		Last: s.last, EWMA: s.ewma, P95: s.p95Locked(), Carried: s.count == 0}
}
