// Package predictive places an instance on the node with the lowest expected peak over
// the next hour. It forecasts CPU and memory from the historical hour-of-day profile of
// the next hour and from the current hour, and penalises variance the way the Trimaran
// LoadVariationRiskBalancing plugin does: risk = mean + k·stddev, score = 100 − the
// worst resource's risk.
package predictive

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/binlake/binlake/lbplugins"
)

// Name is the algorithm's registered name.
const Name = "predictive"

func init() { lbplugins.Register(Name, New) }

// Defaults for Settings.K and Settings.ProfileWeight.
const (
	DefaultK             = 1.0
	DefaultProfileWeight = 0.5
)

// z95 is the standard normal's 95th percentile. The store's profile has avg and p95 but no
// standard deviation; for a roughly normal series p95 ≈ mean + 1.645·σ gives σ.
const z95 = 1.6449

// resources are the percentages predictive forecasts, with their part prefixes.
var resources = []struct{ metric, part string }{
	{lbplugins.CPUUtil, "cpu"},
	{lbplugins.MemUsedPct, "memory"},
}

// Plugin is the predictive algorithm.
type Plugin struct{ k, w float64 }

var _ lbplugins.Plugin = (*Plugin)(nil)

// New builds the plugin from Settings.K (≥ 0) and Settings.ProfileWeight (0–1).
func New(s lbplugins.Settings) (lbplugins.Plugin, error) {
	if len(s.Weights) > 0 {
		return nil, errors.New("predictive takes k and profile_weight, not weights")
	}
	p := &Plugin{k: DefaultK, w: DefaultProfileWeight}
	if s.K != nil {
		if *s.K < 0 || math.IsNaN(*s.K) || math.IsInf(*s.K, 0) {
			return nil, fmt.Errorf("k is %v: want a finite number ≥ 0", *s.K)
		}
		p.k = *s.K
	}
	if s.ProfileWeight != nil {
		if !(*s.ProfileWeight >= 0 && *s.ProfileWeight <= 1) {
			return nil, fmt.Errorf("profile_weight is %v: want 0–1", *s.ProfileWeight)
		}
		p.w = *s.ProfileWeight
	}
	return p, nil
}

// Name implements lbplugins.Plugin.
func (*Plugin) Name() string { return Name }

// Description implements lbplugins.Plugin.
func (*Plugin) Description() string {
	return "the lowest expected peak over the next hour: hour-of-day profile + current hour, risk = mean + k·stddev (Trimaran)"
}

// Filter implements lbplugins.Plugin: only the common filters apply.
func (*Plugin) Filter(lbplugins.Request, *lbplugins.NodeView) string { return "" }

// Forecast returns the expected mean and standard deviation of a percentage metric over
// the next hour: the profile's hour after now blended with the current hour (EWMA and
// standard deviation) by the profile weight; either alone when the other is missing.
func (p *Plugin) Forecast(n *lbplugins.NodeView, metric string, next int) (mean, sd float64, ok bool) {
	var pm, ps float64
	hasProfile := false
	if h, found := n.History[metric]; found && h.Profile[next].Count > 0 {
		w := h.Profile[next]
		pm, ps, hasProfile = w.Avg, math.Max(0, (w.P95-w.Avg)/z95), true
	}
	c, hasCurrent := n.Current[metric]
	hasCurrent = hasCurrent && c.HasLevel()
	switch {
	case hasProfile && hasCurrent:
		return p.w*pm + (1-p.w)*c.EWMA, p.w*ps + (1-p.w)*c.Stddev, true
	case hasProfile:
		return pm, ps, true
	case hasCurrent:
		return c.EWMA, c.Stddev, true
	}
	return 0, 0, false
}

// Score implements lbplugins.Plugin. A resource with no data counts as risk 100.
func (p *Plugin) Score(req lbplugins.Request, cs []*lbplugins.NodeView) []lbplugins.Score {
	next := req.Now.UTC().Add(time.Hour).Hour()
	out := make([]lbplugins.Score, len(cs))
	for i, n := range cs {
		parts := map[string]float64{}
		worst := 0.0
		for _, r := range resources {
			risk := 100.0
			if mean, sd, ok := p.Forecast(n, r.metric, next); ok {
				parts[r.part+"_mean"] = mean
				parts[r.part+"_stddev"] = sd
				risk = math.Max(0, math.Min(100, mean+p.k*sd))
			}
			parts[r.part+"_risk"] = risk
			worst = math.Max(worst, risk)
		}
		out[i] = lbplugins.Score{Value: 100 - worst, Parts: parts}
	}
	return out
}
