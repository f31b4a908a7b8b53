package remotewrite

import (
	"maps"
	"math"
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
// Mapper remembers series by series; it is safe for concurrent use.
//
// A sender splits one scrape across requests (Prometheus sends at most 500 samples a
// request, and its shards each take a share of the series), so a scrape's parts are
// gathered by node and time across requests: what needs every part (cpu.cores, and the
// rates, summed over CPUs and devices) goes out once the node's next scrape begins, or
// its scrape is two intervals older than the newest sample of a request; a gauge goes out
// with its request, mem.used_pct and disk.used_pct once their series are all in. Read per
// request, a split scrape lost its network rates for good, most of its cpu.util, and
// counted the cores of a part (an outside trial).
type Mapper struct {
	o     MapOptions
	mu    sync.Mutex
	nodes map[string]*nodeState
}

// nodeState is what the Mapper keeps of a node: each counter series' last sample (the
// rates' base), and the newest scrape's parts gathered so far.
type nodeState struct {
	lastTS   int64   // the newest scrape time seen (ms)
	interval float64 // seconds between the node's last two scrape times; 0: not known yet
	counters map[string]counterSample
	pend     *pending // the scrape at lastTS, until it goes out (nil after)
}

// counterSample is a counter series' last sample.
type counterSample struct {
	ts int64
	v  float64
}

// pending is one scrape of a node gathered across requests.
type pending struct {
	ts              int64
	cpus            map[string]bool
	cpuAll, cpuIdle float64 // the CPU seconds each mode spent since each series' last sample, summed
	cpuRated        bool
	rx, tx          float64 // bytes/s, summed over the devices rated
	hasRx, hasTx    bool
	memAvail        float64
	memTotal        float64
	hasMemAvail     bool
	hasMemTotal     bool
	memDone         bool
	fs              map[string]*fsParts // by mountpoint
}

// fsParts are one mount's filesystem gauges of a scrape.
type fsParts struct {
	avail, size, free          float64
	hasAvail, hasSize, hasFree bool
	done                       bool
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

// scrape gathers one node's samples of one timestamp in one request.
type scrape struct {
	node   string
	ts     int64
	cpu    []counterPart // node_cpu_seconds_total
	net    []counterPart // node_network_{receive,transmit}_bytes_total
	gauges []gaugePart   // memory, filesystems
	loads  map[string]float64
	raw    []metric.Point
}

// counterPart is one counter sample of a scrape: its series' key (its labels that tell
// it apart on the node), and what it counts toward.
type counterPart struct {
	key  string
	cpu  string // node_cpu_seconds_total: the CPU
	idle bool   // node_cpu_seconds_total: an idle or iowait mode
	tx   bool   // network: transmitted
	v    float64
}

// gaugePart is one memory or filesystem gauge of a scrape.
type gaugePart struct {
	name  string
	mount string
	v     float64
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
			if math.IsNaN(smp.Value) || math.IsInf(smp.Value, 0) {
				// A staleness marker (Prometheus's NaN as a series ends) or a value no
				// metric holds: it failed its whole batch (counted as undecodable), and
				// poisoned a counter's base.
				st.Dropped++
				continue
			}
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
	newest := int64(math.MinInt64)
	for _, k := range keys {
		out = append(out, m.batches(scrapes[k])...)
		newest = max(newest, k.ts)
	}
	// A node whose next scrape does not come (it stopped, or its sender did) has its
	// last one go out once it is two intervals older than the newest sample here.
	for _, node := range slices.Sorted(maps.Keys(m.nodes)) {
		ns := m.nodes[node]
		if ns.pend != nil && float64(newest-ns.pend.ts) > 2000*m.intervalOf(ns) {
			out = append(out, m.finish(node, ns)...)
		}
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
		cpu, mode := s.Get("cpu"), s.Get("mode")
		// Busy is what is neither idle nor waiting for I/O, as the agent counts it.
		sc.cpu = append(sc.cpu, counterPart{key: "cpu\x00" + cpu + "\x00" + mode, cpu: cpu, idle: mode == "idle" || mode == "iowait", v: v})
		return mapped
	case nodeMemAvail, nodeMemTotal:
		sc.gauges = append(sc.gauges, gaugePart{name: name, v: v})
		return mapped
	case nodeNetRx, nodeNetTx:
		dev := s.Get("device")
		if dev == "lo" {
			return mapped // the loopback is no traffic of the host's
		}
		sc.net = append(sc.net, counterPart{key: name + "\x00" + dev, tx: name == nodeNetTx, v: v})
		return mapped
	case nodeFSAvail, nodeFSSize, nodeFSFree:
		mount := s.Get("mountpoint")
		if mount == "" {
			return dropped
		}
		sc.gauges = append(sc.gauges, gaugePart{name: name, mount: mount, v: v})
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

// intervalOf is a node's scrape interval in seconds: between its last two scrape times,
// or the default before its second.
func (m *Mapper) intervalOf(ns *nodeState) float64 {
	if ns.interval > 0 {
		return ns.interval
	}
	return m.o.DefaultInterval.Seconds()
}

// batches files a request's part of a scrape into its node's state, and returns what can
// go out now: the node's previous scrape, complete once this one begins (finish); this
// part's gauges, and the memory and filesystems its parts complete. A part older than the
// node's newest scrape (a late request) gives its gauges alone, and leaves the rates'
// base where it is. m.mu is held.
func (m *Mapper) batches(sc *scrape) []metric.Batch {
	ns := m.nodes[sc.node]
	if ns == nil {
		ns = &nodeState{counters: map[string]counterSample{}}
		m.nodes[sc.node] = ns
	}
	var out []metric.Batch
	late := sc.ts < ns.lastTS
	if sc.ts > ns.lastTS {
		if ns.pend != nil {
			out = append(out, m.finish(sc.node, ns)...)
		}
		if ns.lastTS > 0 {
			ns.interval = float64(sc.ts-ns.lastTS) / 1000
		}
		ns.lastTS = sc.ts
		ns.pend = &pending{ts: sc.ts}
	}
	pd := ns.pend
	if late || pd == nil || pd.ts != sc.ts {
		pd = &pending{ts: sc.ts} // a late part, or one of a scrape already gone out: gauges only
	} else {
		rate(ns, pd, sc)
	}
	var pts []metric.Point
	for _, name := range []string{metric.Load1, metric.Load5, metric.Load15} {
		if v, ok := sc.loads[name]; ok {
			pts = append(pts, metric.Point{Name: name, Value: v})
		}
	}
	pts = append(pts, gauges(pd, sc.gauges, false)...)
	pts = append(pts, sc.raw...)
	return append(out, m.split(sc.node, sc.ts, ns, pts)...)
}

// rate adds a scrape part's counters to its scrape: each against its series' last
// sample, which it then becomes. A counter that went down was reset (a restarted
// exporter) and gives nothing this time; a series new to the node (a CPU or an interface
// that appeared) gives nothing either: summed over the devices, an interface that came
// up with 1.5 GB counted made a rate of 100 MB/s (an outside trial).
func rate(ns *nodeState, pd *pending, sc *scrape) {
	for _, c := range sc.cpu {
		if pd.cpus == nil {
			pd.cpus = map[string]bool{}
		}
		pd.cpus[c.cpu] = true
		if prev, ok := ns.counters[c.key]; ok && sc.ts > prev.ts && c.v >= prev.v {
			d := c.v - prev.v
			pd.cpuAll += d
			if c.idle {
				pd.cpuIdle += d
			}
			pd.cpuRated = true
		}
		ns.counters[c.key] = counterSample{ts: sc.ts, v: c.v}
	}
	for _, c := range sc.net {
		if prev, ok := ns.counters[c.key]; ok && sc.ts > prev.ts && c.v >= prev.v {
			r := (c.v - prev.v) / (float64(sc.ts-prev.ts) / 1000)
			if c.tx {
				pd.tx, pd.hasTx = pd.tx+r, true
			} else {
				pd.rx, pd.hasRx = pd.rx+r, true
			}
		}
		ns.counters[c.key] = counterSample{ts: sc.ts, v: c.v}
	}
}

// gauges files a part's memory and filesystem gauges into its scrape and returns the
// points they complete: mem.used_pct once both its series are in, a mount's
// disk.used_pct once its three are (at the end, with two: without free_bytes).
func gauges(pd *pending, gs []gaugePart, end bool) []metric.Point {
	for _, g := range gs {
		switch g.name {
		case nodeMemAvail:
			pd.memAvail, pd.hasMemAvail = g.v, true
		case nodeMemTotal:
			pd.memTotal, pd.hasMemTotal = g.v, true
		default:
			if pd.fs == nil {
				pd.fs = map[string]*fsParts{}
			}
			f := pd.fs[g.mount]
			if f == nil {
				f = &fsParts{}
				pd.fs[g.mount] = f
			}
			switch g.name {
			case nodeFSAvail:
				f.avail, f.hasAvail = g.v, true
			case nodeFSFree:
				f.free, f.hasFree = g.v, true
			default:
				f.size, f.hasSize = g.v, true
			}
		}
	}
	var pts []metric.Point
	if !pd.memDone && pd.hasMemAvail && pd.hasMemTotal && pd.memTotal > 0 {
		pts = append(pts, metric.Point{Name: metric.MemUsedPct, Value: 100 * (1 - pd.memAvail/pd.memTotal)})
		pd.memDone = true
	}
	for _, mount := range slices.Sorted(maps.Keys(pd.fs)) {
		f := pd.fs[mount]
		if f.done || !f.hasSize || !f.hasAvail || f.size <= 0 || !f.hasFree && !end {
			continue
		}
		f.done = true
		// df's Use%, as the agent sends it: used over used + available, the blocks
		// reserved for root left out; without free_bytes, used over the size.
		pct := 100 * (f.size - f.avail) / f.size
		if f.hasFree && f.size-f.free+f.avail > 0 {
			pct = 100 * (f.size - f.free) / (f.size - f.free + f.avail)
		}
		pts = append(pts, metric.Point{Name: metric.DiskUsedPct, Value: pct, Labels: map[string]string{"mount": mount}})
	}
	return pts
}

// finish sends the node's gathered scrape out: its cores, the rates its counters gave,
// the filesystems still short of free_bytes. m.mu is held.
func (m *Mapper) finish(node string, ns *nodeState) []metric.Batch {
	pd := ns.pend
	ns.pend = nil
	for k, c := range ns.counters {
		if pd.ts-c.ts > counterKept.Milliseconds() {
			delete(ns.counters, k) // an interface gone (a container's veth): its base with it
		}
	}
	var pts []metric.Point
	if len(pd.cpus) > 0 {
		pts = append(pts, metric.Point{Name: metric.CPUCores, Value: float64(len(pd.cpus))})
	}
	if pd.cpuRated && pd.cpuAll > 0 {
		busy := 1 - pd.cpuIdle/pd.cpuAll
		pts = append(pts, metric.Point{Name: metric.CPUUtil, Value: 100 * min(max(busy, 0), 1)})
	}
	if pd.hasRx {
		pts = append(pts, metric.Point{Name: metric.NetRxBps, Value: pd.rx})
	}
	if pd.hasTx {
		pts = append(pts, metric.Point{Name: metric.NetTxBps, Value: pd.tx})
	}
	pts = append(pts, gauges(pd, nil, true)...)
	return m.split(node, pd.ts, ns, pts)
}

// counterKept is how long a counter series' base is kept without a sample.
const counterKept = 10 * time.Minute

// split makes pts, of node at ts, batches of at most metric.MaxPoints.
func (m *Mapper) split(node string, ts int64, ns *nodeState, pts []metric.Point) []metric.Batch {
	var out []metric.Batch
	at := time.UnixMilli(ts).UTC()
	for len(pts) > 0 {
		n := min(len(pts), metric.MaxPoints)
		out = append(out, metric.Batch{Node: node, TS: at, IntervalS: m.intervalOf(ns), Points: pts[:n:n]})
		pts = pts[n:]
	}
	return out
}
