// Package leastload places an instance on the node with the most free capacity: a
// weighted composite of CPU, memory, load per core, network, wave TPS and instance count
// (the Kubernetes LeastAllocated idea over the judge's current-hour analysis).
package leastload

import (
	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "leastload"

func init() { lbplugins.Register(Name, New) }

// Plugin scores 100·Σ w·(1−u)/Σ w; see lbplugins.Round.Usage for u. The parts are the
// per-resource contributions and add up to the score.
type Plugin struct {
	weights lbplugins.Weights
	mask    uint8 // the weighted resources
}

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin; Settings.Weights override lbplugins.DefaultWeights per resource.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	w, err := lbplugins.CheckWeights(s.Weights, lbplugins.DefaultWeights())
	if err != nil {
		return nil, err
	}
	lw := lbplugins.WeightsOf(w)
	return &Plugin{weights: lw, mask: lw.Mask()}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "the node with the most free capacity: weighted cpu, memory, load per core, network, wave TPS and instance count"
}

// Reads implements lbplugins.ResourceReader: a node that reports none of the weighted
// resources cannot be compared.
func (p *Plugin) Reads() uint8 { return p.mask }

// Prepare implements lbplugins.Plugin: every node's composite in the scope of the likely
// candidates, which most rounds gather instead of computing.
func (p *Plugin) Prepare(s *lbplugins.Snapshot) any { return lbplugins.Precompose(s, &p.weights) }

// Score implements lbplugins.Plugin.
func (p *Plugin) Score(r *lbplugins.Round, out []float64) {
	pre, _ := r.Prepared.(*lbplugins.Precomposed)
	r.CompositeAll(r.AllScope(), &p.weights, pre, out)
}

// Explain implements lbplugins.Plugin.
func (p *Plugin) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	var parts lbplugins.Parts
	r.Composite(r.AllScope(), &p.weights, r.Cands[k], &parts)
	return parts
}
