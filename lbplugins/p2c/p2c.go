// Package p2c is the power of two choices: two random live nodes are compared and the
// less loaded one wins. It spreads load almost as well as comparing every node while
// avoiding the herd effect of many judges picking the same "best" node at once.
package p2c

import (
	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "p2c"

func init() { lbplugins.Register(Name, New) }

// Plugin scores the two drawn nodes 1 + 0.99·(leastload's composite), so a drawn node
// always outranks one not drawn (score 0, part "drawn" 0) even when it is full.
type Plugin struct {
	weights map[string]float64
	rnd     *lbplugins.Rand
}

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin; Settings.Weights as in leastload, Settings.Seed for repeatable draws.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	w, err := lbplugins.CheckWeights(s.Weights, lbplugins.DefaultWeights())
	if err != nil {
		return nil, err
	}
	return &Plugin{weights: w, rnd: lbplugins.NewRand(s.Seed)}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "power of two choices: two random live nodes, the less loaded (leastload's composite) wins"
}

// Filter implements lbplugins.Plugin: only the common filters apply.
func (*Plugin) Filter(lbplugins.Request, *lbplugins.NodeView) string { return "" }

// Score implements lbplugins.Plugin.
func (p *Plugin) Score(_ lbplugins.Request, cs []*lbplugins.NodeView) []lbplugins.Score {
	out := make([]lbplugins.Score, len(cs))
	for i := range out {
		out[i] = lbplugins.Score{Parts: map[string]float64{"drawn": 0}}
	}
	a := p.rnd.IntN(len(cs))
	drawn := []int{a}
	if len(cs) > 1 {
		b := p.rnd.IntN(len(cs) - 1)
		if b >= a {
			b++
		}
		drawn = append(drawn, b)
	}
	pair := make([]*lbplugins.NodeView, len(drawn))
	for i, j := range drawn {
		pair[i] = cs[j]
	}
	// Usage is relative among the two drawn nodes only: they are all p2c compares.
	usage := lbplugins.Usage(pair, lbplugins.AllResources)
	for i, j := range drawn {
		v, parts := lbplugins.Composite(usage[i], p.weights)
		for k := range parts {
			parts[k] *= 0.99
		}
		parts["drawn"] = 1
		out[j] = lbplugins.Score{Value: 1 + 0.99*v, Parts: parts}
	}
	return out
}
