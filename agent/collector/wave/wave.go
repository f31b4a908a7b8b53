// Package wave scrapes the local wave's Prometheus /metrics and turns it into the
// canonical go.* and wave.* points.
//
// # The contract with the wave
//
// The wave exposes, on its /metrics (client_golang, text exposition format), these
// series; the names are the constants below and the wave should use them from here:
//
//	binlake_wave_rows_published_total{instance}   counter  rows acknowledged by Kafka
//	binlake_wave_bytes_published_total{instance}  counter  key and value bytes of those rows
//	binlake_wave_binlog_bytes_read_total{instance}  counter  bytes of the binlog events read
//	                                               from the source, every table's
//	binlake_wave_instances_led                     gauge    instances this wave leads now
//	binlake_wave_lag_seconds{instance}             gauge    wave.Lag: 0 when caught up, else how far behind the source
//	binlake_wave_publish_errors_total{instance}    counter  failed publish attempts
//	binlake_wave_instance_running{instance,state,reason}  gauge  1 capturing, 0 led but not
//	                                               capturing (reconnecting, retrying, error)
//	go_memstats_heap_alloc_bytes, go_goroutines    client_golang's default Go collector
//	go_gc_duration_seconds                         same (summary); fallback for the GC p99
//	go_sched_pauses_total_gc_seconds               histogram from runtime/metrics, enabled with
//	    collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
//	        collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/pauses/total/gc:seconds$`)}))
//	process_cpu_seconds_total                      client_golang's process collector
//	                                               (collectors.NewProcessCollector)
//	binlake_wave_balancer_leader                   gauge    1 on the cluster's balancer wave
//	                                               (the one elected), 0 on the others
//	binlake_wave_balancer_mean_load                gauge    mean load per live wave in the
//	                                               balancer's last plan, in the judge's cost
//	                                               units (rows/s plus a floor per instance);
//	                                               0 on the other waves
//
// The "instance" label is the capture instance id (docs/design.md). A Prometheus server that
// scrapes the wave directly renames it to exported_instance unless honor_labels is set.
//
// # What the agent emits
//
//	go.heap_bytes        go_memstats_heap_alloc_bytes
//	go.goroutines        go_goroutines
//	go.gc_pause_p99_s    99th percentile of the stop-the-world GC pauses since the previous
//	                     scrape, from the histogram (0 when there was none), at most the
//	                     longest pause go_gc_duration_seconds has seen (quantile 1: the
//	                     histogram's buckets are coarse); without the histogram, that
//	                     longest pause (an upper bound of p99)
//	wave.tps{instance}   rows published per second between two scrapes; unlabelled = sum
//	wave.bytes_per_s{instance}  bytes published per second between two scrapes; unlabelled = sum
//	wave.binlog_bytes_per_s{instance}  binlog bytes read per second from the source (every
//	                     table's); unlabelled = sum; none when no instance of the wave counts
//	                     them (a wave that leads none, or of an earlier version)
//	wave.cpu_cores       CPU seconds the wave process used per second between two scrapes
//	                     (1 = one core busy); with wave.tps, the judge splits it by
//	                     instance to cost each one (judge/costs.go)
//	wave.instances       binlake_wave_instances_led
//	wave.lag_s{instance} binlake_wave_lag_seconds; unlabelled = the largest
//	wave.publish_errors{instance}  errors since the previous scrape; unlabelled = sum
//	wave.instance_running{instance,state,reason}  binlake_wave_instance_running (reason only
//	                     when not running), so a policy on "last < 1" names the instance and why
//	wave.cluster_utilisation  binlake_wave_balancer_mean_utilisation, only while the wave
//	                     reports binlake_wave_balancer_leader 1: one node of the cluster
//	                     (the balancer's) reports the cluster's mean peak utilisation,
//	                     which the default capacity alert (cluster-capacity) watches
//	wave.cluster_load    binlake_wave_balancer_mean_load, the same when the judge plans
//	                     in rows/s (cluster-capacity-rows watches it)
//
// Rates and increases need two scrapes, so the first tick after start (and after a
// failed scrape) carries none of them; a counter that went down (the wave restarted)
// counts from zero, as Prometheus's rate() does.
package wave

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/metric/waveprom"
)

// Name is the registry name.
const Name = "wave"

// The Go runtime's and the process collector's series, as client_golang names them; the
// wave's own are in internal/metric/waveprom.
const (
	MetricHeapAlloc   = "go_memstats_heap_alloc_bytes"
	MetricGoroutines  = "go_goroutines"
	MetricGCPauseHist = "go_sched_pauses_total_gc_seconds"
	MetricGCDuration  = "go_gc_duration_seconds"
	// MetricProcessCPU is the process collector's CPU time (user and system).
	MetricProcessCPU = "process_cpu_seconds_total"
)

// DefaultURL is where the wave serves /metrics unless configured otherwise.
const DefaultURL = "http://" + config.WaveListen + "/metrics"

// maxBody bounds a scrape: a wave's exposition is a few tens of KiB.
const maxBody = 16 << 20

// Points are the names the collector sends.
var Points = []string{
	metric.GoHeapBytes, metric.GoGoroutines, metric.GoGCPauseP99, metric.WaveTPS, metric.WaveBytesPerS, metric.WaveBinlogBytesPerS,
	metric.WaveCPUCores, metric.WaveInstances, metric.WaveLagSeconds, metric.WavePublishErrs,
	metric.WaveInstanceRunning, metric.WaveClusterUtil, metric.WaveClusterLoad,
}

func init() {
	collector.Register(Name, collector.Factory{
		Config: func() any { return DefaultConfig() },
		New: func(cfg any, _ collector.Env) (collector.Collector, error) {
			return New(*cfg.(*Config))
		},
		Emits: Points,
	})
}

// Config is the wave section of agent.yaml.
type Config struct {
	// URL of the wave's /metrics.
	URL string `yaml:"url"`
	// Timeout bounds one scrape.
	Timeout config.Duration `yaml:"timeout"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{URL: DefaultURL, Timeout: config.Duration(5 * time.Second)}
}

// Validate checks the URL and the timeout, both reported.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case config.URLHasCredentials(c.URL):
		// Scrape failures name the URL; the wave's /metrics takes none anyway.
		errs = append(errs, fmt.Errorf("url: %s; the wave's /metrics needs none", config.URLCredentialsRefused))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("url %q: want an http(s) URL such as %s", config.Redact(c.URL), DefaultURL))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s: want more than 0", c.Timeout))
	}
	return errors.Join(errs...)
}

// Collector scrapes one wave.
type Collector struct {
	cfg    Config
	client *http.Client
	now    func() time.Time // replaced in tests

	prev *scrape
}

var _ collector.Collector = (*Collector)(nil)

type scrape struct {
	at     time.Time
	rows   map[string]float64
	bytes  map[string]float64
	read   map[string]float64
	errs   map[string]float64
	cpu    float64
	hasCPU bool
	pauses *dto.Histogram
}

// New builds a wave collector.
func New(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("wave collector: %w", err)
	}
	return &Collector{
		cfg:    cfg,
		client: &http.Client{Timeout: cfg.Timeout.D()},
		now:    time.Now,
	}, nil
}

// Name implements collector.Collector.
func (c *Collector) Name() string { return Name }

// Collect implements collector.Collector.
func (c *Collector) Collect(ctx context.Context) ([]metric.Point, error) {
	families, err := c.fetch(ctx)
	if err != nil {
		c.prev = nil // a gap: do not compute a rate across it
		return nil, err
	}
	cur := &scrape{at: c.now(), rows: map[string]float64{}, errs: map[string]float64{}}
	var pts []metric.Point
	add := func(name string, v float64, instance string) {
		p := metric.Point{Name: name, Value: v}
		if instance != "" {
			p.Labels = map[string]string{"instance": instance}
		}
		pts = append(pts, p)
	}

	if v, ok := single(families[MetricHeapAlloc]); ok {
		add(metric.GoHeapBytes, v, "")
	}
	if v, ok := single(families[MetricGoroutines]); ok {
		add(metric.GoGoroutines, v, "")
	}
	if mf := families[MetricGCPauseHist]; mf != nil && len(mf.Metric) > 0 && mf.Metric[0].Histogram != nil {
		h := mf.Metric[0].Histogram
		cur.pauses = h
		d := h
		if c.prev != nil && c.prev.pauses != nil {
			d = delta(c.prev.pauses, h)
		}
		p99 := quantile(0.99, d)
		// The runtime's buckets are coarse (0.92 ms, then 10.5 ms): interpolated inside
		// one, a p99 of 1 ms pauses read 9–10 ms. No pause was longer than the longest
		// the runtime has seen, which the summary's quantile 1 is.
		if longest, ok := summaryQuantile(families[MetricGCDuration], 1); ok && longest < p99 {
			p99 = longest
		}
		add(metric.GoGCPauseP99, p99, "")
	} else if v, ok := summaryQuantile(families[MetricGCDuration], 1); ok {
		add(metric.GoGCPauseP99, v, "")
	}

	led, hasLed := single(families[waveprom.InstancesLed])
	if hasLed {
		add(metric.WaveInstances, led, "")
	}
	// A wave that leads no instance still says its totals (0 rows/s, no lag): without
	// them the judge listed its wave series as stopped, as if the wave had gone quiet,
	// once its instances had failed over.
	idle := hasLed && led == 0
	top, any := 0.0, false
	if mf := families[waveprom.LagSeconds]; mf != nil {
		lag := byInstance(mf)
		for _, inst := range sortedKeys(lag) {
			add(metric.WaveLagSeconds, lag[inst], inst)
			top, any = math.Max(top, lag[inst]), true
		}
	}
	if any || idle {
		add(metric.WaveLagSeconds, top, "")
	}

	if mf := families[waveprom.InstanceRunning]; mf != nil {
		for _, m := range mf.Metric {
			v, ok := value(m)
			if !ok {
				continue
			}
			labels := map[string]string{}
			for _, l := range m.Label {
				if n := l.GetName(); (n == waveprom.LabelInstance || n == waveprom.LabelState || n == waveprom.LabelReason) && l.GetValue() != "" {
					labels[n] = l.GetValue()
				}
			}
			pts = append(pts, metric.Point{Name: metric.WaveInstanceRunning, Value: v, Labels: labels})
		}
	}

	// The cluster's load, from the balancer only: the other waves export 0, which is not
	// the cluster's load, and one reporter keeps it one series per cluster.
	if leader, ok := single(families[waveprom.BalancerLeader]); ok && leader == 1 {
		if v, ok := single(families[waveprom.ClusterMeanLoad]); ok && v > 0 {
			add(metric.WaveClusterLoad, v, "")
		}
		if v, ok := single(families[waveprom.ClusterMeanUtil]); ok && v > 0 {
			add(metric.WaveClusterUtil, v, "")
		}
	}

	cur.rows = byInstance(families[waveprom.RowsPublished])
	cur.bytes = byInstance(families[waveprom.BytesPublished])
	cur.read = byInstance(families[waveprom.BinlogBytesRead])
	cur.errs = byInstance(families[waveprom.PublishErrors])
	cur.cpu, cur.hasCPU = single(families[MetricProcessCPU])
	if c.prev != nil {
		if dt := cur.at.Sub(c.prev.at).Seconds(); dt > 0 {
			// perInstance emits each instance's increase divided by div (dt for a rate,
			// 1 for the increase itself) and, unlabelled, their sum (0 on an idle wave).
			perInstance := func(name string, inc map[string]float64, div float64) {
				var total float64
				for _, inst := range sortedKeys(inc) {
					add(name, inc[inst]/div, inst)
					total += inc[inst] / div
				}
				if len(inc) > 0 || idle {
					add(name, total, "")
				}
			}
			perInstance(metric.WaveTPS, increases(c.prev.rows, cur.rows), dt)
			perInstance(metric.WaveBytesPerS, increases(c.prev.bytes, cur.bytes), dt)
			if len(cur.read) > 0 { // a wave of an earlier version counts none
				perInstance(metric.WaveBinlogBytesPerS, increases(c.prev.read, cur.read), dt)
			}
			perInstance(metric.WavePublishErrs, increases(c.prev.errs, cur.errs), 1)
			// The process's CPU counter did not start within the interval, unlike a new
			// instance's: without the previous value there is no rate.
			if cur.hasCPU && c.prev.hasCPU {
				used := cur.cpu - c.prev.cpu
				if used < 0 { // the wave restarted: all of its CPU time is new
					used = cur.cpu
				}
				add(metric.WaveCPUCores, used/dt, "")
			}
		}
	}
	c.prev = cur
	return pts, nil
}

func (c *Collector) fetch(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", c.cfg.URL, err)
	}
	// Ask for the text format: it is what expfmt's text parser reads, and every
	// client_golang handler serves it.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", c.cfg.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("scrape %s: HTTP %s", c.cfg.URL, resp.Status)
	}
	body := io.LimitReader(resp.Body, maxBody+1)
	p := expfmt.NewTextParser(model.UTF8Validation)
	lr := &countingReader{r: body}
	families, err := p.TextToMetricFamilies(lr)
	if lr.n > maxBody {
		return nil, fmt.Errorf("scrape %s: body larger than %d bytes", c.cfg.URL, maxBody)
	}
	if err != nil {
		return nil, fmt.Errorf("scrape %s: parse exposition: %w", c.cfg.URL, err)
	}
	if !hasWaveSeries(families) {
		// Another process's page (the agent's own /metrics, any exporter, an empty 200):
		// read as the wave's, it kept the wave "up", and sent that process's heap,
		// goroutines and CPU as the wave's (an outside trial).
		return nil, fmt.Errorf("scrape %s: no binlake_wave_* series: not a BinLake wave's /metrics (collectors.wave.url)", c.cfg.URL)
	}
	return families, nil
}

// hasWaveSeries reports whether a page holds any of a wave's own series.
func hasWaveSeries(families map[string]*dto.MetricFamily) bool {
	for name := range families {
		if strings.HasPrefix(name, "binlake_wave_") {
			return true
		}
	}
	return false
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// single returns the value of an unlabelled gauge, counter or untyped metric.
func single(mf *dto.MetricFamily) (float64, bool) {
	if mf == nil || len(mf.Metric) == 0 {
		return 0, false
	}
	return value(mf.Metric[0])
}

func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// byInstance sums a family's values per instance label ("" when unlabelled).
func byInstance(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if mf == nil {
		return out
	}
	for _, m := range mf.Metric {
		v, ok := value(m)
		if !ok {
			continue
		}
		inst := ""
		for _, l := range m.Label {
			if l.GetName() == waveprom.LabelInstance {
				inst = l.GetValue()
			}
		}
		out[inst] += v
	}
	return out
}

// increases returns how much each counter grew; a counter that went down restarted
// from zero, so all of its current value is new.
func increases(prev, cur map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range cur {
		p, ok := prev[k]
		switch {
		case !ok:
			// An instance that appeared since the previous scrape: its counter started
			// at zero within the interval.
			out[k] = v
		case v < p:
			out[k] = v
		default:
			out[k] = v - p
		}
	}
	return out
}

func summaryQuantile(mf *dto.MetricFamily, q float64) (float64, bool) {
	if mf == nil || len(mf.Metric) == 0 || mf.Metric[0].Summary == nil {
		return 0, false
	}
	for _, sq := range mf.Metric[0].Summary.Quantile {
		if sq.GetQuantile() == q && !math.IsNaN(sq.GetValue()) {
			return sq.GetValue(), true
		}
	}
	return 0, false
}

// delta is the histogram of the observations made between prev and cur. If cur has
// fewer observations (the process restarted) or different buckets, cur is returned whole.
func delta(prev, cur *dto.Histogram) *dto.Histogram {
	if cur.GetSampleCount() < prev.GetSampleCount() || len(cur.Bucket) != len(prev.Bucket) {
		return cur
	}
	out := &dto.Histogram{Bucket: make([]*dto.Bucket, len(cur.Bucket))}
	count := cur.GetSampleCount() - prev.GetSampleCount()
	out.SampleCount = &count
	for i, b := range cur.Bucket {
		pb := prev.Bucket[i]
		if pb.GetUpperBound() != b.GetUpperBound() || b.GetCumulativeCount() < pb.GetCumulativeCount() {
			return cur
		}
		cc := b.GetCumulativeCount() - pb.GetCumulativeCount()
		ub := b.GetUpperBound()
		out.Bucket[i] = &dto.Bucket{CumulativeCount: &cc, UpperBound: &ub}
	}
	return out
}

// quantile estimates the q-quantile of a cumulative histogram by linear interpolation
// inside the bucket that holds it, as Prometheus's histogram_quantile does. It returns 0
// for an empty histogram and the highest finite bound when the rank lands in +Inf.
func quantile(q float64, h *dto.Histogram) float64 {
	buckets := append([]*dto.Bucket(nil), h.Bucket...)
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].GetUpperBound() < buckets[j].GetUpperBound() })
	total := float64(h.GetSampleCount())
	if n := len(buckets); n > 0 && !math.IsInf(buckets[n-1].GetUpperBound(), 1) {
		// The text format always has +Inf, whose count is the sample count; a parsed
		// histogram keeps it implicit, so count everything above the last bound there.
		total = math.Max(total, float64(buckets[n-1].GetCumulativeCount()))
	}
	if total == 0 || len(buckets) == 0 {
		return 0
	}
	rank := q * total
	lower, prevCount := 0.0, 0.0
	for _, b := range buckets {
		ub, cc := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if cc >= rank {
			if math.IsInf(ub, 1) {
				return lower
			}
			if cc == prevCount {
				return ub
			}
			return lower + (ub-lower)*(rank-prevCount)/(cc-prevCount)
		}
		lower, prevCount = ub, cc
	}
	// The rank is above every finite bucket: the +Inf bucket holds it.
	return lower
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
