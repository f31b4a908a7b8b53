// Package lbplugins holds the placement algorithms of the judge ("on which wave should
// this new instance run?") behind one interface, in the shape of the Kubernetes
// scheduler framework: common filters and the plugin's own Filter remove nodes with a
// named reason, the plugin scores the remaining candidates 0–100 (a weighted sum of
// parts), the highest score wins, and the answer explains every node's score.
//
// Plugins live in subpackages and register themselves at init time; import
// lbplugins/all to get every one. A plugin sees only NodeView values, built by the
// judge from its analyses, so no plugin touches the store or the bus.
package lbplugins

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Metric names the plugins read. Most are the canonical names of internal/metric,
// repeated here so that this package has no dependency on the wire format. CPUCores is
// not canonical: when an agent reports it, leastload and balanced divide the load
// average by it; without it, the load average is compared across the candidates.
const (
	CPUUtil       = "cpu.util"
	MemUsedPct    = "mem.used_pct"
	Load1         = "load.1"
	NetRxBps      = "net.rx_bps"
	NetTxBps      = "net.tx_bps"
	WaveTPS       = "wave.tps"
	WaveInstances = "wave.instances"
	CPUCores      = "cpu.cores"
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
	// Now is the decision time, set by Decide.
	Now time.Time
}

// Score is one candidate's score (0–100) and its parts. Parts add up to Value for the
// weighted-sum plugins; Notes carry the raw inputs that explain a part.
type Score struct {
	Node  string             `json:"node"`
	Value float64            `json:"score"`
	Parts map[string]float64 `json:"parts"`
}

// Filtered is a node that may not take the instance, with the reason.
type Filtered struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// Plugin is one placement algorithm.
type Plugin interface {
	// Name is the algorithm's registered name.
	Name() string
	// Description is one sentence for GET /v1/plugins.
	Description() string
	// Filter returns a non-empty reason when the node must not take the instance. It runs
	// after the common filters (excluded, stale, over threshold).
	Filter(req Request, n *NodeView) string
	// Score scores every candidate that passed the filters (at least one), in the same
	// order. Values outside 0–100 are clamped by Decide.
	Score(req Request, candidates []*NodeView) []Score
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

// Decision is the outcome of one placement.
type Decision struct {
	Node      string
	Algorithm string
	Scores    []Score    // every candidate, best first
	Filtered  []Filtered // sorted by node
	// DataAsOf is the oldest LastSeen among the scored candidates: every score rests on
	// data at least this fresh.
	DataAsOf time.Time
}

// ErrNoCandidates is returned (wrapped, with the reasons) when every node was filtered.
var ErrNoCandidates = errors.New("no live node can take the instance")

// Decide runs the common filters, the plugin's filter and its score over nodes, and picks
// the highest score; ties go to the first node by name, so that equal clusters give
// repeatable answers. now is the decision time (for staleness).
func Decide(p Plugin, f Filters, req Request, nodes []*NodeView, now time.Time) (Decision, error) {
	stale := f.StaleIntervals
	if stale <= 0 {
		stale = 3
	}
	defInterval := f.DefaultInterval
	if defInterval <= 0 {
		defInterval = 10 * time.Second
	}
	excluded := make(map[string]bool, len(req.Exclude))
	for _, e := range req.Exclude {
		excluded[e] = true
	}
	thresholdNames := make([]string, 0, len(f.Thresholds))
	for name := range f.Thresholds {
		thresholdNames = append(thresholdNames, name)
	}
	sort.Strings(thresholdNames)

	req.Now = now
	d := Decision{Algorithm: p.Name()}
	candidates := make([]*NodeView, 0, len(nodes))
	for _, n := range nodes {
		reason := ""
		switch {
		case excluded[n.Node]:
			reason = "excluded"
		default:
			iv := n.Interval
			if iv <= 0 {
				iv = defInterval
			}
			limit := time.Duration(stale * float64(iv))
			if age := now.Sub(n.LastSeen); n.LastSeen.IsZero() || age > limit {
				reason = fmt.Sprintf("stale: no batch for %s (limit %g intervals of %s)", age.Round(time.Second), stale, iv)
				if n.LastSeen.IsZero() {
					reason = "stale: no batch this hour"
				}
				break
			}
			for _, name := range thresholdNames {
				if v, ok := n.Load(name); ok && v > f.Thresholds[name] {
					reason = fmt.Sprintf("over threshold: %s %.4g > %g", name, v, f.Thresholds[name])
					break
				}
			}
			if reason == "" {
				reason = p.Filter(req, n)
			}
		}
		if reason != "" {
			d.Filtered = append(d.Filtered, Filtered{Node: n.Node, Reason: reason})
			continue
		}
		candidates = append(candidates, n)
	}
	slices.SortFunc(d.Filtered, func(a, b Filtered) int { return strings.Compare(a.Node, b.Node) })
	if len(candidates) == 0 {
		if len(nodes) == 0 {
			return d, fmt.Errorf("%w: the judge has not heard from any node", ErrNoCandidates)
		}
		return d, fmt.Errorf("%w: all %d nodes filtered (%s)", ErrNoCandidates, len(nodes), summarise(d.Filtered))
	}
	scores := p.Score(req, candidates)
	if len(scores) != len(candidates) {
		return d, fmt.Errorf("plugin %s returned %d scores for %d candidates", p.Name(), len(scores), len(candidates))
	}
	for i := range scores {
		scores[i].Node = candidates[i].Node
		v := scores[i].Value
		if math.IsNaN(v) {
			v = 0
		}
		scores[i].Value = round2(math.Max(0, math.Min(100, v)))
		for k, pv := range scores[i].Parts {
			scores[i].Parts[k] = round2(pv)
		}
		if d.DataAsOf.IsZero() || candidates[i].LastSeen.Before(d.DataAsOf) {
			d.DataAsOf = candidates[i].LastSeen
		}
	}
	// Node names are unique, so this order is total and an unstable sort is enough.
	slices.SortFunc(scores, func(a, b Score) int {
		if a.Value != b.Value {
			return cmp.Compare(b.Value, a.Value)
		}
		return strings.Compare(a.Node, b.Node)
	})
	d.Scores = scores
	d.Node = scores[0].Node
	return d, nil
}

// summarise lists up to five filter reasons for an error message.
func summarise(fs []Filtered) string {
	var b strings.Builder
	for i, f := range fs {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(fs)-5)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Node + ": " + f.Reason)
	}
	return b.String()
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

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

// Float64 returns a uniform float in [0, 1).
func (r *Rand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
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
