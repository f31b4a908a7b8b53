// Package analysis holds the judge's two views of load: the incremental analysis of the
// current hour (in memory, updated by every batch) and the historical analysis of the
// hours before it (from the store, recomputed in the background and cached).
package analysis

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/lbplugins"
)

// Sketch parameters. DDSketch (DataDog/sketches-go) was chosen over a t-digest because
// its error bound is relative to the value (1 % here) at every quantile, not only near
// the tails, it is mergeable, and the collapsing store bounds its memory: 2,048 bins of
// 1 % cover about 17 orders of magnitude, from bytes per second to TPS and percentages.
const (
	SketchAccuracy = 0.01
	sketchBins     = 2048
)

// IncrementalOptions configure the current-hour analysis.
type IncrementalOptions struct {
	// Now is the clock; time.Now when nil. Tests inject one to cross the hour.
	Now func() time.Time
	// Alpha is the EWMA's weight of a new sample, 0 < Alpha ≤ 1; 0.2 when zero.
	Alpha float64
	// ForgetAfter drops, at each rollover, nodes silent for longer; 24 h when zero.
	ForgetAfter time.Duration
}

// Incremental keeps streaming statistics per node and series for the current hour
// (by the judge's clock). It is safe for concurrent use.
type Incremental struct {
	now    func() time.Time
	alpha  float64
	forget time.Duration

	mu      sync.RWMutex
	hour    time.Time // start of the current hour
	nodes   map[string]*nodeState
	version uint64 // bumped by every change, so readers can cache derived views
	late    int64  // points skipped because their batch belongs to an earlier hour
}

type nodeState struct {
	lastSeen time.Time     // when the judge received the last batch
	lastTS   time.Time     // the last batch's own timestamp
	declared time.Duration // interval the agent declares
	measured time.Duration // time between the last two batches received
	batches  int64         // this hour
	series   map[string]*seriesState
}

type seriesState struct {
	name   string
	labels map[string]string
	count  int64
	mean   float64
	m2     float64 // Welford's sum of squared deviations
	min    float64
	max    float64
	last   float64
	ewma   float64
	p95    float64
	sketch *ddsketch.DDSketch
}

// NewIncremental returns an empty analysis.
func NewIncremental(o IncrementalOptions) (*Incremental, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Alpha == 0 {
		o.Alpha = 0.2
	}
	if !(o.Alpha > 0 && o.Alpha <= 1) {
		return nil, fmt.Errorf("ewma alpha %v: want 0 < alpha ≤ 1", o.Alpha)
	}
	if o.ForgetAfter <= 0 {
		o.ForgetAfter = 24 * time.Hour
	}
	return &Incremental{
		now: o.Now, alpha: o.Alpha, forget: o.ForgetAfter,
		hour:  o.Now().UTC().Truncate(time.Hour),
		nodes: map[string]*nodeState{},
	}, nil
}

// rollLocked starts a new hour when the clock has left the current one: statistics are
// reset, liveness is kept. Callers hold mu exclusively.
func (a *Incremental) rollLocked(now time.Time) {
	h := now.UTC().Truncate(time.Hour)
	if !h.After(a.hour) {
		return
	}
	a.hour = h
	a.version++
	for id, n := range a.nodes {
		if now.Sub(n.lastSeen) > a.forget {
			delete(a.nodes, id)
			continue
		}
		n.series = map[string]*seriesState{}
		n.batches = 0
	}
}

// needsRoll reports, under the read lock, whether a writer must roll first.
func (a *Incremental) needsRoll(now time.Time) bool {
	return now.UTC().Truncate(time.Hour).After(a.hour)
}

func (a *Incremental) rlock() time.Time {
	now := a.now()
	a.mu.RLock()
	if a.needsRoll(now) {
		a.mu.RUnlock()
		a.mu.Lock()
		a.rollLocked(now)
		a.mu.Unlock()
		a.mu.RLock()
	}
	return now
}

func seriesID(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	return name + "{" + store.LabelKey(labels) + "}"
}

// Observe adds a batch. The node's liveness is updated whatever the batch's timestamp;
// its points count toward the current hour unless the batch is from an earlier hour
// (a late delivery), in which case they are only stored, not analysed.
func (a *Incremental) Observe(b metric.Batch) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rollLocked(now)
	a.version++
	n, ok := a.nodes[b.Node]
	if !ok {
		n = &nodeState{series: map[string]*seriesState{}}
		a.nodes[b.Node] = n
	}
	if !n.lastSeen.IsZero() && now.After(n.lastSeen) {
		n.measured = now.Sub(n.lastSeen)
	}
	n.lastSeen = now
	n.lastTS = b.TS
	n.declared = time.Duration(b.IntervalS * float64(time.Second))
	n.batches++
	if !b.TS.IsZero() && b.TS.Before(a.hour) {
		a.late += int64(len(b.Points))
		return
	}
	for _, p := range b.Points {
		id := seriesID(p.Name, p.Labels)
		s, ok := n.series[id]
		if !ok {
			sk, err := ddsketch.LogCollapsingLowestDenseDDSketch(SketchAccuracy, sketchBins)
			if err != nil {
				panic(err) // constant, valid parameters
			}
			s = &seriesState{name: p.Name, labels: p.Labels, sketch: sk, min: p.Value, max: p.Value, ewma: p.Value}
			n.series[id] = s
		}
		s.add(p.Value, a.alpha)
	}
}

func (s *seriesState) add(v, alpha float64) {
	s.count++
	d := v - s.mean
	s.mean += d / float64(s.count)
	s.m2 += d * (v - s.mean)
	s.min = math.Min(s.min, v)
	s.max = math.Max(s.max, v)
	s.last = v
	if s.count > 1 {
		s.ewma = alpha*v + (1-alpha)*s.ewma
	}
	if err := s.sketch.Add(v); err == nil {
		// Recomputed here, once per point, so that reads (every placement) stay cheap.
		if q, err := s.sketch.GetValueAtQuantile(0.95); err == nil {
			s.p95 = q
		}
	}
}

func (s *seriesState) current() lbplugins.Current {
	sd := 0.0
	if s.count > 1 {
		sd = math.Sqrt(s.m2 / float64(s.count-1))
	}
	return lbplugins.Current{Count: s.count, Mean: s.mean, Stddev: sd, Min: s.min, Max: s.max, Last: s.last, EWMA: s.ewma, P95: s.p95}
}

// Series is one series' current-hour statistics.
type Series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	lbplugins.Current
}

// Node is one node's current-hour analysis and liveness.
type Node struct {
	Node     string    `json:"node"`
	LastSeen time.Time `json:"last_seen"`
	// LastBatchTS is the timestamp the agent put on its last batch.
	LastBatchTS time.Time `json:"last_batch_ts"`
	// Interval is the declared interval, or the measured one when none was declared.
	Interval time.Duration `json:"-"`
	Batches  int64         `json:"batches_this_hour"`
	Series   []Series      `json:"series"` // sorted by name, then labels
}

func (n *nodeState) interval() time.Duration {
	if n.declared > 0 {
		return n.declared
	}
	return n.measured
}

func (n *nodeState) export(id string, withSeries bool) Node {
	out := Node{Node: id, LastSeen: n.lastSeen, LastBatchTS: n.lastTS, Interval: n.interval(), Batches: n.batches}
	if withSeries {
		out.Series = make([]Series, 0, len(n.series))
		for _, s := range n.series {
			out.Series = append(out.Series, Series{Name: s.name, Labels: s.labels, Current: s.current()})
		}
		sort.Slice(out.Series, func(i, j int) bool {
			if out.Series[i].Name != out.Series[j].Name {
				return out.Series[i].Name < out.Series[j].Name
			}
			return store.LabelKey(out.Series[i].Labels) < store.LabelKey(out.Series[j].Labels)
		})
	}
	return out
}

// Hour returns the start of the current hour.
func (a *Incremental) Hour() time.Time {
	a.rlock()
	defer a.mu.RUnlock()
	return a.hour
}

// Node returns one node's analysis, with every series.
func (a *Incremental) Node(id string) (Node, bool) {
	a.rlock()
	defer a.mu.RUnlock()
	n, ok := a.nodes[id]
	if !ok {
		return Node{}, false
	}
	return n.export(id, true), true
}

// Nodes returns every node's analysis, sorted by node, with every series.
func (a *Incremental) Nodes() []Node {
	a.rlock()
	defer a.mu.RUnlock()
	out := make([]Node, 0, len(a.nodes))
	for id, n := range a.nodes {
		out = append(out, n.export(id, true))
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

// Views returns a NodeView per node with liveness and the node-level (unlabelled)
// series of the current hour; History is left for the caller. The version changes
// whenever the result would, so callers may cache.
func (a *Incremental) Views() ([]*lbplugins.NodeView, uint64) {
	a.rlock()
	defer a.mu.RUnlock()
	out := make([]*lbplugins.NodeView, 0, len(a.nodes))
	for id, n := range a.nodes {
		v := &lbplugins.NodeView{Node: id, LastSeen: n.lastSeen, Interval: n.interval(), Current: make(map[string]lbplugins.Current, len(n.series))}
		for _, s := range n.series {
			if len(s.labels) == 0 {
				v.Current[s.name] = s.current()
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, a.version
}

// Version changes whenever the analysis changes.
func (a *Incremental) Version() uint64 {
	a.rlock()
	defer a.mu.RUnlock()
	return a.version
}

// Late is the number of points skipped because their batch was from an earlier hour.
func (a *Incremental) Late() int64 {
	a.rlock()
	defer a.mu.RUnlock()
	return a.late
}
