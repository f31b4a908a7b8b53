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
// after placement. The instance's demand is estimated as the cluster's average usage per
// running instance (Σ usage / Σ wave.instances over the candidates), or nothing when no
// candidate reports instances. Parts: each resource's utilisation after placement in
// percent ("cpu_after"), and "stddev" in percent points.
type Plugin struct{ weights map[string]float64 }

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin; Settings.Weights override DefaultWeights.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	w, err := lbplugins.CheckWeights(s.Weights, DefaultWeights())
	if err != nil {
		return nil, err
	}
	return &Plugin{weights: w}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "the node whose resource utilisations stay most even after placement (Kubernetes BalancedAllocation)"
}

// Filter implements lbplugins.Plugin: only the common filters apply.
func (*Plugin) Filter(lbplugins.Request, *lbplugins.NodeView) string { return "" }

// Score implements lbplugins.Plugin.
func (p *Plugin) Score(_ lbplugins.Request, cs []*lbplugins.NodeView) []lbplugins.Score {
	var used []string
	for _, res := range lbplugins.AllResources {
		if p.weights[res] > 0 {
			used = append(used, res)
		}
	}
	usage := lbplugins.Usage(cs, used)
	demand := make(map[string]float64, len(used))
	instances := 0.0
	for _, n := range cs {
		if v, ok := n.Load(lbplugins.WaveInstances); ok {
			instances += v
		}
	}
	if instances > 0 {
		for _, res := range used {
			sum := 0.0
			for i := range cs {
				sum += usage[i][res]
			}
			demand[res] = sum / instances
		}
	}
	out := make([]lbplugins.Score, len(cs))
	for i := range cs {
		parts := map[string]float64{}
		wsum, mean := 0.0, 0.0
		after := map[string]float64{}
		for _, res := range used {
			u, ok := usage[i][res]
			if !ok {
				continue // no candidate reports it
			}
			a := math.Min(1, u+demand[res])
			after[res] = a
			parts[res+"_after"] = 100 * a
			wsum += p.weights[res]
			mean += p.weights[res] * a
		}
		if wsum == 0 {
			parts["stddev"] = 0
			out[i] = lbplugins.Score{Value: 100, Parts: parts}
			continue
		}
		mean /= wsum
		variance := 0.0
		for res, a := range after {
			variance += p.weights[res] * (a - mean) * (a - mean)
		}
		sd := math.Sqrt(variance / wsum)
		parts["stddev"] = 100 * sd
		out[i] = lbplugins.Score{Value: 100 * (1 - sd), Parts: parts}
	}
	return out
}
