package benchkit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// Fleet is the synthetic cluster a bench reports for: each node has a fixed profile
// (cores, typical CPU, memory, network and wave load) and its values wander around it
// from one batch to the next, so that the judge's EWMAs and sketches see moving data.
// Values are a pure function of (node, tick), so any sender may build any node's batch
// without shared state.
type Fleet struct {
	nodes    []nodeProfile
	instance []map[string]string // labels of the per-instance series, shared read-only
	json     fleetJSON
}

type nodeProfile struct {
	id                         string
	cores                      float64
	cpu, mem, load, rx, tx     float64
	tps, instances, phase, amp float64
}

// NodeMetrics are the node-level series the placement plugins read (lbplugins'
// names), first in every batch.
var NodeMetrics = []string{
	metric.CPUUtil, metric.MemUsedPct, metric.Load1, metric.CPUCores,
	metric.NetRxBps, metric.NetTxBps, metric.WaveTPS, metric.WaveInstances,
}

// InstanceMetrics are the per-instance series a wave's agent adds (label instance),
// which fill an ingest batch beyond the node-level series.
var InstanceMetrics = []string{metric.WaveTPS, metric.WaveLagSeconds, metric.WavePublishErrs}

// overloaded is the share of nodes whose CPU sits above the judge's 90 % threshold, so
// that answers carry filtered nodes as in a real cluster.
const overloaded = 0.03

// NewFleet is a fleet of n nodes whose batches hold at most maxPoints points.
func NewFleet(n, maxPoints int) *Fleet {
	f := &Fleet{nodes: make([]nodeProfile, n)}
	for i := range f.nodes {
		r := rand.New(rand.NewPCG(uint64(i), 0x6a756467)) // fixed: the same fleet every run
		cores := []float64{4, 8, 16, 32}[r.IntN(4)]
		cpu := 5 + r.Float64()*75
		if r.Float64() < overloaded {
			cpu = 93 + r.Float64()*5
		}
		f.nodes[i] = nodeProfile{
			id: fmt.Sprintf("bench-%05d", i), cores: cores, cpu: cpu, mem: 20 + r.Float64()*65,
			load: r.Float64() * cores * 1.2, rx: 1e5 + r.Float64()*1e8, tx: 1e5 + r.Float64()*1e8,
			tps: r.Float64() * 5000, instances: float64(r.IntN(21)), phase: r.Float64() * 2 * math.Pi,
			amp: 0.02 + r.Float64()*0.08,
		}
	}
	for j := 0; len(NodeMetrics)+j*len(InstanceMetrics) < maxPoints; j++ {
		f.instance = append(f.instance, map[string]string{"instance": fmt.Sprintf("inst-%04d", j)})
	}
	f.encodeParts(maxPoints)
	return f
}

// Batch is node i's batch number tick with size points at ts: the node-level series
// first, then per-instance series. Within one batch every (name, labels) is distinct,
// and (node, ts) differs between the batches of a run, so every point has its own
// identity in the store and none replaces another.
func (f *Fleet) Batch(i, tick, size int, ts time.Time, interval time.Duration) metric.Batch {
	b := metric.Batch{Node: f.nodes[i].id, TS: ts, IntervalS: interval.Seconds(), Points: make([]metric.Point, 0, size)}
	w := f.wave(i, tick)
	for k := range size {
		name, labels := f.series(k)
		b.Points = append(b.Points, metric.Point{Name: name, Labels: labels, Value: f.value(i, w, k)})
	}
	return b
}

// series is the name and labels of a batch's k-th point.
func (f *Fleet) series(k int) (string, map[string]string) {
	if k < len(NodeMetrics) {
		return NodeMetrics[k], nil
	}
	j := k - len(NodeMetrics)
	return InstanceMetrics[j%len(InstanceMetrics)], f.instance[j/len(InstanceMetrics)]
}

// wave is node i's factor at batch number tick: a slow wave (period ≈ 60 ticks) of
// ±amp around the profile.
func (f *Fleet) wave(i, tick int) float64 {
	n := &f.nodes[i]
	return 1 + n.amp*math.Sin(n.phase+float64(tick)*2*math.Pi/60)
}

// value is the k-th point's value in a batch of node i whose wave factor is w.
func (f *Fleet) value(i int, w float64, k int) float64 {
	n := &f.nodes[i]
	var v float64
	switch k {
	case 0:
		v = min(100, n.cpu*w)
	case 1:
		v = min(100, n.mem*w)
	case 2:
		v = n.load * w
	case 3:
		v = n.cores
	case 4:
		v = n.rx * w
	case 5:
		v = n.tx * w
	case 6:
		v = n.tps * w
	case 7:
		v = n.instances
	default:
		j := k - len(NodeMetrics)
		inst := j / len(InstanceMetrics)
		switch j % len(InstanceMetrics) {
		case 0: // wave.tps
			v = n.tps * w / float64(2+inst%7)
		case 1: // wave.lag_s
			v = 0.05 * w * float64(1+inst%5)
		} // wave.publish_errors: 0
	}
	return math.Round(v*100) / 100
}

// Len is the number of nodes.
func (f *Fleet) Len() int { return len(f.nodes) }

// Node is node i's id.
func (f *Fleet) Node(i int) string { return f.nodes[i].id }
