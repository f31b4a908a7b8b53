package bench

import (
	"fmt"
	"io"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The alarm's counters the bench reads (alarm/metrics.go).
const (
	pointsTotal      = "binlake_alarm_points_total"
	evaluationsTotal = "binlake_alarm_evaluations_total"
	decodeErrsTotal  = "binlake_alarm_decode_errors_total"
)

// counters are the alarm's running totals.
type counters struct {
	// Points received and evaluated, condition evaluations (one policy on one point),
	// batches skipped as undecodable.
	Points, Evaluations, DecodeErrors int64
}

// parseCounters reads the counters from the Prometheus text exposition of /metrics; the
// points counter is required, as the bench cannot measure without it.
func parseCounters(r io.Reader) (counters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return counters{}, fmt.Errorf("metrics text: %w", err)
	}
	get := func(name string) (int64, bool) {
		f := fams[name]
		if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter() == nil {
			return 0, false
		}
		return int64(f.GetMetric()[0].GetCounter().GetValue()), true
	}
	var c counters
	var ok bool
	if c.Points, ok = get(pointsTotal); !ok {
		return counters{}, fmt.Errorf("no counter %s", pointsTotal)
	}
	c.Evaluations, _ = get(evaluationsTotal)
	c.DecodeErrors, _ = get(decodeErrsTotal)
	return c, nil
}
