package benchkit

import (
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	// 1..1000 ms, shuffled: the nearest-rank percentiles are the values themselves.
	ds := make([]time.Duration, 1000)
	for i := range ds {
		ds[i] = time.Duration((i*7919)%1000+1) * time.Millisecond
	}
	got := Summarise(ds)
	want := Latency{N: 1000, Min: time.Millisecond, Mean: 500500 * time.Microsecond,
		P50: 500 * time.Millisecond, P90: 900 * time.Millisecond, P99: 990 * time.Millisecond,
		P999: 999 * time.Millisecond, Max: 1000 * time.Millisecond}
	if got != want {
		t.Errorf("Summarise(1..1000 ms) = %+v, want %+v", got, want)
	}
	if got := Summarise(nil); got != (Latency{}) {
		t.Errorf("Summarise(nil) = %+v, want zero", got)
	}
	one := Summarise([]time.Duration{3 * time.Millisecond})
	if one.P50 != 3*time.Millisecond || one.P999 != 3*time.Millisecond || one.Max != 3*time.Millisecond || one.N != 1 {
		t.Errorf("Summarise(one) = %+v", one)
	}
	// A tail seen by fewer than 1 % of requests is above p99 but within p99.9.
	tail := make([]time.Duration, 1000)
	for i := range tail {
		tail[i] = time.Millisecond
	}
	for i := range 5 {
		tail[i] = time.Second
	}
	if s := Summarise(tail); s.P99 != time.Millisecond || s.P999 != time.Second || s.Max != time.Second {
		t.Errorf("Summarise(5 slow of 1000) = %+v: want p99 1 ms, p99.9 and max 1 s", s)
	}
}
