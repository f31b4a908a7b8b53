// Package balanced prefers the node whose resource utilisations stay most even after
// the instance is placed, as the Kubernetes NodeResourcesBalancedAllocation score does:
// a node with CPU at 80 % and memory at 20 % wastes memory that nothing can use once CPU
// runs out, so the new instance should go where it evens the two out.
package balanced

import (
	"math"

	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "balanced"

func init() { lbplugins.Register(Name, New) }

// DefaultWeights weigh CPU and memory only, as Kubernetes does; load, network, tps and
// instances may be switched on in judge.yaml.
func DefaultWeights() map[string]float64 {
	return map[string]float64{
		lbplugins.ResCPU: 1, lbplugins.ResMemory: 1, lbplugins.ResLoad: 0,
		lbplugins.ResNetwork: 0, lbplugins.ResTPS: 0, lbplugins.ResInstances: 0,
	}
}

// Plugin scores 100·(1 − σ), σ the weighted standard deviation of the utilisations
// after placement. The instance's demand is estimated as the candidates' average usage
// per running instance (Σ usage / Σ wave.instances over the candidates, reserved
// instances included), or nothing when no candidate reports instances. Parts: each
// resource's utilisation after placement in percent ("cpu_after"), and "stddev" in
// percent points.
type Plugin struct {
	weights lbplugins.Weights
	mask    uint8 // the weighted resources
	used    []int // resources with a weight, in AllResources order
}

var _ lbplugins.Plugin = (*Plugin)(nil)

var instancesRes = lbplugins.ResourceIndex(lbplugins.ResInstances)

// afterParts are the part names of the utilisations after placement.
var afterParts = func() (n [lbplugins.NumResources]string) {
	for res, name := range lbplugins.AllResources {
		n[res] = name + "_after"
	}
	return n
}()

// New builds the plugin; Settings.Weights override DefaultWeights.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	w, err := lbplugins.CheckWeights(s.Weights, DefaultWeights())
	if err != nil {
		return nil, err
	}
	p := &Plugin{weights: lbplugins.WeightsOf(w)}
	p.mask = p.weights.Mask()
	for res := range lbplugins.NumResources {
		if p.weights[res] > 0 {
			p.used = append(p.used, res)
		}
	}
	return p, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "the node whose resource utilisations stay most even after placement (Kubernetes BalancedAllocation)"
}

// Reads implements lbplugins.ResourceReader: a node that reports none of the weighted
// resources cannot be compared.
func (p *Plugin) Reads() uint8 { return p.mask }

// Prepare implements lbplugins.Plugin: the snapshot's arrays are all it reads.
func (*Plugin) Prepare(*lbplugins.Snapshot) any { return nil }

// demand is the instance's estimated usage per resource, from the round's candidates.
func (p *Plugin) demand(r *lbplugins.Round) (d [lbplugins.NumResources]float64) {
	instances := 0.0
	for _, i := range r.Cands {
		if v, ok := r.Level(instancesRes, i); ok {
			instances += v
		}
	}
	if instances <= 0 {
		return d
	}
	for _, res := range p.used {
		sum := 0.0
		for _, i := range r.Cands {
			u, _ := r.Usage(r.AllScope(), res, i)
			sum += u
		}
		d[res] = sum / instances
	}
	return d
}

// score is node i's score; with parts it fills them.
func (p *Plugin) score(r *lbplugins.Round, demand *[lbplugins.NumResources]float64, i int, parts *lbplugins.Parts) float64 {
	var after [lbplugins.NumResources]float64
	var have [lbplugins.NumResources]bool
	wsum, mean := 0.0, 0.0
	for _, res := range p.used {
		u, ok := r.Usage(r.AllScope(), res, i)
		if !ok {
			continue // no candidate reports it
		}
		a := math.Min(1, u+demand[res])
		after[res], have[res] = a, true
		if parts != nil {
			parts.Add(afterParts[res], 100*a)
		}
		wsum += p.weights[res]
		mean += p.weights[res] * a
	}
	if wsum == 0 {
		if parts != nil {
			parts.Add("stddev", 0)
		}
		return 100
	}
	mean /= wsum
	variance := 0.0
	for _, res := range p.used {
		if have[res] {
			variance += p.weights[res] * (after[res] - mean) * (after[res] - mean)
		}
	}
	sd := math.Sqrt(variance / wsum)
	if parts != nil {
		parts.Add("stddev", 100*sd)
	}
	return 100 * (1 - sd)
}

// Score implements lbplugins.Plugin. The demand stays in r.Vec for Explain.
func (p *Plugin) Score(r *lbplugins.Round, out []float64) {
	r.Vec = p.demand(r)
	for k, i := range r.Cands {
		out[k] = p.score(r, &r.Vec, i, nil)
	}
}

// Explain implements lbplugins.Plugin.
func (p *Plugin) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	var parts lbplugins.Parts
	p.score(r, &r.Vec, r.Cands[k], &parts)
	return parts
}
