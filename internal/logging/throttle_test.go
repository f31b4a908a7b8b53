package logging

import (
	"testing"
	"time"
)

func TestThrottleOneLineOfAKindPerInterval(t *testing.T) {
	const every = 30 * time.Second
	th := &Throttle{Every: every}
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		kind string
		at   time.Duration
		ok   bool
		held int
	}{
		{"dial %s", 0, true, 0},
		{"dial %s", time.Second, false, 0},
		{"read %s", time.Second, true, 0}, // another kind is its own
		{"dial %s", 2 * time.Second, false, 0},
		{"dial %s", every, true, 2},
		{"dial %s", every + time.Second, false, 0},
		{"read %s", 2 * every, true, 0},
	} {
		ok, held := th.Allow(tc.kind, t0.Add(tc.at))
		if ok != tc.ok || held != tc.held {
			t.Errorf("%q at %s: %v, %d held; want %v, %d", tc.kind, tc.at, ok, held, tc.ok, tc.held)
		}
	}
}
