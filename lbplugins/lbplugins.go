// Package lbplugins holds the placement algorithms of the judge ("on which wave should
// this new instance run?") behind one interface, in the shape of the Kubernetes
// scheduler framework: common filters (and a plugin's own, optionally) remove nodes with
// a named reason, the plugin scores the remaining candidates 0–100 (a weighted sum of
// parts), the highest score wins, and the answer explains the best candidates' scores
// (every node's on request).
//
// Decisions run on a Snapshot: an immutable view of every node, built from NodeView
// values when the judge's analyses change and shared by concurrent placements. It holds
// the levels the plugins read as flat arrays, so that a decision takes no lock and
// allocates nothing per node. Plugins live in subpackages and register themselves at
// init time; import lbplugins/all to get every one. No plugin touches the store or the
// bus.
package lbplugins

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// Metric names the plugins read: the canonical names internal/metric defines (the
// data contract of the metric batch), under the names plugins know them by.
const (
	CPUUtil       = metric.CPUUtil
	MemUsedPct    = metric.MemUsedPct
	Load1         = metric.Load1
	NetRxBps      = metric.NetRxBps
	NetTxBps      = metric.NetTxBps
	WaveTPS       = metric.WaveTPS
	WaveInstances = metric.WaveInstances
	CPUCores      = metric.CPUCores
)

// Current summarises one series over the current hour (the judge's incremental analysis).
// Count, Mean, Min, Max and P95 are the hour's and restart at every hour. The level (Last,
// EWMA) carries across the hour: it is the latest value and the EWMA of all the samples
// so far, continuing from the previous hour's. Stddev is the hour's once it has two
// samples, before that the previous hour's closing one.
type Current struct {
	Count  int64   `json:"count"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Last   float64 `json:"last"`
	EWMA   float64 `json:"ewma"`
	P95    float64 `json:"p95"`
	// Carried: no sample yet this hour (Count is 0); Last, EWMA and Stddev are carried
	// over from the previous hour, so that the level does not vanish at every xx:00.
	Carried bool `json:"carried,omitempty"`
}

// HasLevel reports whether Last and EWMA hold a level: a sample this hour or one carried.
func (c Current) HasLevel() bool { return c.Count > 0 || c.Carried }

// Window summarises one series over a past time range (the historical analysis).
type Window struct {
	Count int64   `json:"count"`
	Avg   float64 `json:"avg"`
	Max   float64 `json:"max"`
	P95   float64 `json:"p95"`
}

// History is one series' historical analysis: the last 24 hours, the last 7 days and the
// hour-of-day profile (UTC hours 0–23) over the last 7 days.
type History struct {
	Day     Window     `json:"day"`
	Week    Window     `json:"week"`
	Profile [24]Window `json:"profile"`
}

// NodeView is everything a plugin may know about one candidate node. Metric maps are
// keyed by metric name and hold the node-level (unlabelled) series.
type NodeView struct {
	Node string
	// LastSeen is when the judge received the node's last batch; Interval is the node's
	// reporting interval (as the agent declares it, or as measured).
	LastSeen time.Time
	Interval time.Duration
	Current  map[string]Current
	History  map[string]History
	// Capacity is the node's load in the judge's load model (judge/loadview.go), the
	// numbers its rebalancing plans use; nil for a node that runs no wave.
	Capacity *Capacity
	// Wave is what the node's metrics say of a wave on it. Every algorithm filters a
	// node whose wave stopped, and one without wave series while other nodes have them
	// (Snapshot: a placement is on a wave).
	Wave WaveState
}

// WaveState is what a node's metrics say of a wave on it: whether its agent reports
// wave.* series, and whether they are still in its recent batches.
type WaveState uint8

// What a node's metrics say of a wave on it.
const (
	// WaveUnknown: no wave.* series this hour. A host without a wave (an alarm's, a
	// judge's), or one whose metrics come without wave series (node_exporter's through
	// remote write): a candidate only when no node of the snapshot has wave series.
	WaveUnknown WaveState = iota
	// WaveRunning: a wave.* series is in the node's recent batches.
	WaveRunning
	// WaveStopped: the node had wave.* series this hour, and every one of them stopped
	// (the judge's analysis.StoppedAfter) while the host's metrics went on: its wave
	// process is down or no longer scraped. Never a candidate.
	WaveStopped
)

// Capacity is a wave node in the judge's load model, in CPU cores: its host's cores,
// the prices the judge fitted for its work, and what it uses at its predicted peak over
// now and the hours of the day (its base and the instances it runs, at its prices).
type Capacity struct {
	// Cores is the host's cores (cpu.cores); 0 when its agent reports none.
	Cores float64
	// RowCores, ByteCores and ReadCores price a row/s and a byte/s published and a binlog
	// byte/s read on this node; Priced is
	// false when the judge has no prices yet, and Unpriced then says why (no wave
	// reports wave.cpu_cores, none has enough samples yet, or the fleet's pooled fit found
	// no cost of work; empty when not known).
	RowCores, ByteCores, ReadCores float64
	Priced                         bool
	Unpriced                       string
	// UtilNow is the host's CPU now over its cores; HasUtilNow is false when the host
	// reports no cpu.util.
	UtilNow    float64
	HasUtilNow bool
	// PeakCores is the cores the node uses at its predicted peak slot; PeakHour that
	// slot's UTC hour (-1: now).
	PeakCores float64
	PeakHour  int
	// Host names the host when the node shares it with other waves ("" when it has one
	// of its own); HostCores is then the host's cores (Cores is the node's share of
	// them) and HostPeakCores the cores its waves use together at their peak slot. A
	// cap holds the host, as the rebalancing plans do.
	Host          string
	HostCores     float64
	HostPeakCores float64
}

// Cost is what work of rows/s and bytes/s published and binlog bytes/s read costs on the
// node, in cores.
func (c *Capacity) Cost(w Work) float64 {
	return c.RowCores*w.Rows + c.ByteCores*w.Bytes + c.ReadCores*w.Read
}

// Work is an instance's work: the rows and bytes per second it publishes, and the binlog
// bytes per second it reads.
type Work struct {
	Rows, Bytes, Read float64
}

// Load returns the value plugins use for "the current level" of a metric: the EWMA,
// which follows the last minutes without jumping on a single sample, carried across the
// hour so that no node loses its level at xx:00.
func (n *NodeView) Load(name string) (float64, bool) {
	c, ok := n.Current[name]
	if !ok || !c.HasLevel() {
		return 0, false
	}
	return c.EWMA, true
}

// Request is what the placement API asks.
type Request struct {
	Instance  string
	Exclude   []string
	Algorithm string
	// Reserved counts, per node of the snapshot decided on, instances placed recently
	// that their nodes do not report yet (the judge's reservations): each counts on its
	// node as a running instance with the cluster's average load per instance
	// (Snapshot.Demand), so that a burst of placements spreads instead of piling onto
	// the node that looked best. Nil when there are none.
	Reserved *Reserved
	// Expected is the new instance's expected work, which the utilisation plugin prices
	// at each candidate's prices (zero: nothing known of it).
	Expected Work
	// RunsOn is the node that runs the instance already (a placement of a running
	// instance, a move): its load holds the instance's work, which the utilisation
	// plugin does not add there again. Empty: none.
	RunsOn string
	// MaxUtilisation caps a candidate's predicted peak utilisation with the instance
	// (the utilisation plugin; the judge's rebalance.max_utilisation); 0: no cap.
	MaxUtilisation float64
	// TopK is how many of the best candidates the decision explains; DefaultTopK when
	// zero, at most MaxTopK. ExplainAll explains every candidate and lists every
	// filtered node with its reason.
	TopK       int
	ExplainAll bool
	// Now is the decision time (staleness, the hour-of-day profile); set by Decide.
	Now time.Time
	// StaleAt, when set and before Now, is the time staleness is judged at instead: the
	// judge's while its metric feed is stalled (the nodes live when it last answered are
	// live), the hour-of-day profile still at Now.
	StaleAt time.Time
}

// DefaultTopK and MaxTopK bound how many candidates an answer explains.
const (
	DefaultTopK = 5
	MaxTopK     = 100
)

// Plugin is one placement algorithm. A plugin is shared by concurrent placements.
type Plugin interface {
	// Name is the algorithm's registered name.
	Name() string
	// Description is one sentence for GET /v1/plugins.
	Description() string
	// Prepare precomputes what Score reads from a snapshot, once per snapshot rather than
	// once per placement; nil when the plugin needs nothing beyond the snapshot's arrays.
	// Decisions hand the result back as Round.Prepared.
	Prepare(s *Snapshot) any
	// Score writes the score of every candidate r.Cands[k] into out[k]. The decision
	// clamps values to 0–100 (NaN to 0) and rounds them to two decimals.
	Score(r *Round, out []float64)
	// Explain returns the parts of candidate r.Cands[k]'s score, after Score ran on r.
	// It runs only for the candidates an answer explains.
	Explain(r *Round, k int) Parts
}

// DataFilter is implemented by plugins that score from the nodes' levels. A node that
// reports none of what the plugin reads is filtered with the reason "no data" rather
// than scored as full or as empty.
type DataFilter interface {
	NoData(r *Round, i int) bool
}

// ResourceReader is implemented by the weighted-sum plugins: a node that reports none
// of the resources in the mask (bit i for AllResources[i]) has no data for them. It is
// DataFilter's fast form, checked without a call per node.
type ResourceReader interface {
	Reads() uint8
}

// Starter is implemented by plugins that look at a round before the filters run (the
// utilisation plugin: whether any candidate has the data it scores by, or it falls
// back). Start may set Round.State and Round.Note.
type Starter interface {
	Start(r *Round)
}

// NodeFilter is implemented by plugins with a filter of their own. It runs after the
// common filters (excluded, stale, no data, over threshold); a non-empty reason removes
// node i of the round's snapshot.
type NodeFilter interface {
	Filter(r *Round, i int) string
}

// Settings configure a plugin (the plugins section of judge.yaml). Each plugin reads the
// fields it documents and rejects weights it does not know.
type Settings struct {
	// Weights of the parts of a weighted-sum score (leastload, balanced, p2c).
	Weights map[string]float64 `yaml:"weights"`
	// K is the risk factor of predictive: risk = mean + K·stddev.
	K *float64 `yaml:"k"`
	// ProfileWeight is the share of predictive's forecast taken from the hour-of-day
	// profile (the rest from the current hour), 0–1.
	ProfileWeight *float64 `yaml:"profile_weight"`
	// Seed makes random and p2c repeatable (tests, benchmarks); 0 seeds from the clock.
	Seed uint64 `yaml:"seed"`
}

// Factory builds a plugin from its settings.
type Factory func(Settings) (Plugin, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Factory{}
)

// Register makes a plugin available by name. It is meant for init functions and panics
// on an empty name, a nil factory or a duplicate: two plugins with one name is a build
// mistake, not a runtime condition.
func Register(name string, f Factory) {
	if name == "" || f == nil {
		panic("lbplugins: Register with an empty name or a nil factory")
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("lbplugins: plugin %q registered twice", name))
	}
	registry[name] = f
}

// Names lists the registered plugins, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknownAlgorithm is returned (wrapped) for a name no plugin registered.
var ErrUnknownAlgorithm = errors.New("unknown algorithm")

// UnknownError names the unknown algorithm and the known ones.
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown algorithm %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Unwrap makes errors.Is(err, ErrUnknownAlgorithm) true.
func (e *UnknownError) Unwrap() error { return ErrUnknownAlgorithm }

// Lookup returns the factory of a registered plugin, or an *UnknownError.
func Lookup(name string) (Factory, error) {
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, &UnknownError{Name: name, Known: Names()}
	}
	return f, nil
}

// New looks a plugin up and builds it.
func New(name string, s Settings) (Plugin, error) {
	f, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	p, err := f(s)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	return p, nil
}

// Rand is a goroutine-safe random source for plugins that draw (random, p2c). Plugins
// are shared by concurrent requests.
type Rand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// NewRand seeds a source; seed 0 seeds from the clock.
func NewRand(seed uint64) *Rand {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return &Rand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// IntN returns a uniform int in [0, n).
func (r *Rand) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.IntN(n)
}

// Fill sets every element of out to a uniform float in [0, 1) scaled by scale, under
// one lock for all (random draws one per candidate).
func (r *Rand) Fill(out []float64, scale float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range out {
		out[i] = scale * r.r.Float64()
	}
}

// CheckWeights rejects weight names outside known and negative weights, and fills the
// defaults for names not given. A zero weight switches a part off.
func CheckWeights(given map[string]float64, defaults map[string]float64) (map[string]float64, error) {
	out := make(map[string]float64, len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	known := make([]string, 0, len(defaults))
	for k := range defaults {
		known = append(known, k)
	}
	sort.Strings(known)
	for k, v := range given {
		if _, ok := defaults[k]; !ok {
			return nil, fmt.Errorf("unknown weight %q (known: %s)", k, strings.Join(known, ", "))
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("weight %q is %v: want a finite number ≥ 0", k, v)
		}
		out[k] = v
	}
	total := 0.0
	for _, v := range out {
		total += v
	}
	if total == 0 {
		return nil, errors.New("all weights are zero")
	}
	return out, nil
}
