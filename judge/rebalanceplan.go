package judge

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/rebalance"
)

// RebalanceOptions are the goals GET and POST /v1/rebalance plan for (judge.yaml's
// rebalance section) and the cost of an idle instance. Costs are in rows/s.
type RebalanceOptions struct {
	// HardMax is the load no wave should exceed; 0 disables the goal.
	HardMax float64
	// Band is the spread (most minus least loaded wave) the plans aim within.
	Band float64
	// InstanceFloor is what every instance costs on top of its rows/s, even idle: its
	// binlog connection and goroutines. It also lets the planner spread idle instances.
	InstanceFloor float64
	// MaxMoves bounds a plan.
	MaxMoves int
	// Cooldown keeps an instance that moved recently where it is.
	Cooldown time.Duration
}

// DefaultRebalanceOptions are the defaults of the rebalance section: no hard threshold,
// a band of 2000 rows/s (a few busy instances' worth: a narrower one makes plans chase
// noise in the rates), 100 rows/s per instance, 20 moves a plan and 10 minutes between
// two moves of an instance (long enough for its rates on the new wave to settle).
func DefaultRebalanceOptions() RebalanceOptions {
	return RebalanceOptions{Band: 2000, InstanceFloor: 100, MaxMoves: 20, Cooldown: 10 * time.Minute}
}

// validate names the judge.yaml key of a bad value, for the config and for New alike.
func (o RebalanceOptions) validate() error {
	for _, f := range []struct {
		key string
		v   float64
	}{{"hard_max", o.HardMax}, {"band", o.Band}, {"instance_floor", o.InstanceFloor}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return fmt.Errorf("rebalance.%s %v: want a finite number ≥ 0 (rows/s)", f.key, f.v)
		}
	}
	if o.MaxMoves <= 0 {
		return fmt.Errorf("rebalance.max_moves %d: want at least 1", o.MaxMoves)
	}
	if o.Cooldown < 0 {
		return fmt.Errorf("rebalance.cooldown %s: must not be negative", o.Cooldown)
	}
	return nil
}

func (o RebalanceOptions) goals() rebalance.Goals {
	return rebalance.Goals{HardMax: o.HardMax, Band: o.Band, MaxMoves: o.MaxMoves, Cooldown: o.Cooldown}
}

func (o RebalanceOptions) answerGoals() api.RebalanceGoals {
	return api.RebalanceGoals{HardMax: o.HardMax, Band: o.Band, MaxMoves: o.MaxMoves, CooldownS: o.Cooldown.Seconds()}
}

// reportsWave: the node's agent scrapes a wave (it reports wave.* series), so the node
// is a wave the planner may move instances to. A host without a wave is not.
func reportsWave(n analysis.Node) bool {
	for _, s := range n.Series {
		if strings.HasPrefix(s.Name, "wave.") {
			return true
		}
	}
	return false
}

// PlanRebalance plans for the cluster a balancer describes (POST /v1/rebalance): its
// waves and assignments, with each instance's cost from the node that reports it.
func (j *Judge) PlanRebalance(req api.RebalanceRequest) api.RebalanceAnswer {
	o := *j.o.Rebalance
	now := j.now()
	// Every node's costs once: an instance is looked up on the node the request names,
	// and, when that node does not report it, on the others.
	type reported struct {
		cost     api.InstanceCost
		runs     bool
		lastSeen time.Time
	}
	byInst := map[string][]reported{}
	for _, n := range j.inc.Nodes() { // sorted by node
		if !reportsWave(n) {
			continue
		}
		nc := costsOf(n, o.InstanceFloor)
		for id, c := range nc.costs {
			byInst[id] = append(byInst[id], reported{c, nc.runs[id], n.LastSeen})
		}
	}

	waves := make([]rebalance.Wave, 0, len(req.Waves))
	for _, w := range req.Waves {
		waves = append(waves, rebalance.Wave{Node: w.Node, Alive: w.Alive})
	}
	insts := make([]rebalance.Instance, 0, len(req.Instances))
	costs := make([]api.InstanceCost, 0, len(req.Instances))
	var asOf time.Time
	for _, in := range req.Instances {
		c := api.InstanceCost{Instance: in.ID, Cost: o.InstanceFloor}
		if rs := byInst[in.ID]; len(rs) > 0 {
			// The named node's figures; else a node that runs it; else any, by node id.
			best := slices.MinFunc(rs, func(a, b reported) int {
				return cmp.Or(-cmpBool(a.cost.Node == in.Node, b.cost.Node == in.Node), -cmpBool(a.runs, b.runs), cmp.Compare(a.cost.Node, b.cost.Node))
			})
			c = best.cost
			if best.lastSeen.After(asOf) {
				asOf = best.lastSeen
			}
		}
		costs = append(costs, c)
		insts = append(insts, rebalance.Instance{ID: in.ID, Node: in.Node, Cost: c.Cost, Pinned: in.Pinned, MovedAt: in.MovedAt})
	}
	return answer(rebalance.Make(waves, insts, o.goals(), now), o, costs, asOf, now)
}

// PlanRebalanceFromView plans from what the agents report (GET /v1/rebalance), a dry
// run for an operator: the waves are the nodes that report wave series, live as the
// node listings say, and the instances those the nodes run (costsOf). Nothing is
// pinned or cooling down: the judge does not know.
func (j *Judge) PlanRebalanceFromView() api.RebalanceAnswer {
	o := *j.o.Rebalance
	now := j.now()
	var (
		waves []rebalance.Wave
		insts []rebalance.Instance
		costs []api.InstanceCost
		asOf  time.Time
	)
	at := map[string]int{} // instance → its index in insts and costs
	aliveAt := map[string]bool{}
	for _, n := range j.inc.Nodes() { // sorted by node
		if !reportsWave(n) {
			continue
		}
		alive := j.live(n.LastSeen, n.Interval, now)
		waves = append(waves, rebalance.Wave{Node: n.Node, Alive: alive})
		aliveAt[n.Node] = alive
		if n.LastSeen.After(asOf) {
			asOf = n.LastSeen
		}
		nc := costsOf(n, o.InstanceFloor)
		for _, id := range sortedRuns(nc.runs) {
			c := nc.costs[id]
			i, dup := at[id]
			switch {
			case !dup:
				at[id] = len(insts)
				insts = append(insts, rebalance.Instance{ID: id, Node: n.Node, Cost: c.Cost})
				costs = append(costs, c)
			case alive && !aliveAt[insts[i].Node]:
				// Two waves report it: it moved within the hour, and the analysis keeps the
				// old wave's series until the hour ends. A live wave's claim wins; between
				// two live ones, the first by node id (the judge cannot tell which is older).
				insts[i] = rebalance.Instance{ID: id, Node: n.Node, Cost: c.Cost}
				costs[i] = c
			}
		}
	}
	return answer(rebalance.Make(waves, insts, o.goals(), now), o, costs, asOf, now)
}

// answer completes a plan with what it was made from: asOf is the newest batch of the
// nodes the costs came from (zero: none, the plan is as of now). Empty lists are [] in
// JSON, so that a client can range over them without a null check.
func answer(p rebalance.Plan, o RebalanceOptions, costs []api.InstanceCost, asOf, now time.Time) api.RebalanceAnswer {
	if p.Moves == nil {
		p.Moves = []rebalance.Move{}
	}
	if costs == nil {
		costs = []api.InstanceCost{}
	}
	slices.SortFunc(costs, func(a, b api.InstanceCost) int { return cmp.Compare(a.Instance, b.Instance) })
	if asOf.IsZero() {
		asOf = now
	}
	return api.RebalanceAnswer{Plan: p, Goals: o.answerGoals(), Costs: costs, DataAsOf: asOf.UTC()}
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
