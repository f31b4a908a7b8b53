package lbplugins

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// Filters are the checks common to every algorithm.
type Filters struct {
	// StaleIntervals: a node whose last batch is older than this many of its reporting
	// intervals is stale. 3 when zero.
	StaleIntervals float64
	// DefaultInterval is assumed for a node that declared no interval. 10 s when zero.
	DefaultInterval time.Duration
	// Thresholds are hard limits on the current level (NodeView.Load) of a metric:
	// a node above any of them is filtered ("cpu.util": 90).
	Thresholds map[string]float64
}

// Resource indices into the snapshot's arrays, in the order of AllResources.
const (
	resCPU = iota
	resMemory
	resLoad
	resNetwork
	resTPS
	resInstances
	numRes
)

// NumResources is the number of resources: the length of AllResources and Weights, and
// the bound of the res index that Round.Usage and Round.Level take.
const NumResources = numRes

// How a node reports one resource.
const (
	kindMissing uint8 = iota // not reported: the node counts as full on it
	kindAbs                  // a fraction of the node's own capacity
	kindRel                  // compared with the busiest candidate
)

// Snapshot is an immutable view of every node for placement decisions: the NodeView
// inputs sorted by name, the common filters' verdicts that do not depend on the request
// (threshold, the time a node turns stale) and each resource's raw level as
// flat arrays. Build one with NewSnapshot whenever the analyses change; any number of
// decisions may then run on it at once.
type Snapshot struct {
	// Views are the inputs, sorted by node name; index i of every array is Views[i].
	Views []*NodeView
	// BuiltAt is when the snapshot was built (for the answer's data age).
	BuiltAt time.Time

	filters    Filters
	thresholds []string // sorted names of Filters.Thresholds
	index      map[string]int
	lastSeen   []int64 // UnixNano; 0 when never seen
	staleAt    []int64 // UnixNano after which the node is stale
	interval   []time.Duration
	over       []int32 // 1 + index into thresholds of the first exceeded, 0 when none
	wave       []uint8 // why the node is no wave to place on (noWave, waveStopped); 0: it may be one
	kind       [numRes][]uint8
	reports    []uint8 // bit res set when the node reports resource res
	hasRel     [numRes]bool
	byLevel    [numRes][]int32 // relative nodes whose raw level exceeds 1, highest first
	raw        [numRes][]float64
	free       [numRes][]float64 // 1 − usage of an absolute resource; 0 when not reported
	demand     [numRes]float64
	likely     likelySet
	prepared   map[string]any
}

// NewSnapshot builds a snapshot of nodes (node names must be unique) under the common
// filters f, and runs each plugin's Prepare on it.
func NewSnapshot(nodes []*NodeView, f Filters, builtAt time.Time, plugins ...Plugin) *Snapshot {
	if f.StaleIntervals <= 0 {
		f.StaleIntervals = metric.DefaultStaleIntervals
	}
	if f.DefaultInterval <= 0 {
		f.DefaultInterval = metric.DefaultInterval
	}
	s := &Snapshot{filters: f, BuiltAt: builtAt, prepared: make(map[string]any, len(plugins))}
	for name := range f.Thresholds {
		s.thresholds = append(s.thresholds, name)
	}
	slices.Sort(s.thresholds)
	s.Views = slices.Clone(nodes)
	slices.SortFunc(s.Views, func(a, b *NodeView) int { return strings.Compare(a.Node, b.Node) })
	n := len(s.Views)
	s.index = make(map[string]int, n)
	s.lastSeen, s.staleAt = make([]int64, n), make([]int64, n)
	s.interval, s.over, s.reports = make([]time.Duration, n), make([]int32, n), make([]uint8, n)
	for r := range numRes {
		s.kind[r], s.raw[r], s.free[r] = make([]uint8, n), make([]float64, n), make([]float64, n)
	}
	s.wave = make([]uint8, n)
	anyWave := slices.ContainsFunc(s.Views, func(v *NodeView) bool { return v.Wave != WaveUnknown })
	for i, v := range s.Views {
		s.index[v.Node] = i
		s.fillNode(i, v)
		switch {
		case v.Wave == WaveStopped:
			s.wave[i] = waveStopped
		case v.Wave == WaveUnknown && anyWave:
			s.wave[i] = noWave
		}
	}
	s.fillDemand()
	s.fillByLevel()
	s.fillLikely()
	for _, p := range plugins {
		s.prepared[p.Name()] = p.Prepare(s)
	}
	return s
}

// Why a node is no wave to place on (Snapshot.wave).
const (
	noWave      = 1 + iota // no wave series, while other nodes have them
	waveStopped            // its wave series stopped
)

// blocked reports whether node i is filtered whatever the request: over a threshold,
// or no wave to place on.
func (s *Snapshot) blocked(i int) bool { return s.over[i] != 0 || s.wave[i] != 0 }

func (s *Snapshot) fillNode(i int, v *NodeView) {
	iv := v.Interval
	if iv <= 0 {
		iv = s.filters.DefaultInterval
	}
	s.interval[i] = iv
	if !v.LastSeen.IsZero() {
		s.lastSeen[i] = v.LastSeen.UnixNano()
		s.staleAt[i] = s.lastSeen[i] + int64(metric.StaleAfter(iv, s.filters.StaleIntervals)) // metric.Stale's rule
	}
	for t, name := range s.thresholds {
		if l, ok := v.Load(name); ok && l > s.filters.Thresholds[name] {
			s.over[i] = int32(t + 1)
			break
		}
	}
	for r := range numRes {
		raw, ok := rawUsage(v, AllResources[r])
		switch {
		case !ok:
			s.kind[r][i] = kindMissing
		case relative(v, AllResources[r]):
			s.kind[r][i] = kindRel
			s.hasRel[r] = true
		default:
			s.kind[r][i] = kindAbs
		}
		if ok {
			s.reports[i] |= 1 << r
		}
		if s.kind[r][i] == kindAbs {
			s.free[r][i] = 1 - clamp01(raw)
		}
		s.raw[r][i] = raw
	}
}

// fillDemand estimates what one more instance adds to each resource: the live cluster's
// total over its running instances (wave.instances), in the resource's raw unit. With
// no instance reported anywhere only the instance count itself grows.
func (s *Snapshot) fillDemand() {
	instances := 0.0
	var total [numRes]float64
	for i := range s.Views {
		if s.kind[resInstances][i] == kindMissing {
			continue
		}
		instances += s.raw[resInstances][i]
		for r := range numRes {
			if s.kind[r][i] != kindMissing && !math.IsNaN(s.raw[r][i]) && !math.IsInf(s.raw[r][i], 0) {
				total[r] += s.raw[r][i]
			}
		}
	}
	if instances > 0 {
		for r := range numRes {
			s.demand[r] = total[r] / instances
		}
	}
	s.demand[resInstances] = 1
}

// fillByLevel lists, per relative resource, the nodes whose level may be a scope's
// largest (above the floor of 1; NaN never is), highest first.
func (s *Snapshot) fillByLevel() {
	for r := range numRes {
		var l []int32
		for i, k := range s.kind[r] {
			if k == kindRel && s.raw[r][i] > 1 {
				l = append(l, int32(i))
			}
		}
		raw := s.raw[r]
		slices.SortFunc(l, func(a, b int32) int { return cmp.Compare(raw[b], raw[a]) })
		s.byLevel[r] = l
	}
}

// Len is the number of nodes.
func (s *Snapshot) Len() int { return len(s.Views) }

// Index returns the position of a node, or false.
func (s *Snapshot) Index(node string) (int, bool) {
	i, ok := s.index[node]
	return i, ok
}

// ResourceIndex is the index of a resource name (one of AllResources), or -1.
func ResourceIndex(name string) int {
	for r, n := range AllResources {
		if n == name {
			return r
		}
	}
	return -1
}

// Demand is the expected raw usage of one more instance on resource res (an index into
// AllResources): what a pending reservation adds to its node. Fractions for cpu and
// memory, the raw unit for the others; 1 for instances.
func (s *Snapshot) Demand(res int) float64 { return s.demand[res] }

// Reserved counts reserved instances per node of one snapshot, and the cores their
// expected work costs there, updated by placements while decisions read them; safe for
// concurrent use.
type Reserved struct {
	n     []atomic.Int32
	cores []atomic.Uint64 // float64 bits
}

// NewReserved returns zero counts for the nodes of s.
func NewReserved(s *Snapshot) *Reserved {
	return &Reserved{n: make([]atomic.Int32, len(s.Views)), cores: make([]atomic.Uint64, len(s.Views))}
}

// Add changes node i's count by delta.
func (r *Reserved) Add(i int, delta int32) { r.n[i].Add(delta) }

// AddCores changes the cores reserved on node i by delta.
func (r *Reserved) AddCores(i int, delta float64) {
	for {
		old := r.cores[i].Load()
		if r.cores[i].CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+delta)) {
			return
		}
	}
}

// Cores is the cores reserved on node i: the expected work of its pending placements
// at its prices (never below zero: sums of floats taken out again may leave a residue).
func (r *Reserved) Cores(i int) float64 { return max(0, math.Float64frombits(r.cores[i].Load())) }
