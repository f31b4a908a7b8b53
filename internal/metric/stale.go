package metric

import "time"

// The stale rule, one for every role: a node, or one series of it, whose last batch is
// older than a number of its reporting intervals has stopped reporting. The judge and
// its placement filters call a node stale after DefaultStaleIntervals of them; the
// alarm resolves a silent series' alert after its own count (alarm.DefaultStaleIntervals).
const (
	DefaultStaleIntervals = 3
	// DefaultInterval stands in for a batch without interval_s.
	DefaultInterval = 10 * time.Second
)

// StaleAfter is how long after its last batch a source that reports every interval
// goes stale, at intervals of them; zero or negative values take the defaults.
func StaleAfter(interval time.Duration, intervals float64) time.Duration {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if intervals <= 0 {
		intervals = DefaultStaleIntervals
	}
	return time.Duration(intervals * float64(interval))
}

// Stale reports whether a source last heard from at last (zero: never) is stale at now.
func Stale(last, now time.Time, interval time.Duration, intervals float64) bool {
	return last.IsZero() || now.Sub(last) > StaleAfter(interval, intervals)
}
