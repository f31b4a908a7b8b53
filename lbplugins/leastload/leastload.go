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

// Plugin scores 100·Σ w·(1−u)/Σ w; see lbplugins.Usage for u. The parts are the
// per-resource contributions and add up to the score.
type Plugin struct{ weights map[string]float64 }

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin; Settings.Weights override lbplugins.DefaultWeights per resource.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	w, err := lbplugins.CheckWeights(s.Weights, lbplugins.DefaultWeights())
	if err != nil {
		return nil, err
	}
	return &Plugin{weights: w}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "the node with the most free capacity: weighted cpu, memory, load per core, network, wave TPS and instance count"
}

// Filter implements lbplugins.Plugin: only the common filters apply.
func (*Plugin) Filter(lbplugins.Request, *lbplugins.NodeView) string { return "" }

// Score implements lbplugins.Plugin.
func (p *Plugin) Score(_ lbplugins.Request, cs []*lbplugins.NodeView) []lbplugins.Score {
	usage := lbplugins.Usage(cs, lbplugins.AllResources)
	out := make([]lbplugins.Score, len(cs))
	for i := range cs {
		v, parts := lbplugins.Composite(usage[i], p.weights)
		out[i] = lbplugins.Score{Value: v, Parts: parts}
	}
	return out
}
