package fleetsim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/binlake/binlake/judge/api"
)

// The simulated balancer: it asks for a plan the way the wave's balancer does
// (wave/cluster.go, wave/balance.go) and applies the moves to the simulated cluster the
// way its mover does (wave/balancemove.go).

// request is the POST /v1/rebalance body the balancer builds from the coordinator: every
// live wave, and every instance, by id, with the wave it is assigned to and when it last
// moved (the cooldown counts from it). Nothing is pinned.
func (s *state) request() api.RebalanceRequest {
	req := api.RebalanceRequest{Waves: make([]api.RebalanceWave, 0, len(s.f.Waves)),
		Instances: make([]api.RebalanceInstance, 0, len(s.f.Instances))}
	for _, w := range s.f.Waves {
		req.Waves = append(req.Waves, api.RebalanceWave{Node: w.Node, Alive: true})
	}
	for i, in := range s.f.Instances {
		req.Instances = append(req.Instances, api.RebalanceInstance{ID: in.ID, Node: s.f.Waves[s.assign[i]].Node, MovedAt: s.movedAt[i]})
	}
	slices.SortFunc(req.Instances, func(a, b api.RebalanceInstance) int { return cmp.Compare(a.ID, b.ID) })
	return req
}

// planMove is what the simulator reads of a planned move: only what any plan must say.
type planMove struct {
	Instance string `json:"instance"`
	From     string `json:"from"`
	To       string `json:"to"`
	Reason   string `json:"reason"`
}

// decodePlan reads a rebalance answer's moves, and the answer's fields for the optional
// predictions, tolerantly: any other field may change.
func decodePlan(body []byte) ([]planMove, map[string]json.RawMessage, error) {
	var a struct {
		Moves []planMove `json:"moves"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, nil, fmt.Errorf("the rebalance answer: %w", err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(body, &raw) // an object, since the first decoding succeeded
	return a.Moves, raw, nil
}

// balanced reports whether a rebalance answer says its goals hold ("balanced"); an
// answer without the field is taken as balanced, so that an empty plan ends the run as
// before.
func balanced(raw map[string]json.RawMessage) bool {
	var b bool
	if v, ok := raw["balanced"]; ok && json.Unmarshal(v, &b) == nil {
		return b
	}
	return true
}

// outOfTime reports whether a rebalance answer says its search ran out of its time
// ("out_of_time").
func outOfTime(raw map[string]json.RawMessage) bool {
	var b bool
	v, ok := raw["out_of_time"]
	return ok && json.Unmarshal(v, &b) == nil && b
}

// predicted returns the first of keys in the answer that holds a map of node →
// utilisation, and the map; "" when none does, or when the answer says it planned in
// rows/s (the judge's "model": "rows"), whose loads are not utilisations.
func predicted(raw map[string]json.RawMessage, keys []string) (string, map[string]float64) {
	var model string
	if v, ok := raw["model"]; ok && json.Unmarshal(v, &model) == nil && model == "rows" {
		return "", nil
	}
	for _, k := range keys {
		v, ok := raw[k]
		if !ok {
			continue
		}
		var m map[string]float64
		if json.Unmarshal(v, &m) == nil && len(m) > 0 {
			return k, m
		}
	}
	return "", nil
}

// hardMaxHostMates counts moves's hard_max moves between two waves of one host (wave:
// the index of each wave node in f.Waves).
func hardMaxHostMates(f *Fleet, moves []planMove, wave map[string]int) int {
	n := 0
	for _, m := range moves {
		from, ok1 := wave[m.From]
		to, ok2 := wave[m.To]
		if ok1 && ok2 && m.Reason == "hard_max" && f.Waves[from].Host != "" && f.Waves[from].Host == f.Waves[to].Host {
			n++
		}
	}
	return n
}

// applied counts what became of a plan's moves.
type applied struct {
	moved   []int // instance indexes, in the plan's order
	skipped int   // stale (the instance is not where the plan says, or moved already in this plan) or naming what the cluster does not have
}

// apply executes moves at at, as the balancer's mover does: a move rewrites the
// assignment only if it still names the wave the plan moves the instance from (a second
// move of the same instance in one plan is stale: its assignment's version changed).
func (s *state) apply(moves []planMove, at time.Time, inst, wave map[string]int) applied {
	var a applied
	done := map[int]bool{}
	for _, m := range moves {
		i, ok1 := inst[m.Instance]
		to, ok2 := wave[m.To]
		if !ok1 || !ok2 || done[i] || s.f.Waves[s.assign[i]].Node != m.From || to == s.assign[i] {
			a.skipped++
			continue
		}
		s.move(i, to, at)
		done[i] = true
		a.moved = append(a.moved, i)
	}
	return a
}

// PredictionError compares the judge's predicted utilisations with the truth at the
// time of the plan, over the waves it predicted.
type PredictionError struct {
	Key     string  `json:"key"`
	Plans   int     `json:"plans"`
	MeanAbs float64 `json:"mean_abs"` // over every wave of every plan
	MaxAbs  float64 `json:"max_abs"`
	n       int
}

// add compares one plan's predictions with the true utilisations of the waves.
func (p *PredictionError) add(key string, pred map[string]float64, truth map[string]float64) {
	if key == "" {
		return
	}
	p.Key = key
	p.Plans++
	for node, v := range pred {
		t, ok := truth[node]
		if !ok {
			continue
		}
		d := math.Abs(v - t)
		p.MeanAbs = (p.MeanAbs*float64(p.n) + d) / float64(p.n+1)
		p.n++
		p.MaxAbs = max(p.MaxAbs, d)
	}
}
