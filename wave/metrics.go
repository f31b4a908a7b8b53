package wave

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/binlake/binlake/internal/metric/promreg"
	"github.com/binlake/binlake/internal/metric/waveprom"
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// metrics are the wave's Prometheus series. The five the agent reads use the names the
// agent's wave collector defines (agent/collector/wave), so the two cannot drift apart.
type metrics struct {
	reg *prometheus.Registry

	rows          *prometheus.CounterVec // waveprom.RowsPublished
	publishErrors *prometheus.CounterVec // waveprom.PublishErrors
	lag           *lagGauge              // waveprom.LagSeconds
	led           prometheus.Gauge       // waveprom.InstancesLed
	running       *prometheus.GaugeVec   // waveprom.InstanceRunning

	bytes      *prometheus.CounterVec
	binlogRead *prometheus.CounterVec // waveprom.BinlogBytesRead
	messages   *prometheus.CounterVec
	batches    *prometheus.CounterVec
	skipped    *prometheus.CounterVec
	unreadable *prometheus.CounterVec
	reconnects *prometheus.CounterVec
	commitPos  *prometheus.GaugeVec
	commitTS   *prometheus.GaugeVec
	instError  *prometheus.GaugeVec
	// snapshotRows and snapshotTables: the instance's current or last snapshot.
	snapshotRows   *prometheus.GaugeVec
	snapshotTables *prometheus.GaugeVec
	balancer       balancer.Metrics // the balancer's series
}

func newMetrics() *metrics {
	inst := []string{waveprom.LabelInstance}
	reg := promreg.New()    // the Go runtime (with the GC pauses the agent reads) and the process
	f := promauto.With(reg) // every series below is registered as it is made
	m := &metrics{
		reg: reg,
		rows: f.NewCounterVec(prometheus.CounterOpts{Name: waveprom.RowsPublished,
			Help: "Row changes and DDL statements acknowledged by the sink (a row sent to two topics counts twice; a message carrying several rows counts each)."}, inst),
		publishErrors: f.NewCounterVec(prometheus.CounterOpts{Name: waveprom.PublishErrors,
			Help: "Failed publish attempts (each is retried with backoff)."}, inst),
		lag: newLagGauge(prometheus.NewDesc(waveprom.LagSeconds,
			"How far the capture is behind what its source has written, in seconds: 0 when caught up (the source's heartbeat says it has nothing newer and the sink has everything read before it), else now minus the binlog time of the last transaction published (or of a later heartbeat).",
			inst, nil)),
		led: f.NewGauge(prometheus.GaugeOpts{Name: waveprom.InstancesLed,
			Help: "Instances this wave leads now (one retrying after a failure is let go during its pause: instance_running says retrying meanwhile)."}),
		running: f.NewGaugeVec(prometheus.GaugeOpts{Name: waveprom.InstanceRunning,
			Help: "1 while the instance captures, 0 while this wave leads it but it does not, or retries leading it after a failure (state and reason say why); absent on standby."},
			[]string{waveprom.LabelInstance, waveprom.LabelState, waveprom.LabelReason}),
		bytes: f.NewCounterVec(prometheus.CounterOpts{Name: waveprom.BytesPublished,
			Help: "Key and value bytes of acknowledged row messages."}, inst),
		binlogRead: f.NewCounterVec(prometheus.CounterOpts{Name: waveprom.BinlogBytesRead,
			Help: "Bytes of the binlog events the instance read from its source, those of tables no subscription takes included: what reading the source costs, beside what is published."}, inst),
		messages: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_messages_published_total",
			Help: "Messages acknowledged by the sink: one per row, but canal-protobuf's carry the rows of one rows event that go to one partition."}, inst),
		batches: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_batches_published_total",
			Help: "Acknowledged publish calls."}, inst),
		skipped: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_messages_skipped_total",
			Help: "Row messages dropped because they were larger than the sink accepts (on_too_large: skip)."}, inst),
		unreadable: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_unreadable_skipped_total",
			Help: "Changes the binlog holds but not as rows the wave can publish, dropped with on_unreadable: skip: a data change logged as a statement (binlog_format STATEMENT or MIXED), a rows event logged without every column (binlog_row_image MINIMAL or NOBLOB), an XA transaction committed whose rows were not read or could not be held; and, published as logged, rows of a transaction that wrote a non-transactional table and rolled them back."}, inst),
		reconnects: f.NewCounterVec(prometheus.CounterOpts{Name: "binlake_wave_source_errors_total",
			Help: "Failures of the source: of the binlog connection, and of the source as a term of the instance began (unreachable, a refused login); each is followed by a retry with backoff."}, inst),
		commitPos: f.NewGaugeVec(prometheus.GaugeOpts{Name: "binlake_wave_committed_position",
			Help: "Byte position in its binlog file of the last committed offset."}, []string{waveprom.LabelInstance, "file"}),
		commitTS: f.NewGaugeVec(prometheus.GaugeOpts{Name: "binlake_wave_committed_timestamp_seconds",
			Help: "Binlog timestamp of the last committed offset."}, inst),
		instError: f.NewGaugeVec(prometheus.GaugeOpts{Name: "binlake_wave_instance_error",
			Help: "1 while the instance is stopped by an error that needs an operator (binlog purged, oversized row, a change logged as a statement, an XA transaction it cannot publish)."}, inst),
		snapshotRows: f.NewGaugeVec(prometheus.GaugeOpts{Name: "binlake_wave_snapshot_rows",
			Help: "Rows the instance's current or last snapshot emitted so far."}, inst),
		snapshotTables: f.NewGaugeVec(prometheus.GaugeOpts{Name: "binlake_wave_snapshot_tables_remaining",
			Help: "Tables the instance's snapshot has still to read; 0 once it finished."}, inst),
		balancer: balancer.NewMetrics(f),
	}
	reg.MustRegister(m.lag) // a collector of its own, computed at each scrape
	return m
}

// track shows an instance's counters at 0 as this wave starts leading it: a counter that
// first appears at its first count hides that count from increase() and rate() (an
// alert on one failed publish never fired), and a dashboard shows "No data" where 0
// was meant.
func (m *metrics) track(id string) {
	for _, c := range []*prometheus.CounterVec{m.rows, m.bytes, m.binlogRead, m.messages, m.batches, m.publishErrors, m.skipped, m.unreadable, m.reconnects} {
		c.WithLabelValues(id)
	}
}

// drop deletes every series of instance id, its counters too, when this wave's runner of
// it ends (the instance removed, redefined, or no longer this wave's to run): they stayed
// for good after a removal, and the agent sent the instance's rows/s and publish errors at
// 0 until the wave restarted (an outside trial). forget, at each leadership term's end,
// keeps the counters: a term that failed as it began counts its source error in them.
func (m *metrics) drop(id string) {
	m.forget(id)
	l := prometheus.Labels{waveprom.LabelInstance: id}
	for _, c := range []*prometheus.CounterVec{m.rows, m.bytes, m.binlogRead, m.messages, m.batches, m.publishErrors, m.skipped, m.unreadable, m.reconnects} {
		c.DeletePartialMatch(l)
	}
	m.running.DeletePartialMatch(l)
	m.instError.DeletePartialMatch(l)
}

// forget drops an instance's series when this wave stops leading it, so a scrape shows
// only what the wave runs (the counters restart at zero if it leads it again, which
// rate() handles as a reset).
func (m *metrics) forget(id string) {
	l := prometheus.Labels{waveprom.LabelInstance: id}
	m.lag.forget(id)
	m.commitPos.DeletePartialMatch(l)
	m.commitTS.Delete(l)
	m.snapshotRows.Delete(l)
	m.snapshotTables.Delete(l)
}

// setState shows an instance's state as its one running series. A standby wave shows
// none: another wave runs the instance, and only the one responsible should alert.
func (m *metrics) setState(st InstanceStatus) {
	m.dropState(st.ID)
	switch st.State {
	case cluster.StateStandby:
	case cluster.StateRunning:
		m.running.WithLabelValues(st.ID, st.State, "").Set(1)
	default:
		m.running.WithLabelValues(st.ID, st.State, st.Reason).Set(0)
	}
}

func (m *metrics) dropState(id string) {
	m.running.DeletePartialMatch(prometheus.Labels{waveprom.LabelInstance: id})
}

// lagGauge is binlake_wave_lag_seconds: each instance's Lag, computed from its tracker
// at every scrape, so that it grows while nothing completes (a stalled sink) and falls
// to 0 as soon as a heartbeat says the capture is caught up.
type lagGauge struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	of   map[string]*capture.LagTracker
}

func newLagGauge(desc *prometheus.Desc) *lagGauge {
	return &lagGauge{desc: desc, of: map[string]*capture.LagTracker{}}
}

func (g *lagGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *lagGauge) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, l := range g.of {
		if s := l.State(); s.Known() {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, cluster.Lag(s, now), id)
		}
	}
}

// track shows the lag of l as instance id's, from now on.
func (g *lagGauge) track(id string, l *capture.LagTracker) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.of[id] = l
}

func (g *lagGauge) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.of, id)
}

// tracker is instance id's tracker, nil when this wave does not run it.
func (g *lagGauge) tracker(id string) *capture.LagTracker {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.of[id]
}
