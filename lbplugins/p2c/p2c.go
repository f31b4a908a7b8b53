// Package p2c is the power of two choices: two random live nodes are compared and the
// less loaded one wins. It spreads load almost as well as comparing every node while
// avoiding the herd effect of many judges picking the same "best" node at once.
package p2c

import (
	"slices"

	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "p2c"

func init() { lbplugins.Register(Name, New) }

// Plugin scores the two drawn nodes 1 + 0.99·(leastload's composite), so a drawn node
// always outranks one not drawn (score 0, part "drawn" 0) even when it is full.
type Plugin struct {
	weights lbplugins.Weights
	mask    uint8 // the weighted resources
	rnd     *lbplugins.Rand
}

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin; Settings.Weights as in leastload, Settings.Seed for repeatable draws.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	w, err := lbplugins.CheckWeights(s.Weights, lbplugins.DefaultWeights())
	if err != nil {
		return nil, err
	}
	lw := lbplugins.WeightsOf(w)
	return &Plugin{weights: lw, mask: lw.Mask(), rnd: lbplugins.NewRand(s.Seed)}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "power of two choices: two random live nodes, the less loaded (leastload's composite) wins"
}

// Reads implements lbplugins.ResourceReader: a node that reports none of the weighted
// resources cannot be compared.
func (p *Plugin) Reads() uint8 { return p.mask }

// Prepare implements lbplugins.Plugin: the snapshot's arrays are all it reads.
func (*Plugin) Prepare(*lbplugins.Snapshot) any { return nil }

// Score implements lbplugins.Plugin. The draws are positions in r.Cands, kept in
// r.Drawn for Explain.
func (p *Plugin) Score(r *lbplugins.Round, out []float64) {
	for k := range out {
		out[k] = 0
	}
	a := p.rnd.IntN(len(out))
	r.Drawn = append(r.Drawn[:0], a)
	if len(out) > 1 {
		b := p.rnd.IntN(len(out) - 1)
		if b >= a {
			b++
		}
		r.Drawn = append(r.Drawn, b)
	}
	pair := p.pairScope(r)
	for _, k := range r.Drawn {
		out[k] = 1 + 0.99*r.Composite(&pair, &p.weights, r.Cands[k], nil)
	}
}

// pairScope is the scope of the drawn nodes only: they are all p2c compares.
func (p *Plugin) pairScope(r *lbplugins.Round) lbplugins.Scope {
	var nodes [2]int
	for j, k := range r.Drawn {
		nodes[j] = r.Cands[k]
	}
	return r.ScopeOf(nodes[:len(r.Drawn)])
}

// Explain implements lbplugins.Plugin.
func (p *Plugin) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	var parts lbplugins.Parts
	if !slices.Contains(r.Drawn, k) {
		parts.Add("drawn", 0)
		return parts
	}
	pair := p.pairScope(r)
	r.Composite(&pair, &p.weights, r.Cands[k], &parts)
	parts.Scale(0.99)
	parts.Add("drawn", 1)
	return parts
}
