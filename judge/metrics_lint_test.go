package judge

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"
)

// TestMetricsLint gives every labelled judge series a value (a vector shows nothing
// until it has a child, so a scrape of a quiet judge would leave some out) and lints the
// judge's registry with promlint, the rules of `promtool check metrics`. cmd/binlake's
// TestMetricsLintIntegration scrapes a running judge's /metrics over HTTP as well.
func TestMetricsLint(t *testing.T) {
	j, _ := newJudge(t, nil)
	j.m.batches.WithLabelValues("bus").Inc()
	j.m.points.WithLabelValues("bus").Add(2)
	j.m.decodeErrors.WithLabelValues("http").Inc()
	j.m.subscribeErrors.Inc()
	j.m.placements.WithLabelValues("leastload", "ok").Inc()
	j.m.placementSeconds.WithLabelValues("leastload").Observe(0.001)
	j.m.snapshotBuilds.Inc()

	mfs, err := j.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"binlake_judge_batches_total", "binlake_judge_points_total", "binlake_judge_decode_errors_total",
		"binlake_judge_subscribe_errors_total", "binlake_judge_placements_total", "binlake_judge_placement_seconds",
		"binlake_judge_placement_snapshots_total", "binlake_judge_rebalance_plans_total", "binlake_judge_store_points_written_total",
		"binlake_judge_newest_batch_timestamp_seconds", "binlake_judge_store_buffer_capacity_points",
		"go_goroutines", "process_cpu_seconds_total"} {
		if !names[n] {
			t.Errorf("%s not gathered", n)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// The rules' ingest lag reads binlake_judge_newest_batch_timestamp_seconds: it follows the
// newest batch ingested per source, and a redelivered older batch leaves it alone.
func TestNewestBatchGauge(t *testing.T) {
	j, _ := newJudge(t, nil)
	newest := func(src string) float64 { return testutil.ToFloat64(j.m.newestBatch[src]) }
	require.NoError(t, j.Ingest(load("n1", t0.Add(time.Minute), 10, 10), sourceBus))
	require.NoError(t, j.Ingest(load("n2", t0, 10, 10), sourceBus)) // older: kept
	require.NoError(t, j.Ingest(load("n1", t0.Add(-time.Hour), 10, 10), sourceHTTP))
	require.Equal(t, float64(t0.Add(time.Minute).Unix()), newest(sourceBus))
	require.Equal(t, float64(t0.Add(-time.Hour).Unix()), newest(sourceHTTP))
}

// TestDecodeErrorsExportedAtZero: every source's decode errors are exported at 0 before
// any batch: an increase over a series born at 1 (its first bad batch) is none, and
// BinlakeMetricBatchesUndecodable stayed silent through a judge's first burst.
func TestDecodeErrorsExportedAtZero(t *testing.T) {
	j, _ := newJudge(t, nil)
	mfs, err := j.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	zero := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() == "binlake_judge_decode_errors_total" {
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() == 0 {
					zero[m.GetLabel()[0].GetValue()] = true
				}
			}
		}
	}
	for _, s := range []string{"bus", "http", "remote_write"} {
		if !zero[s] {
			t.Errorf(`binlake_judge_decode_errors_total{source=%q} not exported at 0 before any batch`, s)
		}
	}
}
