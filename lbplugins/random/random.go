// Package random is the placement algorithm of the original BinLake and the judge's
// default: a uniformly random live node.
package random

import (
	"errors"

	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "random"

func init() { lbplugins.Register(Name, New) }

// Plugin draws a score uniformly in [0, 100) per candidate, so the maximum is a uniform
// choice among the live nodes and the answer still explains every node's score.
type Plugin struct{ rnd *lbplugins.Rand }

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin; Settings.Seed makes it repeatable. It takes no weights.
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	if len(s.Weights) > 0 || s.K != nil || s.ProfileWeight != nil {
		return nil, errors.New("random takes only a seed")
	}
	return &Plugin{rnd: lbplugins.NewRand(s.Seed)}, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "a uniformly random live node (the default, as in the original BinLake)"
}

// Prepare implements lbplugins.Plugin: random reads nothing.
func (*Plugin) Prepare(*lbplugins.Snapshot) any { return nil }

// Score implements lbplugins.Plugin.
func (p *Plugin) Score(r *lbplugins.Round, out []float64) {
	p.rnd.Fill(out, 100)
}

// Explain implements lbplugins.Plugin: the draw itself.
func (*Plugin) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	return lbplugins.PartsOf(lbplugins.Part{Name: "random", Value: r.Scores[k]})
}
