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

// resources are the percentages predictive forecasts, with their part names and their
// index among lbplugins.AllResources (for the demand of a pending instance).
var resources = [...]struct {
	metric             string
	mean, stddev, risk string
	res                int
}{
	{lbplugins.CPUUtil, "cpu_mean", "cpu_stddev", "cpu_risk", lbplugins.ResourceIndex(lbplugins.ResCPU)},
	{lbplugins.MemUsedPct, "memory_mean", "memory_stddev", "memory_risk", lbplugins.ResourceIndex(lbplugins.ResMemory)},
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

// inputs are one node's forecast inputs per resource (see forecast): the current hour
// and the profile of every hour of the day.
type inputs [len(resources)]struct {
	hasCurrent bool
	ewma, sd   float64
	profile    [24]struct {
		ok       bool
		mean, sd float64
	}
}

// Prepare implements lbplugins.Plugin: the forecast inputs of every node, indexed like
// the snapshot.
func (p *Plugin) Prepare(s *lbplugins.Snapshot) any {
	in := make([]inputs, s.Len())
	for i, n := range s.Views {
		for j, r := range resources {
			if _, ok := n.Load(r.metric); ok {
				c := n.Current[r.metric]
				in[i][j].hasCurrent, in[i][j].ewma, in[i][j].sd = true, c.EWMA, c.Stddev
			}
			h, found := n.History[r.metric]
			if !found {
				continue
			}
			for hour, w := range h.Profile {
				if w.Count > 0 {
					pr := &in[i][j].profile[hour]
					pr.ok, pr.mean, pr.sd = true, w.Avg, math.Max(0, (w.P95-w.Avg)/z95)
				}
			}
		}
	}
	return in
}

// forecast is the expected mean and standard deviation of resource j on node i over
// the next hour: the profile's hour after now blended with the current hour (EWMA and
// standard deviation) by the profile weight, either alone when the other is missing; it
// adds the expected load of the node's pending reservations to the mean.
func (p *Plugin) forecast(r *lbplugins.Round, in []inputs, i, j, next int) (mean, sd float64, ok bool) {
	x := &in[i][j]
	pr := x.profile[next]
	switch {
	case pr.ok && x.hasCurrent:
		mean, sd, ok = p.w*pr.mean+(1-p.w)*x.ewma, p.w*pr.sd+(1-p.w)*x.sd, true
	case pr.ok:
		mean, sd, ok = pr.mean, pr.sd, true
	case x.hasCurrent:
		mean, sd, ok = x.ewma, x.sd, true
	}
	if pend := r.Pending(i); ok && pend > 0 {
		mean += pend * 100 * r.Snap.Demand(resources[j].res)
	}
	return mean, sd, ok
}

// score is node i's score; with parts it fills them. A resource with no data counts as
// risk 100 (the node has data on the other: see NoData).
func (p *Plugin) score(r *lbplugins.Round, in []inputs, i int, parts *lbplugins.Parts) float64 {
	next := r.NextHour
	worst := 0.0
	for j, res := range resources {
		risk := 100.0
		if mean, sd, ok := p.forecast(r, in, i, j, next); ok {
			if parts != nil {
				parts.Add(res.mean, mean)
				parts.Add(res.stddev, sd)
			}
			risk = math.Max(0, math.Min(100, mean+p.k*sd))
		}
		if parts != nil {
			parts.Add(res.risk, risk)
		}
		worst = math.Max(worst, risk)
	}
	return 100 - worst
}

// NoData implements lbplugins.DataFilter: a node with neither a current level nor a
// profile for the next hour of cpu or memory has nothing to forecast from.
func (p *Plugin) NoData(r *lbplugins.Round, i int) bool {
	in, next := r.Prepared.([]inputs), r.NextHour
	for j := range resources {
		if in[i][j].hasCurrent || in[i][j].profile[next].ok {
			return false
		}
	}
	return true
}

// Score implements lbplugins.Plugin.
func (p *Plugin) Score(r *lbplugins.Round, out []float64) {
	in := r.Prepared.([]inputs)
	for k, i := range r.Cands {
		out[k] = p.score(r, in, i, nil)
	}
}

// Explain implements lbplugins.Plugin.
func (p *Plugin) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	var parts lbplugins.Parts
	p.score(r, r.Prepared.([]inputs), r.Cands[k], &parts)
	return parts
}
