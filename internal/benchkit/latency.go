package benchkit

import (
	"math"
	"slices"
	"time"
)

// Latency summarises request durations. The percentiles are nearest-rank over the
// sorted sample (every request is kept: at 20,000 req/s for 15 s that is 2.4 MB), so
// they are exact for the run, with no histogram bucket error.
type Latency struct {
	N                        int
	Min, Mean                time.Duration
	P50, P90, P99, P999, Max time.Duration
}

// Summarise sorts ds in place and returns its summary; the zero Latency when empty.
func Summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Latency{
		N: len(ds), Min: ds[0], Mean: sum / time.Duration(len(ds)),
		P50: rank(ds, 50), P90: rank(ds, 90), P99: rank(ds, 99), P999: rank(ds, 99.9), Max: ds[len(ds)-1],
	}
}

// rank is the nearest-rank percentile p (0 < p ≤ 100) of sorted: the smallest value
// with at least p % of the sample at or below it.
func rank(sorted []time.Duration, p float64) time.Duration {
	// The epsilon keeps 1000×99.9/100 from rounding up past 999 in binary floating point.
	i := int(math.Ceil(float64(len(sorted))*p/100-1e-9)) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
