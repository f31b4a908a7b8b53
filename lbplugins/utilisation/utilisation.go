// Package utilisation places an instance on the wave whose predicted peak utilisation
// stays lowest with it: the judge's load model, the one its rebalancing plans use
// (judge/loadview.go). A wave's utilisation is the CPU cores it uses over its host's
// cores; its peak is the largest over now and the hours of the day; the new instance's
// expected work (rows/s and bytes/s: a hint in the request, else the fleet's typical
// instance) costs each wave at that wave's prices, and so do the placements still
// pending on it. A wave whose peak would exceed the cap (rebalance.max_utilisation) is
// filtered, as is one the model cannot price (no cores, no prices); waves that share a
// host (Capacity.Host) are held to the cap by their host's peak, as the plans hold
// them. When no candidate has the data, the plugin says so and scores as leastload
// does.
package utilisation

import (
	"errors"
	"fmt"
	"math"

	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "utilisation"

func init() { lbplugins.Register(Name, New) }

// Notes of a decision (Decision.Note): constants, so that a placement formats nothing.
const (
	NoteScored   = "scored by each wave's predicted peak utilisation with the instance at that wave's prices: 100 / (1 + peak after)"
	NoteFallback = "no candidate has what the utilisation model needs (its host's cpu.cores and prices fitted from wave.cpu_cores): scored as leastload instead"
)

// Filter reasons, also in the answer's filtered_nodes.
const (
	ReasonNoWave  = "no load model: the node runs no wave, or the judge has not computed its load yet"
	ReasonNoCores = "no cpu.cores: its host's capacity is unknown"
	// ReasonNoPrices is followed by ": " and the judge's why (Capacity.Unpriced) when it
	// gives one.
	ReasonNoPrices = "no prices: the judge has no price of work for it yet"
	reasonOverCap  = "over max_utilisation"
)

// Plugin is the utilisation algorithm. The fallback scores with leastload's default
// weights.
type Plugin struct {
	fallback lbplugins.Weights
}

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin. It takes no settings: its cap is the judge's
// rebalance.max_utilisation, so that placements and plans agree.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	if len(s.Weights) > 0 || s.K != nil || s.ProfileWeight != nil {
		return nil, errors.New("utilisation takes no settings (its cap is rebalance.max_utilisation)")
	}
	w, err := lbplugins.CheckWeights(nil, lbplugins.DefaultWeights())
	if err != nil {
		return nil, err
	}
	return &Plugin{fallback: lbplugins.WeightsOf(w)}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "the wave whose predicted peak utilisation (CPU cores over its host's cores, now and by hour of day) stays lowest with the instance, priced at each wave's fitted prices; waves over rebalance.max_utilisation filtered"
}

// What a node has of the model.
const (
	stateOK uint8 = iota
	stateNoWave
	stateNoCores
	stateNoPrices
)

// eps absorbs rounding: a peak at the cap, within it, passes (the planner's tolerance).
const eps = 1e-9

// Round states.
const (
	roundScored = iota
	roundFallback
)

// prepared is the model's numbers of every node, indexed like the snapshot.
type prepared struct {
	nodes  []node
	priced []int // the nodes in stateOK, in node order
	// pre is leastload's composites for the fallback, when no node has the data.
	pre *lbplugins.Precomposed
}

// node is one node's numbers, together: a decision reads them all for each candidate.
type node struct {
	cores, row, byt, read float64
	peak                  float64 // cores at the peak slot
	utilNow               float64 // NaN when unknown
	peakHour              int32
	state                 uint8
	why                   string // the filter's reason in stateNoPrices
	// host is the node's shared host (nil: a host of its own), which the cap holds.
	host *host
}

// host is a host that several waves share (Capacity.Host): the cap holds its cores and
// its peak, with every placement pending on any of its waves.
type host struct {
	cores, peak float64
	nodes       []int // its waves, in node order
}

// Prepare implements lbplugins.Plugin: the capacities the judge computed per node when it
// built the snapshot, as one flat array.
func (p *Plugin) Prepare(s *lbplugins.Snapshot) any {
	pr := &prepared{nodes: make([]node, s.Len())}
	var hosts map[string]*host // nil while no node shares its host: the usual fleet
	for i, v := range s.Views {
		c, n := v.Capacity, &pr.nodes[i]
		if c != nil && c.Host != "" && c.HostCores > 0 {
			// Every wave of the host, priced or not: the placements pending on any of
			// them weigh on the host.
			if hosts == nil {
				hosts = map[string]*host{}
			}
			h := hosts[c.Host]
			if h == nil {
				h = &host{cores: c.HostCores, peak: nonNeg(c.HostPeakCores)}
				hosts[c.Host] = h
			}
			h.nodes, n.host = append(h.nodes, i), h
		}
		switch {
		case c == nil:
			n.state = stateNoWave
			continue
		case !(c.Cores > 0) || math.IsInf(c.Cores, 1):
			n.state = stateNoCores
			continue
		case !c.Priced:
			n.state, n.why = stateNoPrices, ReasonNoPrices
			if c.Unpriced != "" {
				n.why = ReasonNoPrices + ": " + c.Unpriced // once a snapshot, not a placement
			}
			continue
		}
		n.cores, n.row, n.byt, n.read = c.Cores, nonNeg(c.RowCores), nonNeg(c.ByteCores), nonNeg(c.ReadCores)
		n.peak, n.peakHour, n.utilNow = nonNeg(c.PeakCores), int32(c.PeakHour), math.NaN()
		if c.HasUtilNow {
			n.utilNow = c.UtilNow
		}
		pr.priced = append(pr.priced, i)
	}
	if len(pr.priced) == 0 {
		pr.pre = lbplugins.Precompose(s, &p.fallback)
	}
	return pr
}

// nonNeg keeps a number usable in a sum: NaN, negative and +Inf count as 0.
func nonNeg(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 1) {
		return 0
	}
	return v
}

// Start implements lbplugins.Starter: the round scores in utilisation when some node
// that passes the common filters has the model's data, else it falls back. A NaN,
// negative or infinite expected rate counts as none.
func (p *Plugin) Start(r *lbplugins.Round) {
	pr := r.Prepared.(*prepared)
	e := &r.Req.Expected
	e.Rows, e.Bytes, e.Read = nonNeg(e.Rows), nonNeg(e.Bytes), nonNeg(e.Read)
	for _, i := range pr.priced {
		if r.Passes(i) {
			r.State, r.Note = roundScored, NoteScored
			return
		}
	}
	r.State, r.Note = roundFallback, NoteFallback
}

// Filter implements lbplugins.NodeFilter: a node the model cannot price, or whose peak
// would exceed the cap with the instance and its pending placements.
func (p *Plugin) Filter(r *lbplugins.Round, i int) string {
	if r.State == roundFallback {
		return ""
	}
	n := &r.Prepared.(*prepared).nodes[i]
	switch n.state {
	case stateNoWave:
		return ReasonNoWave
	case stateNoCores:
		return ReasonNoCores
	case stateNoPrices:
		return n.why
	}
	limit := r.Req.MaxUtilisation
	if limit <= 0 {
		return ""
	}
	if n.host != nil {
		return n.host.filter(r, n.cost(r, i), limit)
	}
	// In cores rather than over them: a multiplication where a division would cost a
	// placement more than the rest of its filter.
	cost, pending := n.cost(r, i), r.PendingCores(i)
	if n.peak+pending+cost <= (limit+eps)*n.cores {
		return ""
	}
	if !r.Explaining() {
		return reasonOverCap
	}
	return fmt.Sprintf("%s: predicted peak %.3f > %g with the instance (%.4f cores) and %g pending placements (%.4f cores) on %g cores",
		reasonOverCap, (n.peak+pending+cost)/n.cores, limit, cost, r.Pending(i), pending, n.cores)
}

// filter holds a shared host to the cap with the instance at cost: its waves' peak
// together, and the placements pending on any of them. A share over the cap on a host
// under it takes from its host-mates' idle cores and passes.
func (h *host) filter(r *lbplugins.Round, cost, limit float64) string {
	pending, n := 0.0, 0.0
	for _, m := range h.nodes {
		pending, n = pending+r.PendingCores(m), n+r.Pending(m)
	}
	if h.peak+pending+cost <= (limit+eps)*h.cores {
		return ""
	}
	if !r.Explaining() {
		return reasonOverCap
	}
	return fmt.Sprintf("%s: its host's predicted peak %.3f > %g with the instance (%.4f cores) and %g pending placements on its %d waves (%.4f cores) on the host's %g cores",
		reasonOverCap, (h.peak+pending+cost)/h.cores, limit, cost, n, len(h.nodes), pending, h.cores)
}

// cost is the new instance's expected work at node i's prices, in cores (Start made
// the expected rates non-negative); nothing on the node that runs it already, whose
// peak holds it (an explained placement of a running instance counted it twice there).
func (n *node) cost(r *lbplugins.Round, i int) float64 {
	if r.RunsIt(i) {
		return 0
	}
	return n.row*r.Req.Expected.Rows + n.byt*r.Req.Expected.Bytes + n.read*r.Req.Expected.Read
}

// Score implements lbplugins.Plugin: 100 / (1 + peak after), 100 for an idle wave, 50 at
// a peak of 100 %, and never flat, so that even overloaded waves (no cap) rank.
func (p *Plugin) Score(r *lbplugins.Round, out []float64) {
	pr := r.Prepared.(*prepared)
	if r.State == roundFallback {
		r.CompositeAll(r.AllScope(), &p.fallback, pr.pre, out)
		return
	}
	nodes := pr.nodes
	for k, i := range r.Cands {
		n := &nodes[i]
		after := (n.peak + r.PendingCores(i) + n.cost(r, i)) / n.cores
		out[k] = 100 / (1 + after)
	}
}

// Explain implements lbplugins.Plugin: the host's cores, its utilisation now, its
// predicted peak before (with the pending placements) and after the instance, the
// instance's cost there and the pending placements' cores, in the units of the
// rebalancing plans (utilisations as fractions of the cores). In the fallback,
// leastload's parts.
func (p *Plugin) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	var parts lbplugins.Parts
	i := r.Cands[k]
	if r.State == roundFallback {
		r.Composite(r.AllScope(), &p.fallback, i, &parts)
		return parts
	}
	n := &r.Prepared.(*prepared).nodes[i]
	cores, cost, pending := n.cores, n.cost(r, i), r.PendingCores(i)
	before := (n.peak + pending) / cores
	parts.Exact()
	parts.Add("cores", cores)
	if u := n.utilNow; u == u { // not NaN: the host reports cpu.util
		parts.Add("util_now", round4(u))
	}
	parts.Add("peak_before", round4(before))
	parts.Add("peak_after", round4(before+cost/cores))
	parts.Add("peak_hour", float64(n.peakHour))
	parts.Add("cost_cores", round6(cost))
	parts.Add("pending_cores", round6(pending))
	return parts
}

// round4 keeps four decimals: a utilisation to a hundredth of a percent.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// round6 keeps six decimals: cores to a millionth (a quiet instance costs thousandths).
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
