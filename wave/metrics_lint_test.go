package wave

import (
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// TestMetricsLint gives every wave series a value (a vector shows nothing until it has
// a child, so a scrape of a quiet wave would leave most of them out) and lints the
// registry with promlint, the rules of `promtool check metrics`. cmd/binlake's
// TestMetricsLintIntegration scrapes a running wave's /metrics over HTTP as well.
func TestMetricsLint(t *testing.T) {
	m := newMetrics()
	m.rows.WithLabelValues("i").Inc()
	m.publishErrors.WithLabelValues("i").Inc()
	lag := &capture.LagTracker{}
	lag.Acked(1.7e9, 0)
	m.lag.track("i", lag)
	m.led.Set(1)
	m.setState(InstanceStatus{ID: "i", State: cluster.StateRunning})
	m.setState(InstanceStatus{ID: "j", State: cluster.StateError, Reason: "binlog_purged"})
	m.bytes.WithLabelValues("i").Add(10)
	m.binlogRead.WithLabelValues("i").Add(120)
	m.messages.WithLabelValues("i").Add(1)
	m.batches.WithLabelValues("i").Inc()
	m.skipped.WithLabelValues("i").Inc()
	m.unreadable.WithLabelValues("i").Inc()
	m.reconnects.WithLabelValues("i").Inc()
	m.commitPos.WithLabelValues("i", "mysql-bin.000001").Set(4)
	m.commitTS.WithLabelValues("i").Set(1.7e9)
	m.instError.WithLabelValues("i").Set(1)
	m.snapshotRows.WithLabelValues("i").Set(3)
	m.snapshotTables.WithLabelValues("i").Set(0)
	m.balancer.Leader.Set(1)
	m.balancer.Moves.WithLabelValues("failover", "done").Inc()
	m.balancer.Fallbacks.WithLabelValues("no_judge").Inc()
	m.balancer.Spread.Set(2)
	m.balancer.MeanLoad.Set(3)

	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// Every collector of the struct and of the balancer's (one family each) shows a
	// series, so none escapes the lint.
	collectors, ours := 0, 0
	for _, st := range []reflect.Type{reflect.TypeFor[metrics](), reflect.TypeFor[balancer.Metrics]()} {
		for f := range st.Fields() {
			if f.Name != "reg" && f.Type.Implements(reflect.TypeFor[prometheus.Collector]()) {
				collectors++
			}
		}
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "binlake_wave_") {
			ours++
		}
	}
	if ours != collectors {
		t.Errorf("%d binlake_wave_ families gathered, the metrics struct has %d collectors: give each a series in this test", ours, collectors)
	}

	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
