package promreg

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// Every role's /metrics carries the runtime, process and GC-pause series its dashboards read,
// and they pass Prometheus's own lint.
func TestNewServesRuntimeSeries(t *testing.T) {
	reg := New()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "go_sched_pauses_total_gc_seconds"} {
		if !have[name] {
			t.Errorf("registry lacks %s", name)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// Newest holds the newest time observed: an older one (a redelivery) does not move it back.
func TestNewestOnlyMovesForward(t *testing.T) {
	n := NewNewest(prometheus.GaugeOpts{Name: "x_newest_batch_timestamp_seconds", Help: "h"})
	if got := testutil.ToFloat64(n); got != 0 {
		t.Fatalf("before any: %v, want 0", got)
	}
	t0 := time.Unix(1_700_000_000, 500_000_000)
	for _, c := range []struct {
		observe time.Time
		want    float64
	}{
		{t0, 1_700_000_000.5},
		{t0.Add(-time.Hour), 1_700_000_000.5}, // older: kept
		{t0.Add(2 * time.Second), 1_700_000_002.5},
	} {
		n.Observe(c.observe)
		if got := testutil.ToFloat64(n); got != c.want {
			t.Fatalf("after %v: %v, want %v", c.observe, got, c.want)
		}
	}
}
