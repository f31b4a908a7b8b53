package metric

import (
	"testing"
	"time"
)

func TestStale(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		last      time.Time
		interval  time.Duration
		intervals float64
		now       time.Time
		want      bool
	}{
		{"never heard from", time.Time{}, 10 * time.Second, 3, t0, true},
		{"within 3 intervals", t0, 10 * time.Second, 3, t0.Add(30 * time.Second), false},
		{"past 3 intervals", t0, 10 * time.Second, 3, t0.Add(30*time.Second + 1), true},
		{"defaults: 3 × 10 s", t0, 0, 0, t0.Add(31 * time.Second), true},
		{"defaults, within", t0, 0, 0, t0.Add(29 * time.Second), false},
		{"own count", t0, time.Minute, 5, t0.Add(4 * time.Minute), false},
		{"fractional count", t0, 10 * time.Second, 1.5, t0.Add(16 * time.Second), true},
	}
	for _, tc := range tests {
		if got := Stale(tc.last, tc.now, tc.interval, tc.intervals); got != tc.want {
			t.Errorf("%s: Stale = %v, want %v", tc.name, got, tc.want)
		}
	}
}
