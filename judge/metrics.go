package judge

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/internal/metric/promreg"
	"github.com/binlake/binlake/judge/store"
)

type metrics struct {
	batches, points, decodeErrors *prometheus.CounterVec
	subscribeErrors               prometheus.Counter
	placements                    *prometheus.CounterVec
	placementSeconds              *prometheus.HistogramVec
	snapshotBuilds                prometheus.Counter
	rebalancePlans                *prometheus.CounterVec
	newestBatch                   map[string]*promreg.Newest // by source (bus, http, remote_write)
	remoteWriteSamples            *prometheus.CounterVec
}

// Sources of rebalancing plans, as the label of binlake_judge_rebalance_plans_total.
const (
	planSourcePost = "post" // POST /v1/rebalance: a balancer's cluster
	planSourceGet  = "get"  // GET /v1/rebalance: the judge's own view, a dry run
)

func newMetrics(reg prometheus.Registerer, j *Judge) (*metrics, error) {
	const ns, sub = "binlake", "judge"
	m := &metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "batches_total",
			Help: "Metric batches ingested (analysed, and queued for the store), by source (bus, http or remote_write); a batch sent again after a 503 (the store did not take it in time) counts again."}, []string{"source"}),
		points: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "points_total",
			Help: "Metric points ingested, by source."}, []string{"source"}),
		decodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "decode_errors_total",
			Help: "Batches skipped because they could not be decoded or validated, by source."}, []string{"source"}),
		subscribeErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "subscribe_errors_total",
			Help: "Bus subscriptions that ended with an error and were restarted."}),
		placements: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "placements_total",
			Help: "Placement requests by algorithm and result (ok, no_candidates, invalid, error)."}, []string{"algorithm", "result"}),
		placementSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "placement_seconds",
			Help:    "Time to decide a placement, by algorithm.",
			Buckets: []float64{.00001, .00005, .0001, .0005, .001, .005, .01, .05, .1, .5}}, []string{"algorithm"}),
		rebalancePlans: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rebalance_plans_total",
			Help: "Rebalancing plans answered, by source: post (a balancer's cluster, POST /v1/rebalance) or get (the judge's own view, GET /v1/rebalance)."}, []string{"source"}),
	}
	m.remoteWriteSamples = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "remote_write_samples_total",
		Help: "Samples of POST /api/v1/write by what became of them: mapped (to a canonical metric), raw (stored as they are, remote_write.unmapped keep) or dropped (unmapped, without a node, or not storable)."}, []string{"result"})
	for _, r := range []string{"mapped", "raw", "dropped"} {
		m.remoteWriteSamples.WithLabelValues(r)
	}
	// Every source's decode errors from zero: BinlakeMetricBatchesUndecodable takes an
	// increase, and a series born at 1 (the first bad batch) never showed one, so the
	// first burst of a judge's life went unpaged (an outside trial).
	for _, s := range []string{sourceBus, sourceHTTP, sourceRemoteWrite} {
		m.decodeErrors.WithLabelValues(s)
	}
	// Both sources from the start, so that a rate over them is defined before the first plan.
	m.rebalancePlans.WithLabelValues(planSourcePost)
	m.rebalancePlans.WithLabelValues(planSourceGet)
	m.snapshotBuilds = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "placement_snapshots_total",
		Help: "Placement snapshots built from the analyses (at most one per placement.snapshot_every while batches arrive)."})
	m.newestBatch = map[string]*promreg.Newest{}
	cs := []prometheus.Collector{
		m.snapshotBuilds,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "reservations",
			Help: "Placements holding capacity on their node until it reports the instance."}, func() float64 { return float64(j.res.size.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "reservations_refused_total",
			Help: "Placements answered without a reservation because 100,000 were pending."}, func() float64 { return float64(j.res.refused.Load()) }),
		m.batches, m.points, m.decodeErrors, m.subscribeErrors, m.placements, m.placementSeconds, m.rebalancePlans, m.remoteWriteSamples,
		newBufferCollector(ns, sub, j.StoreCounters),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "nodes",
			Help: "Nodes known to the current-hour analysis."}, func() float64 { return float64(len(j.inc.NodeIDs())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "feed_stalled",
			Help: "1 while the metric bus does not answer (placements then take the nodes live when it last did as live), else 0."}, func() float64 {
			if j.feedStalledSince().IsZero() {
				return 0
			}
			return 1
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "historical_refreshes_total",
			Help: "Completed historical refreshes."}, func() float64 { ok, _, _ := j.hist.Counts(); return float64(ok) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "historical_refresh_failures_total",
			Help: "Failed historical refreshes (the previous analysis is kept)."}, func() float64 { _, f, _ := j.hist.Counts(); return float64(f) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "historical_age_seconds",
			Help: "Age of the cached historical analysis; -1 before the first refresh."}, func() float64 {
			if s := j.hist.Snapshot(); s != nil {
				return j.now().Sub(s.AsOf).Seconds()
			}
			return -1
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "late_points_total",
			Help: "Points stored but left out of the current hour: their batch was from an earlier hour, or not newer than the node's last (a redelivery)."},
			func() float64 { return float64(j.inc.Late()) }),
	}
	// The ingest lag of deploy/prometheus/rules.yml is time() minus this: batches carry
	// their agent's collection time.
	for _, src := range []string{sourceBus, sourceHTTP, sourceRemoteWrite} {
		m.newestBatch[src] = promreg.NewNewest(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "newest_batch_timestamp_seconds",
			Help:        "Collection time of the newest metric batch ingested, by source (bus, http or remote_write); 0 before the first. time() minus it is how far ingest is behind.",
			ConstLabels: prometheus.Labels{"source": src}})
		cs = append(cs, m.newestBatch[src])
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// bufferCollector exposes the store buffer's counters, read once per scrape so that one
// scrape's figures add up: every point handed to the buffer is written, dropped or
// still buffered.
type bufferCollector struct {
	counters          func() store.BufferCounters
	buffered, dropped *prometheus.Desc
	written, errors   *prometheus.Desc
	rejected, refused *prometheus.Desc
	capacity          *prometheus.Desc
}

func newBufferCollector(ns, sub string, counters func() store.BufferCounters) *bufferCollector {
	name := func(n string) string { return prometheus.BuildFQName(ns, sub, n) }
	return &bufferCollector{
		counters: counters,
		buffered: prometheus.NewDesc(name("store_points_buffered"),
			"Points waiting for the store (including the batch being written).", nil, nil),
		capacity: prometheus.NewDesc(name("store_buffer_capacity_points"),
			"Points the store buffer holds at most (store.buffer.capacity): store_points_buffered over it is how full the buffer is.", nil, nil),
		dropped: prometheus.NewDesc(name("store_points_dropped_total"),
			"Points that never reached the store: HTTP points past the buffer's capacity with store.buffer.http_overflow drop, points the store refused as invalid (store_points_refused_total), and what was left when the judge stopped (bus batches among those are delivered again).", nil, nil),
		refused: prometheus.NewDesc(name("store_points_refused_total"),
			"Points the store refused for good, counted in store_points_dropped_total too: an Elasticsearch mapping conflict (a metric name that is a dot-prefix of another). The rest of their batch is stored and a bus batch committed; the judge's log names the engine's reason.", nil, nil),
		written: prometheus.NewDesc(name("store_points_written_total"),
			"Points the store accepted.", nil, nil),
		rejected: prometheus.NewDesc(name("store_points_rejected_total"),
			"Points of HTTP batches refused with 503 because the buffer was full (store.buffer.http_overflow reject); the agent sends them again.", nil, nil),
		errors: prometheus.NewDesc(name("store_write_errors_total"),
			"Store writes that failed (each retry counts); their points stay buffered and are retried with back-off.", nil, nil),
	}
}

func (c *bufferCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.buffered
	ch <- c.capacity
	ch <- c.dropped
	ch <- c.written
	ch <- c.errors
	ch <- c.rejected
	ch <- c.refused
}

func (c *bufferCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.counters()
	ch <- prometheus.MustNewConstMetric(c.buffered, prometheus.GaugeValue, float64(v.Buffered))
	ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, float64(v.Capacity))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(v.Dropped))
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(v.Written))
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(v.Errors))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(v.Rejected))
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(v.Refused))
}
