package analysis

import (
	"sort"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/lbplugins"
)

// Series is one series' current-hour statistics.
type Series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	lbplugins.Current
	// LastTS is the time of the batch of its last sample (zero: none yet): a series the
	// node's recent batches no longer carry has stopped (an instance that left the wave).
	LastTS time.Time `json:"last_ts,omitzero"`
}

// Node is one node's current-hour analysis and liveness.
type Node struct {
	Node     string    `json:"node"`
	LastSeen time.Time `json:"last_seen"`
	// LastBatchTS is the timestamp the agent put on its last batch.
	LastBatchTS time.Time `json:"last_batch_ts"`
	// Interval is the interval the node declared; zero when it is not known (a node
	// rebuilt from the store whose interval was not kept), where callers assume a default.
	Interval time.Duration `json:"-"`
	Batches  int64         `json:"batches_this_hour"`
	Series   []Series      `json:"series"` // sorted by name, then labels
	// Offset is how long after their own timestamps the node's batches reach the judge,
	// in whole seconds, re-estimated only when it moves by 2 s or more (see Timing): a
	// time of the node's clock put on the judge's by it stays put from read to read.
	Offset time.Duration `json:"-"`
}

// StoppedAfter is how many of its node's intervals a series may be missing from the
// node's batches before it counts as stopped: an agent whose scrape of the wave failed
// once sends a batch without the wave's series; one whose wave stopped reporting, or
// that no longer leads an instance, sends them without it from then on. A stopped
// series' level is the last one before it stopped, not the node's figure now.
const StoppedAfter = 3

// stoppedAt reports whether a series whose last sample came in the batch at last has
// stopped on a node whose last batch is at nodeTS, every interval. A series without a
// time (its batches had none) has not.
func stoppedAt(last, nodeTS time.Time, interval time.Duration) bool {
	if interval <= 0 {
		interval = metric.DefaultInterval
	}
	return !last.IsZero() && last.Before(nodeTS.Add(-StoppedAfter*interval))
}

// StoppedAt reports whether a series of the node whose last sample came in the batch at
// last has stopped: the node's batches went on without it for StoppedAfter intervals.
func (n Node) StoppedAt(last time.Time) bool { return stoppedAt(last, n.LastBatchTS, n.Interval) }

// Stopped reports whether the node's recent batches no longer carry s (StoppedAt).
func (n Node) Stopped(s Series) bool { return n.StoppedAt(s.LastTS) }

// IsWaveSeries reports whether a series of name comes from a wave (its agent scrapes
// one): the wave.* metrics.
func IsWaveSeries(name string) bool { return strings.HasPrefix(name, "wave.") }

// Wave says what the node's series say of a wave on it: running while a wave.* series
// is in its recent batches (not stopped), stopped when it had some this hour and every
// one stopped (its host's metrics going on), unknown without any. The one rule of
// "the node runs a wave" for placements (Views), plans and the node listings: a node
// is a wave to place on or plan for only while it runs one.
func (n Node) Wave() lbplugins.WaveState {
	state := lbplugins.WaveUnknown
	for _, s := range n.Series {
		if !IsWaveSeries(s.Name) {
			continue
		}
		if !n.Stopped(s) {
			return lbplugins.WaveRunning
		}
		state = lbplugins.WaveStopped
	}
	return state
}

// RunsWave reports whether the node runs a wave (Wave).
func (n Node) RunsWave() bool { return n.Wave() == lbplugins.WaveRunning }

// wave is Node.Wave of the node's state: the node-level series first (a wave reports
// wave.instances in every scrape), the labelled ones only when none of those runs.
// Callers hold the read lock at least.
func (n *nodeState) wave() lbplugins.WaveState {
	state := lbplugins.WaveUnknown
	check := func(s *seriesState) bool {
		if !IsWaveSeries(s.name) {
			return false
		}
		if !n.stopped(s) {
			return true
		}
		state = lbplugins.WaveStopped
		return false
	}
	for _, s := range n.series.plain {
		if check(s) {
			return lbplugins.WaveRunning
		}
	}
	for _, head := range n.series.labelled {
		for s := head; s != nil; s = s.next {
			if check(s) {
				return lbplugins.WaveRunning
			}
		}
	}
	return state
}

func (n *nodeState) stopped(s *seriesState) bool {
	return s.lastTS != 0 && stoppedAt(time.Unix(0, s.lastTS), n.lastTS, n.interval())
}

func (n *nodeState) interval() time.Duration { return n.declared }

// export copies the node out with its series unsorted and their label keys, so that the
// caller sorts after releasing the lock. Callers hold the read lock at least.
func (n *nodeState) export(id string) (Node, bySeries) {
	out := Node{Node: id, LastSeen: n.lastSeen, LastBatchTS: n.lastTS, Interval: n.interval(), Batches: n.batches,
		Offset: n.offset, Series: make([]Series, 0, n.series.size)}
	keys := make([]string, 0, n.series.size)
	n.series.each(func(s *seriesState) {
		se := Series{Name: s.name, Labels: s.labels, Current: s.current()}
		if s.lastTS != 0 {
			se.LastTS = time.Unix(0, s.lastTS).UTC()
		}
		out.Series = append(out.Series, se)
		keys = append(keys, s.labelKey)
	})
	return out, bySeries{out.Series, keys}
}

// bySeries sorts series by name, then labels (their keys, in the same order).
type bySeries struct {
	s    []Series
	keys []string
}

func (b bySeries) Len() int { return len(b.s) }
func (b bySeries) Less(i, j int) bool {
	if b.s[i].Name != b.s[j].Name {
		return b.s[i].Name < b.s[j].Name
	}
	return b.keys[i] < b.keys[j]
}
func (b bySeries) Swap(i, j int) {
	b.s[i], b.s[j] = b.s[j], b.s[i]
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
}

// Node returns one node's analysis, with every series.
func (a *Incremental) Node(id string) (Node, bool) {
	a.rlock()
	n, ok := a.nodes[id]
	var out Node
	var order bySeries
	if ok {
		out, order = n.export(id)
	}
	a.mu.RUnlock()
	sort.Sort(order)
	return out, ok
}

// Liveness is what a node's liveness is judged from (the judge's waveStatusOf): its
// batches' times and whether it reports a wave, and when that last did, without its
// series.
type Liveness struct {
	Node        string
	LastSeen    time.Time     // Node.LastSeen
	LastBatchTS time.Time     // Node.LastBatchTS
	Interval    time.Duration // Node.Interval
	Offset      time.Duration // Node.Offset
	// Wave is whether the node has a wave.* series this hour (carried ones included):
	// false for a host whose agent scrapes no wave.
	Wave bool
	// WaveTS is the batch time of its newest wave.* sample: zero without Wave, or when
	// the batches of its wave.* samples carried no time.
	WaveTS time.Time
}

// Liveness is the node's Liveness, read from its series.
func (n Node) Liveness() Liveness {
	l := Liveness{Node: n.Node, LastSeen: n.LastSeen, LastBatchTS: n.LastBatchTS, Interval: n.Interval, Offset: n.Offset}
	for _, s := range n.Series {
		if !IsWaveSeries(s.Name) {
			continue
		}
		l.Wave = true
		if s.LastTS.After(l.WaveTS) {
			l.WaveTS = s.LastTS
		}
	}
	return l
}

// liveness is Node.Liveness of the node's state, from what its series index keeps of
// the wave.* series as they change: no series is read. Callers hold the read lock at
// least.
func (n *nodeState) liveness(id string) Liveness {
	l := Liveness{Node: id, LastSeen: n.lastSeen, LastBatchTS: n.lastTS, Interval: n.interval(), Offset: n.offset,
		Wave: n.series.waves > 0}
	if n.series.waveTS != 0 {
		l.WaveTS = time.Unix(0, n.series.waveTS).UTC()
	}
	return l
}

// Liveness returns every node's Liveness, sorted by node: what Nodes would give for
// each (Node.Liveness) without copying a series or sorting, for a check that runs all
// the time.
func (a *Incremental) Liveness() []Liveness {
	a.rlock()
	defer a.mu.RUnlock()
	out := make([]Liveness, 0, len(a.ids))
	for _, id := range a.ids {
		out = append(out, a.nodes[id].liveness(id))
	}
	return out
}

// Nodes returns every node's analysis, sorted by node, with every series.
func (a *Incremental) Nodes() []Node {
	a.rlock()
	out := make([]Node, 0, len(a.nodes))
	orders := make([]bySeries, 0, len(a.nodes))
	for id, n := range a.nodes {
		nd, order := n.export(id)
		out = append(out, nd)
		orders = append(orders, order)
	}
	a.mu.RUnlock()
	for _, o := range orders {
		sort.Sort(o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// NodeIDs lists the known nodes, sorted.
func (a *Incremental) NodeIDs() []string {
	a.rlock()
	defer a.mu.RUnlock()
	out := make([]string, 0, len(a.nodes))
	for id := range a.nodes {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Views returns a NodeView per node with liveness, whether it runs a wave (Node.Wave)
// and the node-level (unlabelled) series of the current hour, carried ones included and
// stopped ones not (a wave that stopped reporting has no wave.tps or wave.instances,
// rather than its last ones); History is left for the caller. The version changes whenever the result would, so
// callers may cache.
func (a *Incremental) Views() ([]*lbplugins.NodeView, uint64) {
	a.rlock()
	defer a.mu.RUnlock()
	out := make([]*lbplugins.NodeView, 0, len(a.nodes))
	for id, n := range a.nodes {
		v := &lbplugins.NodeView{Node: id, LastSeen: n.lastSeen, Interval: n.interval(), Wave: n.wave(),
			Current: make(map[string]lbplugins.Current, len(n.series.plain))}
		for name, s := range n.series.plain {
			if !n.stopped(s) {
				v.Current[name] = s.current()
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, a.version
}
