// Package promreg builds the Prometheus registry every role serves on /metrics: the role's
// own series next to the Go runtime's and the process's, so that one dashboard panel for
// memory, goroutines or file descriptors works for each role alike.
package promreg

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// New returns a registry holding the Go runtime and process collectors. The runtime's
// stop-the-world pause histogram is added to the default Go series: it is what tells a
// GC-bound role from a CPU-bound one (the agent's wave collector reports it).
func New() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/pauses/total/gc:seconds$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}
