package kafka

import (
	"sync"
	"time"
)

// warnEvery is how often one kind of kafka-go warning is logged while it repeats: during
// a broker outage kafka-go retries every few hundred milliseconds and says so in five
// lines a retry, which buried the lines that said what the process did about it.
const warnEvery = 30 * time.Second

// throttle lets one line per kind (kafka-go's format string) through per warnEvery, and
// counts the ones it held back, to be said with the next line of that kind.
type throttle struct {
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func newThrottle() *throttle {
	return &throttle{last: map[string]time.Time{}, held: map[string]int{}}
}

// allow reports whether a line of kind may be logged at now, and how many of that kind
// were held back since the last one logged.
func (t *throttle) allow(kind string, now time.Time) (ok bool, held int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, seen := t.last[kind]; seen && now.Sub(last) < warnEvery {
		t.held[kind]++
		return false, 0
	}
	if len(t.last) >= maxThrottleKinds {
		clear(t.last) // kafka-go has a few dozen formats; a bound all the same
	}
	t.last[kind] = now
	held = t.held[kind]
	delete(t.held, kind)
	return true, held
}

// maxThrottleKinds bounds the kinds the throttle remembers.
const maxThrottleKinds = 1024
