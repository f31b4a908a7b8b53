package balancer

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/binlake/binlake/internal/metric/waveprom"
	"github.com/binlake/binlake/internal/rebalance"
	"github.com/binlake/binlake/judge/api"
)

// Metrics are the balancer's series in its wave's /metrics.
type Metrics struct {
	Leader             prometheus.Gauge
	Moves, Fallbacks   *prometheus.CounterVec
	Spread             prometheus.Gauge
	MeanLoad, MeanUtil prometheus.Gauge
}

// NewMetrics makes the balancer's series with f (the wave's registry), its counters'
// known series at 0 (a counter that first appears at its first count hides that count
// from increase(): one fallback never alerted).
func NewMetrics(f promauto.Factory) Metrics {
	m := Metrics{
		Leader: f.NewGauge(prometheus.GaugeOpts{Name: waveprom.BalancerLeader,
			Help: "1 while this wave is the cluster's balancer."}),
		Moves: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_balancer_moves_total",
			Help: "Instance moves this wave made as the balancer, by reason (failover, hard_max, spread, share) and result (assigned, done, skipped, failed)."},
			[]string{"reason", "result"}),
		Fallbacks: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_balancer_fallbacks_total",
			Help: "Failovers placed by fewest instances because the judge was not configured (no_judge) or did not answer (judge_error)."},
			[]string{"reason"}),
		Spread: f.NewGauge(prometheus.GaugeOpts{Name: "binlake_wave_balancer_spread",
			Help: "The load spread (highest minus lowest wave: peak utilisation, or rows/s in the rows model) of the balancer's last plan."}),
		MeanLoad: f.NewGauge(prometheus.GaugeOpts{Name: waveprom.ClusterMeanLoad,
			Help: "The mean load of the live waves in rows/s plus a floor per instance, in the balancer's last plan when the judge planned in the rows model (no cores or CPU to plan in utilisation); 0 on the other waves and in the utilisation model. Its agent reports it as wave.cluster_load."}),
		MeanUtil: f.NewGauge(prometheus.GaugeOpts{Name: waveprom.ClusterMeanUtil,
			Help: "The live waves' mean peak utilisation (CPU cores over the hosts' cores, each wave weighed by its cores) in the balancer's last plan, when the judge planned in utilisation; 0 on the other waves and in the rows model. Its agent reports it as wave.cluster_utilisation, which the capacity alert watches."}),
	}
	for _, r := range []string{"no_judge", "judge_error"} {
		m.Fallbacks.WithLabelValues(r)
	}
	// Every reason and result, so that rate() and absent() can be set up before the
	// first move (the series appeared at their first count: an outside trial).
	for _, reason := range []string{rebalance.ReasonFailover, rebalance.ReasonHardMax, rebalance.ReasonSpread, rebalance.ReasonShare} {
		for _, result := range []string{MoveDone, MoveAssigned, MoveSkipped, MoveFailed} {
			m.Moves.WithLabelValues(reason, result)
		}
	}
	return m
}

// observePlan shows the cluster's load as the balancer's last plan saw it: in the
// utilisation model the mean peak utilisation weighed by cores, in the rows model the
// mean load in rows/s.
func (m Metrics) observePlan(ans *api.RebalanceAnswer) {
	m.Spread.Set(ans.SpreadBefore)
	if ans.Model == api.ModelUtilisation {
		var sum, cores float64
		for _, w := range ans.Waves {
			if w.Alive {
				sum, cores = sum+w.PeakBefore*w.Cores, cores+w.Cores
			}
		}
		if cores > 0 {
			m.MeanUtil.Set(sum / cores)
		}
		m.MeanLoad.Set(0)
		return
	}
	m.MeanUtil.Set(0)
	var sum float64
	for _, l := range ans.Before {
		sum += l
	}
	if len(ans.Before) > 0 {
		m.MeanLoad.Set(sum / float64(len(ans.Before)))
	}
}
