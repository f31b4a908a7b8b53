package alarm

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/internal/metric/promreg"
)

type metrics struct {
	evaluations, batches, points, decodeErrors prometheus.Counter
	subscribeErrors, logErrors                 prometheus.Counter
	historyBatches, historyErrors              prometheus.Counter
	suppressed                                 *prometheus.CounterVec
	newestBatch                                *promreg.Newest
	refreshErrors                              *prometheus.CounterVec
	refreshFailing                             *prometheus.GaugeVec
}

const ns, sub = "binlake", "alarm"

func newMetrics() *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	return &metrics{
		evaluations:     c("evaluations_total", "Condition evaluations (one policy on one new point)."),
		batches:         c("batches_total", "Metric batches evaluated."),
		points:          c("points_total", "Metric points received."),
		decodeErrors:    c("decode_errors_total", "Batches skipped because they could not be decoded or validated."),
		subscribeErrors: c("subscribe_errors_total", "Bus subscriptions that ended with an error and were restarted."),
		logErrors:       c("notification_log_errors_total", "Failed writes to the notification log."),
		historyBatches:  c("history_batches_total", "Batches read back from a partition's history into the policies' time windows, before the process's first message of the partition."),
		historyErrors:   c("history_errors_total", "Reads of a partition's history that failed or ran out of time: the partition's time windows started from the stream's position."),
		// The evaluation lag of deploy/prometheus/rules.yml is time() minus this.
		newestBatch: promreg.NewNewest(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "newest_batch_timestamp_seconds",
			Help: "Collection time of the newest metric batch evaluated; 0 before the first. time() minus it is how far evaluation is behind."}),
		refreshErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "alert_refresh_errors_total",
			Help: "Failed re-sends of the firing alerts to a channel that wants them again every interval (Alertmanager), by channel; the next interval sends them all again."}, []string{"channel"}),
		refreshFailing: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "alert_refresh_failing",
			Help: "1 while the last re-send of the firing alerts to a channel (Alertmanager) failed, 0 once one succeeds, by channel."}, []string{"channel"}),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notifications_suppressed_total",
			Help: "Notifications that were due but muted, by reason (silenced or inhibited)."}, []string{"reason"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer, e *Engine) error {
	m.suppressed.WithLabelValues("silenced")
	m.suppressed.WithLabelValues("inhibited")
	alerts := prometheus.NewGaugeFunc // one gauge per state, read under the engine's lock
	cs := []prometheus.Collector{m.evaluations, m.batches, m.points, m.decodeErrors, m.subscribeErrors, m.logErrors, m.historyBatches, m.historyErrors, m.suppressed, m.newestBatch, m.refreshErrors, m.refreshFailing}
	for _, st := range []State{StatePending, StateFiring, StateResolved} {
		cs = append(cs, alerts(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "alerts",
			Help: "Alerts by state.", ConstLabels: prometheus.Labels{"state": st.String()}}, func() float64 {
			p, f, r := e.Counts()
			return float64([]int{0, p, f, r}[st])
		}))
	}
	cs = append(cs, alerts(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "orphaned_alerts",
		Help: "Alerts the notification log holds firing under a policy this alarm does not have (removed or renamed while firing): each is resolved, to the channels it paged, when its node next reports; one logged before alerts recorded their channels stays until the policy is back under its name."},
		func() float64 { return float64(e.Orphans()) }))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
