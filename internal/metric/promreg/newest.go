package promreg

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Newest is a gauge of the newest timestamp its role has consumed, in Unix seconds (0
// before the first): a consumer's position in a stream of timestamped batches. A rule's
// time() minus it is how far the consumer is behind (deploy/prometheus/rules.yml). It
// only moves forward, so a redelivered older batch leaves it alone, and Observe is one
// atomic compare-and-swap: cheap on the ingest path.
type Newest struct {
	nanos atomic.Int64
	desc  *prometheus.Desc
}

// NewNewest returns a Newest gauge described by opts (its ConstLabels included).
func NewNewest(opts prometheus.GaugeOpts) *Newest {
	return &Newest{desc: prometheus.NewDesc(prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name),
		opts.Help, nil, opts.ConstLabels)}
}

// Observe moves the gauge to t when t is newer than what it holds.
func (n *Newest) Observe(t time.Time) {
	v := t.UnixNano()
	for {
		old := n.nanos.Load()
		if v <= old || n.nanos.CompareAndSwap(old, v) {
			return
		}
	}
}

// Describe implements prometheus.Collector.
func (n *Newest) Describe(ch chan<- *prometheus.Desc) { ch <- n.desc }

// Collect implements prometheus.Collector.
func (n *Newest) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(n.desc, prometheus.GaugeValue, float64(n.nanos.Load())/1e9)
}
