package judge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/rebalance"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/loadmodel"
	"github.com/binlake/binlake/lbplugins"
)

// reportedWave: the node's agent scraped a wave this hour (it reported wave.* series,
// which may have stopped since: analysis.Node.Wave), so the node has a wave's figures
// (its prices, its host's CPU) for a balancer that names it. Whether it runs one now
// is Node.RunsWave.
func reportedWave(n analysis.Node) bool { return n.Wave() != lbplugins.WaveUnknown }

// PlanRebalance plans for the cluster a balancer describes (POST /v1/rebalance): its
// waves and assignments, with each instance's work from the node that reports it.
func (j *Judge) PlanRebalance(req api.RebalanceRequest) api.RebalanceAnswer {
	return j.plan(req.Waves, req.Instances, time.Time{})
}

// PlanRebalanceFromView plans from what the agents report (GET /v1/rebalance), a dry
// run for an operator: the waves are the nodes that reported a wave (waveStatusOf: an
// agent-only host is none), alive while their wave is (waveStatusOf: a wave whose
// metrics stopped while its host's go on is down, as is one whose node went stale, and
// the answer's waves say why), and the instances those the nodes run (costsOf), a
// wave's as its last report left them (asOfWave), so that a wave that died has its
// instances failed over. Nothing is pinned or cooling down: the judge does not know.
func (j *Judge) PlanRebalanceFromView() api.RebalanceAnswer {
	now := j.now()
	var (
		waves []api.RebalanceWave
		downs []api.WaveStatus // by waves' index
		insts []api.RebalanceInstance
		asOf  time.Time
	)
	var costs []*nodeCosts
	for _, n := range j.inc.Nodes() { // sorted by node
		ws, ok := j.waveStatusOf(n, now)
		if !ok {
			continue
		}
		waves = append(waves, api.RebalanceWave{Node: n.Node, Alive: ws.Live})
		downs = append(downs, ws)
		if n.LastSeen.After(asOf) {
			asOf = n.LastSeen
		}
		nc := costsOf(asOfWave(n), 0)
		costs = append(costs, &nc)
	}
	// Two waves claim an instance for a few intervals after it moved (the one it left
	// says running until its series stop): it is on the one whose claim is newer. The
	// first by node id took it, and after the wave's series of it had gone the wave it
	// left claimed it again by its wave.tps at 0 (costsOf): half the moved instances were
	// planned as moves from the wave they had left.
	resolveRuns(costs)
	for i, nc := range costs {
		for _, id := range sortedRuns(nc.runs) {
			insts = append(insts, api.RebalanceInstance{ID: id, Node: waves[i].Node})
		}
	}
	ans := j.plan(waves, insts, asOf)
	for i := range ans.Waves { // one per request wave, in its order
		ans.Waves[i].Down, ans.Waves[i].DownNote = downs[i].Down, downs[i].DownNote
	}
	return ans
}

// plan prices every instance on the waves it may run on and plans: in utilisation when
// the live waves have their cores and prices (those that do not, when fewer than half,
// left out), else in rows/s, saying why (planModel). The plan's data
// is as of asOf or the newest batch of the nodes the costs came from, whichever is later.
func (j *Judge) plan(reqWaves []api.RebalanceWave, reqInsts []api.RebalanceInstance, asOf time.Time) api.RebalanceAnswer {
	o := *j.o.Rebalance
	now := j.now()
	hist := j.hist.Snapshot()
	prof := j.profilesOf(hist)
	// Every wave node's view once: an instance is looked up on the node the request
	// names, and, when that node does not report it, on the others. The waves are the
	// balancer's to name: one whose wave series stopped here keeps its figures.
	type reported struct {
		cost     api.InstanceCost
		runs     bool
		lastSeen time.Time
	}
	views := map[string]*waveView{}
	byInst := map[string][]reported{}
	down := map[string]api.WaveStatus{} // the waves the judge sees down
	for _, n := range j.inc.Nodes() {   // sorted by node
		if !reportedWave(n) {
			continue
		}
		if ws, ok := j.waveStatusOf(n, now); ok && !ws.Live {
			down[n.Node] = ws
		}
		v := j.viewOf(n)
		views[n.Node] = &v
		for id, c := range v.costs.costs {
			byInst[id] = append(byInst[id], reported{c, v.costs.runs[id], n.LastSeen})
		}
	}
	// A wave the balancer has alive whose figures stopped reaching the judge (its agent
	// died, its batches are lost) is left out: its instances stay, nothing goes to a
	// host the judge cannot see (a plan moved instances onto such a wave at its last
	// figures). GET /v1/rebalance, which has it dead, fails it over instead.
	var live, silent []string
	stale := map[string]api.WaveStatus{}
	for _, w := range reqWaves {
		if !w.Alive {
			continue
		}
		if ws, ok := down[w.Node]; ok {
			stale[w.Node] = ws
			silent = append(silent, w.Node)
			continue
		}
		live = append(live, w.Node)
	}
	liveViews := make([]*waveView, 0, len(live))
	for _, n := range live {
		if v := views[n]; v != nil {
			liveViews = append(liveViews, v)
		}
	}
	shareHosts(liveViews)
	model, leftOut, note := planModel(views, live)
	if len(silent) > 0 {
		if leftOut == nil {
			leftOut = map[string]string{}
		}
		for _, n := range silent {
			leftOut[n] = leftOutSilent
		}
		said := "left out of the plan (their instances stay, they take none): no recent figures from " + list(silent)
		if note != "" {
			said = note + "; " + said
		}
		note = said
	}

	if model == api.ModelUtilisation {
		if thin := thinlyPriced(views, live, leftOut); thin != "" {
			note = strings.TrimPrefix(note+"; "+thin, "; ")
		}
	}

	// Placements pending (reservations) count in the same unit as the plans: an
	// instance of the request not yet measured is priced at the work its placement
	// reserved, and one not in the request (answered, not yet in the balancer's view)
	// weighs its reserved cores on its wave (a plan moved instances onto a wave whose
	// reservation already took it to its cap: an outside trial).
	pending := j.res.Pending(now)
	inReq := make(map[string]bool, len(reqInsts))
	for _, in := range reqInsts {
		inReq[in.ID] = true
	}
	reservedOn := map[string]float64{}
	for id, r := range pending {
		if !inReq[id] {
			reservedOn[r.Node] += r.Cores
		}
	}

	// An instance neither measured nor reserved (defined with its wave named, its agent
	// not reporting it yet) weighs the fleet's typical instance, as a placement without
	// a hint does: priced at nothing, a plan piled such instances on the wave they were
	// put on, one notion of load for placements and plans.
	var runRows, runBytes, runRead []float64
	for _, rs := range byInst {
		for _, r := range rs {
			if r.runs && r.cost.Measured { // one report of each instance a wave runs
				runRows, runBytes, runRead = append(runRows, r.cost.RowsPerS), append(runBytes, r.cost.BytesPerS), append(runRead, r.cost.BinlogBytesPerS)
				break
			}
		}
	}
	typical, hasTypical := medianWork(runRows, runBytes, runRead)

	insts := make([]rebalance.Instance, 0, len(reqInsts))
	costs := make([]api.InstanceCost, 0, len(reqInsts))
	works := make(map[string]instWork, len(reqInsts))
	for _, in := range reqInsts {
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
		pi := rebalance.Instance{ID: in.ID, Node: in.Node, Cost: c.Cost, Pinned: in.Pinned, MovedAt: in.MovedAt}
		if model == api.ModelUtilisation {
			pi.Cost = 0 // no work known (nothing measured anywhere): it spreads by the share goal
			r, reserved := pending[in.ID]
			reserved = reserved && (r.Expected.RowsPerS > 0 || r.Expected.BytesPerS > 0 || r.Expected.BinlogBytesPerS > 0)
			switch {
			case c.Measured:
			case reserved:
				c.RowsPerS, c.BytesPerS, c.BinlogBytesPerS, c.Reserved = r.Expected.RowsPerS, r.Expected.BytesPerS, r.Expected.BinlogBytesPerS, true
			case hasTypical:
				c.RowsPerS, c.BytesPerS, c.BinlogBytesPerS, c.Typical = typical.RowsPerS, typical.BytesPerS, typical.BinlogBytesPerS, true
			}
			if c.Reserved || c.Typical {
				pi.Rows, pi.Bytes, pi.Read = []float64{c.RowsPerS}, []float64{c.BytesPerS}, []float64{c.BinlogBytesPerS}
				if v := views[in.Node]; v != nil {
					c.CoresNow = v.prices.Cost(c.RowsPerS, c.BytesPerS, c.BinlogBytesPerS)
					c.CoresPeak = c.CoresNow
				}
			}
			if c.Measured {
				w := workOf(in.ID, c, prof)
				works[in.ID], pi.Rows, pi.Bytes, pi.Read = w, w.rows, w.bytes, w.read
				if v := views[in.Node]; v != nil {
					cw := w.cost(v.prices)
					c.CoresNow, c.CoresPeak = cw[0], slices.Max(cw)
				}
			}
			c.Cost = c.CoresPeak
		}
		costs = append(costs, c)
		if _, out := leftOut[in.Node]; !out {
			insts = append(insts, pi)
		}
	}

	// Each wave's running instances, in the request's order: one pass over them (a pass
	// per wave was 10 million lookups for 10,000 instances on 1,000 waves).
	running := map[string][]instWork{}
	for _, in := range reqInsts {
		if wk, ok := works[in.ID]; ok {
			running[in.Node] = append(running[in.Node], wk)
		}
	}
	waves := make([]rebalance.Wave, 0, len(reqWaves))
	for _, w := range reqWaves {
		if _, out := leftOut[w.Node]; out {
			continue
		}
		v := views[w.Node]
		if model != api.ModelUtilisation || v == nil || !w.Alive {
			waves = append(waves, rebalance.Wave{Node: w.Node, Alive: w.Alive})
			continue
		}
		pw := planWave(v, true, running[w.Node])
		pw.Base += reservedOn[w.Node]
		waves = append(waves, pw)
	}
	p := rebalance.Make(waves, insts, o.goals(model, now), now)
	if p.OutOfTime {
		// The plan is what the search had found by its budget: on a judge short of CPU
		// the same cluster is planned less well (more moves, or fewer goals met).
		j.log.Warn("rebalance plan: the search ran out of its time budget; the plan is what it had found by then",
			"waves", len(waves), "instances", len(insts), "moves", len(p.Moves), "search", p.Search)
	}
	ans := answer(p, o, costs, asOf, now)
	ans.Model, ans.ModelNote = model, note
	ans.Waves = waveLoads(reqWaves, reqInsts, views, p, model)
	for i := range ans.Waves {
		wl := &ans.Waves[i]
		wl.LeftOut = leftOut[wl.Node]
		if model == api.ModelUtilisation {
			wl.ReservedCores = reservedOn[wl.Node]
		}
		if ws, ok := stale[wl.Node]; ok {
			wl.Down, wl.DownNote = ws.Down, ws.DownNote
		}
	}
	return ans
}

// waveLoads explains every wave of a plan: its cores, prices, utilisation now, its peak
// before and after the moves, and how many instances it runs before and after.
func waveLoads(reqWaves []api.RebalanceWave, reqInsts []api.RebalanceInstance, views map[string]*waveView, p rebalance.Plan, model string) []api.WaveLoad {
	before, after := map[string]int{}, map[string]int{}
	at := map[string]string{}
	for _, in := range reqInsts {
		before[in.Node]++
		at[in.ID] = in.Node
	}
	for _, m := range p.Moves {
		at[m.Instance] = m.To
	}
	for _, n := range at {
		after[n]++
	}
	out := make([]api.WaveLoad, 0, len(reqWaves))
	for _, w := range reqWaves {
		// A wave the judge has no figures of (new, or silent since the judge started) has
		// no prices: "none", as the contract's enum says, not an empty source.
		wl := api.WaveLoad{Node: w.Node, Alive: w.Alive, Instances: before[w.Node], InstancesAfter: after[w.Node], PeakHour: -1,
			Prices: api.Prices{Source: loadmodel.SourceNone}}
		if !w.Alive {
			wl.InstancesAfter = 0
		}
		if v := views[w.Node]; v != nil {
			wl.Cores, wl.Prices, wl.SharesHostWith = v.cores, apiPrices(v.prices), v.sharesWith
			if v.host != nil && v.cores > 0 {
				wl.UtilNow = v.host[0] / v.cores
			}
		}
		if model == api.ModelUtilisation && w.Alive {
			wl.PeakBefore, wl.PeakAfter = p.Before[w.Node], p.After[w.Node]
			if h, ok := p.PeakSlots[w.Node]; ok {
				wl.PeakHour = h - 1
			}
		}
		out = append(out, wl)
	}
	return out
}

// answer completes a plan with what it was made from: asOf is the newest batch of the
// nodes the costs came from (zero: none, the plan is as of now). Empty lists are [] in
// JSON, so that a client can range over them without a null check.
func answer(p rebalance.Plan, o RebalanceOptions, costs []api.InstanceCost, asOf, now time.Time) api.RebalanceAnswer {
	if costs == nil {
		costs = []api.InstanceCost{}
	}
	slices.SortFunc(costs, func(a, b api.InstanceCost) int { return cmp.Compare(a.Instance, b.Instance) })
	if asOf.IsZero() {
		asOf = now
	}
	return api.RebalanceAnswer{Plan: api.PlanOf(p), Goals: o.answerGoals(), Costs: costs, Waves: []api.WaveLoad{}, DataAsOf: asOf.UTC()}
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

// thinlyPriced names the planned waves priced at the fleet's pooled prices for want of
// samples of their own (none, or fewer than a fit needs), with how many they have: the
// plan says so, as their costs are the fleet's at a speed guessed from few readings or
// none (an outside trial's plan moved three instances onto such a wave, unsaid).
func thinlyPriced(views map[string]*waveView, live []string, leftOut map[string]string) string {
	var thin []string
	for _, n := range live {
		v := views[n]
		if _, out := leftOut[n]; out || v == nil || !v.prices.Thin {
			continue
		}
		thin = append(thin, fmt.Sprintf("%s (%d)", n, v.prices.Samples))
	}
	if len(thin) == 0 {
		return ""
	}
	return "priced at the fleet's pooled prices for want of wave.cpu_cores samples of their own (how many they have): " + strings.Join(thin, ", ")
}
