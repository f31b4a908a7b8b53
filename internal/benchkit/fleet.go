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
	metric.CPUUtil, metric.MemUsedPct, metric.Load1, "cpu.cores",
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
	return f
}

// Batch is node i's batch number tick with size points at ts: the node-level series
// first, then per-instance series. Within one batch every (name, labels) is distinct,
// and (node, ts) differs between the batches of a run, so every point has its own
// identity in the store and none replaces another.
func (f *Fleet) Batch(i, tick, size int, ts time.Time, interval time.Duration) metric.Batch {
	n := &f.nodes[i]
	// A slow wave (period ≈ 60 ticks) of ±amp around the profile.
	w := 1 + n.amp*math.Sin(n.phase+float64(tick)*2*math.Pi/60)
	b := metric.Batch{Node: n.id, TS: ts, IntervalS: interval.Seconds(), Points: make([]metric.Point, 0, size)}
	values := [...]float64{min(100, n.cpu*w), min(100, n.mem*w), n.load * w, n.cores, n.rx * w, n.tx * w, n.tps * w, n.instances}
	for k := 0; k < size && k < len(values); k++ {
		b.Points = append(b.Points, metric.Point{Name: NodeMetrics[k], Value: math.Round(values[k]*100) / 100})
	}
	for k := len(values); k < size; k++ {
		j := k - len(values)
		inst := j / len(InstanceMetrics)
		var v float64
		switch j % len(InstanceMetrics) {
		case 0: // wave.tps
			v = n.tps * w / float64(2+inst%7)
		case 1: // wave.lag_s
			v = 0.05 * w * float64(1+inst%5)
		} // wave.publish_errors: 0
		b.Points = append(b.Points, metric.Point{Name: InstanceMetrics[j%len(InstanceMetrics)],
			Labels: f.instance[inst], Value: math.Round(v*100) / 100})
	}
	return b
}

// Len is the number of nodes.
func (f *Fleet) Len() int { return len(f.nodes) }

// Node is node i's id.
func (f *Fleet) Node(i int) string { return f.nodes[i].id }
