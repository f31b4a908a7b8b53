package backoff

import (
	"testing"
	"time"
)

// within reports whether got is want give or take Jitter.
func within(got, want time.Duration) bool {
	return float64(got) >= float64(want)*(1-Jitter)-1 && float64(got) <= float64(want)*(1+Jitter)+1
}

// TestNewDoublesToTheLimitAndResets: the waits double from the first up to the limit,
// each within the jitter, and Reset starts again from the first.
func TestNewDoublesToTheLimitAndResets(t *testing.T) {
	b := New(100*time.Millisecond, time.Second)
	for i, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		if got := b.NextBackOff(); !within(got, want*time.Millisecond) {
			t.Errorf("wait %d: %v, want %v ± %.0f%%", i+1, got, want*time.Millisecond, Jitter*100)
		}
	}
	b.Reset()
	if got := b.NextBackOff(); !within(got, 100*time.Millisecond) {
		t.Errorf("after Reset: %v, want the first wait", got)
	}
}

// TestScheduleByAttempt: attempt n waits what the nth NextBackOff would; odd bounds are
// made usable rather than a zero or shrinking wait.
func TestScheduleByAttempt(t *testing.T) {
	s := Schedule(100*time.Millisecond, time.Second)
	for attempt, want := range map[int]time.Duration{1: 100, 2: 200, 3: 400, 10: 1000, 0: 100} {
		if got := s(attempt); !within(got, want*time.Millisecond) {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want*time.Millisecond)
		}
	}
	if got := Schedule(0, 0)(5); !within(got, time.Millisecond) {
		t.Errorf("no bounds: %v, want a millisecond", got)
	}
	if got := Schedule(time.Second, time.Millisecond)(3); !within(got, time.Second) {
		t.Errorf("limit below first: %v, want the first", got)
	}
}
