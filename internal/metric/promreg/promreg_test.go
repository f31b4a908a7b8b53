package promreg

import (
	"testing"

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
