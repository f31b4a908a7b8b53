package lbplugins

// Resources the weighted-sum plugins (leastload, balanced, p2c) weigh. Each turns into a
// utilisation between 0 (idle) and 1 (full) per node; see Usage.
const (
	ResCPU       = "cpu"       // cpu.util / 100
	ResMemory    = "memory"    // mem.used_pct / 100
	ResLoad      = "load"      // load.1 per core (cpu.cores), or relative to the busiest candidate
	ResNetwork   = "network"   // net.rx_bps + net.tx_bps relative to the busiest candidate
	ResTPS       = "tps"       // wave.tps relative to the busiest candidate
	ResInstances = "instances" // wave.instances relative to the candidate running most
)

// AllResources lists the resources in a fixed order, for stable explanations.
var AllResources = []string{ResCPU, ResMemory, ResLoad, ResNetwork, ResTPS, ResInstances}

// rawUsage reads one resource's raw level from a node.
func rawUsage(n *NodeView, res string) (float64, bool) {
	switch res {
	case ResCPU:
		v, ok := n.Load(CPUUtil)
		return v / 100, ok
	case ResMemory:
		v, ok := n.Load(MemUsedPct)
		return v / 100, ok
	case ResLoad:
		v, ok := n.Load(Load1)
		if !ok {
			return 0, false
		}
		if cores, ok := n.Load(CPUCores); ok && cores > 0 {
			return v / cores, true
		}
		return v, true
	case ResNetwork:
		rx, ok1 := n.Load(NetRxBps)
		tx, ok2 := n.Load(NetTxBps)
		return rx + tx, ok1 || ok2
	case ResTPS:
		return n.Load(WaveTPS)
	case ResInstances:
		return n.Load(WaveInstances)
	}
	return 0, false
}

// relative reports whether a resource has no absolute capacity and is compared with the
// busiest candidate instead.
func relative(n *NodeView, res string) bool {
	switch res {
	case ResNetwork, ResTPS, ResInstances:
		return true
	case ResLoad:
		cores, ok := n.Load(CPUCores)
		return !ok || cores <= 0
	}
	return false
}

// Scope is what a resource's utilisation is relative to: a set of candidates (all of a
// round's, or p2c's drawn pair). For each resource it records whether any member
// reports it and the largest relative level among them (at least 1, so that near-idle
// clusters are not magnified).
type Scope struct {
	any    [numRes]bool
	maxRel [numRes]float64
}

// ScopeOf computes the scope of the given node indices of the round's snapshot.
func (r *Round) ScopeOf(nodes []int) Scope {
	var sc Scope
	for res := range numRes {
		sc.maxRel[res] = 1
	}
	for _, i := range nodes {
		r.widen(&sc, i)
	}
	return sc
}

func (r *Round) widen(sc *Scope, i int) {
	for res := range numRes {
		switch r.Snap.kind[res][i] {
		case kindMissing:
		case kindRel:
			sc.any[res] = true
			if v := r.raw(res, i); v > sc.maxRel[res] {
				sc.maxRel[res] = v
			}
		default:
			sc.any[res] = true
		}
	}
}

// raw is a node's raw level of a resource with its pending reservations added.
func (r *Round) raw(res, i int) float64 {
	v := r.Snap.raw[res][i]
	if p := r.pend[i]; p != 0 {
		v += p * r.Snap.demand[res]
	}
	return v
}

// Level returns node i's raw level of resource res with its pending reservations
// added, and false when the node does not report it.
func (r *Round) Level(res, i int) (float64, bool) {
	if r.Snap.kind[res][i] == kindMissing {
		return 0, false
	}
	return r.raw(res, i), true
}

// Mask has bit res set for every resource with a weight.
func (w *Weights) Mask() uint8 {
	var m uint8
	for res := range numRes {
		if w[res] > 0 {
			m |= 1 << res
		}
	}
	return m
}

// AllScope is the scope of every candidate of the round, computed on first use (random
// and predictive never need it).
func (r *Round) AllScope() *Scope {
	if !r.allDone {
		r.all, r.allDone = r.scopeOfCands(), true
	}
	return &r.all
}

// scopeOfCands computes the scope of the round's candidates. A relative resource's
// largest level is the first candidate in the snapshot's list of nodes by level, raised
// by the pending reservations of candidates (raise), so that it costs no pass over the
// candidates when none is reserved.
func (r *Round) scopeOfCands() Scope {
	var sc Scope
	var rel [numRes]int // the relative resources to raise by reservations
	nRel := 0
	for res := range numRes {
		sc.maxRel[res] = 1
		if r.anyMask&(1<<res) == 0 {
			continue
		}
		sc.any[res] = true
		if !r.Snap.hasRel[res] {
			continue // no node compares this resource relatively
		}
		raw := r.Snap.raw[res]
		for _, i := range r.Snap.byLevel[res] {
			if r.isCand[i] {
				sc.maxRel[res] = max(1, raw[i])
				break
			}
		}
		rel[nRel] = res
		nRel++
	}
	if nRel == 0 {
		return sc
	}
	if len(r.marked) > r.nExcluded { // reservations pending: raise by them
		r.raise(&sc, rel[:nRel])
	}
	return sc
}

// Usage returns node i's utilisation (0–1) of resource res (an index into
// AllResources) within scope sc, and false when no member of the scope reports the
// resource. Absolute resources (cpu, memory, load per core) are fractions of the node's
// capacity; relative ones are divided by the scope's largest level. A node that does not
// report a resource others report counts as full on it: placing work on a node the judge
// cannot see is the riskier choice. Pending reservations count.
func (r *Round) Usage(sc *Scope, res, i int) (float64, bool) {
	if !sc.any[res] {
		return 0, false
	}
	switch r.Snap.kind[res][i] {
	case kindMissing:
		return 1, true
	case kindRel:
		return clamp01(r.raw(res, i) / sc.maxRel[res]), true
	}
	return clamp01(r.raw(res, i)), true
}

// clamp01 clamps to [0, 1], NaN to 1. Plain comparisons: math.Max and math.Min handle
// signed zeros and NaN in a call that costs more than the rest of a node's score.
func clamp01(v float64) float64 {
	switch {
	case v != v:
		return 1
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

// Weights are the per-resource weights of a weighted-sum score, in the order of
// AllResources.
type Weights [numRes]float64

// WeightsOf turns checked weights (CheckWeights) into Weights.
func WeightsOf(m map[string]float64) Weights {
	var w Weights
	for res, name := range AllResources {
		w[res] = m[name]
	}
	return w
}

// CompositeAll writes the Composite of every candidate of the round into out: the hot
// loop of leastload. When the round's scope is the one pre was computed in, it gathers
// the precomputed composites; otherwise it goes resource by resource over the snapshot's
// arrays (absolute resources read the free capacity precomputed per node, relative ones
// divide by the scope's largest level). Candidates with pending reservations are then
// scored one by one, their levels raised; when many have some, the pass per resource
// raises them on the way instead. The sums come out bit for bit as Composite's.
func (r *Round) CompositeAll(sc *Scope, w *Weights, pre *Precomposed, out []float64) {
	manyPending := len(r.pendCands) > len(r.Cands)/8
	switch {
	case manyPending:
		r.compositeCached(sc, w, out)
		return
	case pre.fits(sc, w):
		for k, i := range r.Cands {
			out[k] = pre.vals[i]
		}
	default:
		r.compositeEach(sc, w, false, out)
	}
	for _, k := range r.pendCands {
		out[k] = r.Composite(sc, w, r.Cands[k], nil)
	}
}

// compositeEach is CompositeAll resource by resource; with pending, levels are raised by
// the candidates' pending reservations.
func (r *Round) compositeEach(sc *Scope, w *Weights, pending bool, out []float64) {
	clear(out)
	total := 0.0
	for res := range numRes {
		if sc.any[res] {
			total += w[res]
		}
	}
	if total == 0 {
		return
	}
	for res := range numRes {
		wr := w[res]
		if !sc.any[res] || wr == 0 {
			continue
		}
		coef := 100 * wr / total
		free := r.Snap.free[res]
		if pending {
			r.compositePending(res, coef, sc.maxRel[res], out)
			continue
		}
		if !r.Snap.hasRel[res] {
			for k, i := range r.Cands {
				out[k] += coef * free[i]
			}
			continue
		}
		kind, raw, maxRel := r.Snap.kind[res], r.Snap.raw[res], sc.maxRel[res]
		for k, i := range r.Cands {
			if kind[i] != kindRel {
				out[k] += coef * free[i]
				continue
			}
			out[k] += coef * (1 - relUsage(raw[i], maxRel))
		}
	}
}

// compositePending is compositeEach's loop for one resource when reservations are
// pending on many candidates: every level is raised by its node's pending instances.
func (r *Round) compositePending(res int, coef, maxRel float64, out []float64) {
	// Locals, so that the loop keeps them in registers (stores into out could alias r's
	// fields otherwise), and out's length proven once.
	kind, raw, pend, demand := r.Snap.kind[res], r.Snap.raw[res], r.pend, r.Snap.demand[res]
	cands := r.Cands
	out = out[:len(cands)]
	for k, i := range cands {
		v := raw[i]
		if p := pend[i]; p != 0 {
			v += p * demand
		}
		switch kind[i] {
		case kindMissing:
			continue // full: its contribution is 0
		case kindRel:
			v /= maxRel
		}
		out[k] += coef * (1 - clamp01(v))
	}
}

// Composite is node i's weighted free capacity within scope sc: 100·Σ w·(1−u) / Σ w over
// the resources the scope reports. With parts it also fills the per-resource
// contributions, which add up to the score.
func (r *Round) Composite(sc *Scope, w *Weights, i int, parts *Parts) float64 {
	total := 0.0
	for res := range numRes {
		if sc.any[res] {
			total += w[res]
		}
	}
	if total == 0 {
		return 0
	}
	score := 0.0
	for res := range numRes {
		u, ok := r.Usage(sc, res, i)
		if !ok || w[res] == 0 {
			continue
		}
		c := 100 * w[res] / total * (1 - u) // as CompositeAll computes it
		if parts != nil {
			parts.Add(AllResources[res], c)
		}
		score += c
	}
	return score
}

// DefaultWeights are leastload's and p2c's weights when judge.yaml sets none: CPU and
// memory dominate, the load average confirms CPU pressure, and the wave's own figures
// spread instances and traffic.
func DefaultWeights() map[string]float64 {
	return map[string]float64{ResCPU: 3, ResMemory: 2, ResLoad: 1, ResNetwork: 1, ResTPS: 1, ResInstances: 2}
}
