package remotewrite

import (
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// MapOptions configures a Mapper.
type MapOptions struct {
	// NodeLabel is the label that names a series' node, its port cut off
	// ("wave-1:9100" → "wave-1"); default "instance". A series with a `node` label
	// takes that instead.
	NodeLabel string
	// KeepUnmapped stores series that map to no canonical metric as they are (their
	// name, when it is a valid metric name, and their labels); otherwise they are
	// dropped. Either way they are counted.
	KeepUnmapped bool
	// DefaultInterval is a batch's interval before a node's second scrape shows the
	// real one; default 15 s, Prometheus's default scrape interval.
	DefaultInterval time.Duration
}

// Stats counts the samples of one request by what became of them.
type Stats struct {
	Mapped  int // used for a canonical metric (cpu.util, mem.used_pct, …)
	Raw     int // kept as they are (KeepUnmapped)
	Dropped int // unmapped, without a node, or not storable
}

// Mapper turns remote-write series into metric batches, one per node and scrape time.
// node_exporter's counters become rates against the node's previous scrape, which the
// Mapper remembers; it is safe for concurrent use.
type Mapper struct {
	o     MapOptions
	mu    sync.Mutex
	nodes map[string]*nodeState
}

// nodeState is a node's last scrape: the counters rates are taken against.
type nodeState struct {
	ts                      int64
	cpuAll, cpuIdle, rx, tx float64
	hasCPU, hasNet          bool
}

// NewMapper returns a Mapper.
func NewMapper(o MapOptions) *Mapper {
	if o.NodeLabel == "" {
		o.NodeLabel = "instance"
	}
	if o.DefaultInterval <= 0 {
		o.DefaultInterval = 15 * time.Second
	}
	return &Mapper{o: o, nodes: map[string]*nodeState{}}
}

// scrape gathers one node's samples of one timestamp.
type scrape struct {
	node                     string
	ts                       int64
	cpuAll, cpuIdle          float64
	cpus                     map[string]bool
	memAvail, memTotal       float64
	hasMemAvail, hasMemTotal bool
	rx, tx                   float64
	hasNet                   bool
	loads                    map[string]float64
	fsAvail, fsSize, fsFree  map[string]float64
	raw                      []metric.Point
}

// node_exporter's series that map to canonical metrics.
const (
	nodeCPU       = "node_cpu_seconds_total"
	nodeMemAvail  = "node_memory_MemAvailable_bytes"
	nodeMemTotal  = "node_memory_MemTotal_bytes"
	nodeNetRx     = "node_network_receive_bytes_total"
	nodeNetTx     = "node_network_transmit_bytes_total"
	nodeFSAvail   = "node_filesystem_avail_bytes"
	nodeFSFree    = "node_filesystem_free_bytes"
	nodeFSSize    = "node_filesystem_size_bytes"
	nodeLoad1     = "node_load1"
	nodeLoad5     = "node_load5"
	nodeLoad15    = "node_load15"
	labelName     = "__name__"
	labelNodeName = "node"
)

var loadNames = map[string]string{nodeLoad1: metric.Load1, nodeLoad5: metric.Load5, nodeLoad15: metric.Load15}

// Map turns a request's series into batches, in node and time order.
func (m *Mapper) Map(req Request) ([]metric.Batch, Stats) {
	var st Stats
	type key struct {
		node string
		ts   int64
	}
	scrapes := map[key]*scrape{}
	for i := range req.Series {
		s := &req.Series[i]
		node := m.nodeOf(s)
		if node == "" {
			st.Dropped += len(s.Samples)
			continue
		}
		for _, smp := range s.Samples {
			k := key{node, smp.TimestampMs}
			sc := scrapes[k]
			if sc == nil {
				sc = &scrape{node: node, ts: smp.TimestampMs}
				scrapes[k] = sc
			}
			switch m.add(sc, s, smp.Value) {
			case mapped:
				st.Mapped++
			case kept:
				st.Raw++
			default:
				st.Dropped++
			}
		}
	}
	keys := make([]key, 0, len(scrapes))
	for k := range scrapes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.node, b.node); c != 0 {
			return c
		}
		return int(a.ts - b.ts)
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []metric.Batch
	for _, k := range keys {
		out = append(out, m.batches(scrapes[k])...)
	}
	return out, st
}

// nodeOf names a series' node: its node label, else NodeLabel without a port.
func (m *Mapper) nodeOf(s *Series) string {
	if n := s.Get(labelNodeName); n != "" {
		return n
	}
	v := s.Get(m.o.NodeLabel)
	if host, _, err := net.SplitHostPort(v); err == nil {
		return host
	}
	return v
}

type outcome int

const (
	dropped outcome = iota
	mapped
	kept
)

// add files one sample of s into its scrape.
func (m *Mapper) add(sc *scrape, s *Series, v float64) outcome {
	name := s.Get(labelName)
	switch name {
	case nodeCPU:
		if sc.cpus == nil {
			sc.cpus = map[string]bool{}
		}
		sc.cpus[s.Get("cpu")] = true
		sc.cpuAll += v
		// Busy is what is neither idle nor waiting for I/O, as the agent counts it.
		if mode := s.Get("mode"); mode == "idle" || mode == "iowait" {
			sc.cpuIdle += v
		}
		return mapped
	case nodeMemAvail:
		sc.memAvail, sc.hasMemAvail = v, true
		return mapped
	case nodeMemTotal:
		sc.memTotal, sc.hasMemTotal = v, true
		return mapped
	case nodeNetRx, nodeNetTx:
		if s.Get("device") == "lo" {
			return mapped // the loopback is no traffic of the host's
		}
		if name == nodeNetRx {
			sc.rx += v
		} else {
			sc.tx += v
		}
		sc.hasNet = true
		return mapped
	case nodeFSAvail, nodeFSSize, nodeFSFree:
		mount := s.Get("mountpoint")
		if mount == "" {
			return dropped
		}
		if sc.fsAvail == nil {
			sc.fsAvail, sc.fsSize, sc.fsFree = map[string]float64{}, map[string]float64{}, map[string]float64{}
		}
		switch name {
		case nodeFSAvail:
			sc.fsAvail[mount] = v
		case nodeFSFree:
			sc.fsFree[mount] = v
		default:
			sc.fsSize[mount] = v
		}
		return mapped
	case nodeLoad1, nodeLoad5, nodeLoad15:
		if sc.loads == nil {
			sc.loads = map[string]float64{}
		}
		sc.loads[loadNames[name]] = v
		return mapped
	}
	if !m.o.KeepUnmapped || !metric.ValidName(name) {
		return dropped
	}
	p := metric.Point{Name: name, Value: v}
	for _, l := range s.Labels {
		if l.Name == labelName || l.Name == m.o.NodeLabel || l.Name == labelNodeName || !metric.ValidLabelKey(l.Name) {
			continue
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[l.Name] = l.Value
	}
	if len(p.Labels) > metric.MaxLabels {
		return dropped
	}
	sc.raw = append(sc.raw, p)
	return kept
}

// batches builds a scrape's points, rates against the node's previous scrape, and
// splits them into batches of at most metric.MaxPoints. m.mu is held.
func (m *Mapper) batches(sc *scrape) []metric.Batch {
	prev := m.nodes[sc.node]
	interval := m.o.DefaultInterval.Seconds()
	var dt float64
	if prev != nil && sc.ts > prev.ts {
		dt = float64(sc.ts-prev.ts) / 1000
		interval = dt
	}
	var pts []metric.Point
	if sc.cpus != nil {
		pts = append(pts, metric.Point{Name: metric.CPUCores, Value: float64(len(sc.cpus))})
		if dt > 0 && prev.hasCPU && sc.cpuAll > prev.cpuAll && sc.cpuIdle >= prev.cpuIdle {
			busy := 1 - (sc.cpuIdle-prev.cpuIdle)/(sc.cpuAll-prev.cpuAll)
			pts = append(pts, metric.Point{Name: metric.CPUUtil, Value: 100 * min(max(busy, 0), 1)})
		}
	}
	if sc.hasMemAvail && sc.hasMemTotal && sc.memTotal > 0 {
		pts = append(pts, metric.Point{Name: metric.MemUsedPct, Value: 100 * (1 - sc.memAvail/sc.memTotal)})
	}
	for _, name := range []string{metric.Load1, metric.Load5, metric.Load15} {
		if v, ok := sc.loads[name]; ok {
			pts = append(pts, metric.Point{Name: name, Value: v})
		}
	}
	// A counter that went down was reset (a restarted exporter): no rate this time.
	if sc.hasNet && dt > 0 && prev.hasNet && sc.rx >= prev.rx && sc.tx >= prev.tx {
		pts = append(pts, metric.Point{Name: metric.NetRxBps, Value: (sc.rx - prev.rx) / dt},
			metric.Point{Name: metric.NetTxBps, Value: (sc.tx - prev.tx) / dt})
	}
	for _, mount := range slices.Sorted(maps.Keys(sc.fsSize)) {
		size := sc.fsSize[mount]
		avail, ok := sc.fsAvail[mount]
		if !ok || size <= 0 {
			continue
		}
		// df's Use%, as the agent sends it: used over used + available, the blocks
		// reserved for root left out; without free_bytes, used over the size.
		pct := 100 * (size - avail) / size
		if free, ok := sc.fsFree[mount]; ok && size-free+avail > 0 {
			pct = 100 * (size - free) / (size - free + avail)
		}
		pts = append(pts, metric.Point{Name: metric.DiskUsedPct, Value: pct, Labels: map[string]string{"mount": mount}})
	}
	pts = append(pts, sc.raw...)
	if prev == nil || sc.ts > prev.ts {
		// Only a newer scrape moves the rates' base: a late, older request must not.
		m.nodes[sc.node] = &nodeState{ts: sc.ts, cpuAll: sc.cpuAll, cpuIdle: sc.cpuIdle, rx: sc.rx, tx: sc.tx,
			hasCPU: sc.cpus != nil, hasNet: sc.hasNet}
	}
	var out []metric.Batch
	ts := time.UnixMilli(sc.ts).UTC()
	for len(pts) > 0 {
		n := min(len(pts), metric.MaxPoints)
		out = append(out, metric.Batch{Node: sc.node, TS: ts, IntervalS: interval, Points: pts[:n:n]})
		pts = pts[n:]
	}
	return out
}
