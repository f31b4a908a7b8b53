package logging

import (
	"sync"
	"time"
)

// Throttle lets one log line per kind through per Every, and counts the ones it held
// back, to be said with the next line of that kind: a condition that repeats many times
// a second (a library's retries, a stream of batches that cannot be decoded) is said
// once in a while, with how often, instead of burying every other line.
type Throttle struct {
	Every time.Duration

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

// maxThrottleKinds bounds the kinds a Throttle remembers.
const maxThrottleKinds = 1024

// Allow reports whether a line of kind may be logged at now, and how many of that kind
// were held back since the last one logged.
func (t *Throttle) Allow(kind string, now time.Time) (ok bool, held int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, seen := t.last[kind]; seen && now.Sub(last) < t.Every {
		t.held[kind]++
		return false, 0
	}
	if t.last == nil || len(t.last) >= maxThrottleKinds {
		t.last, t.held = map[string]time.Time{}, map[string]int{} // a bound all the same
	}
	t.last[kind] = now
	held = t.held[kind]
	delete(t.held, kind)
	return true, held
}
