package judge

import (
	"math"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
)

// The instance cost model: what each capture instance costs the wave that runs it, from
// the per-instance series the wave's agent reports (agent/collector/wave). The planner
// (internal/rebalance) needs one number per instance; rows/s is the one that tracks a wave's
// work (each row is decoded, filtered, encoded and published), and the floor stands for
// what an instance costs even while idle. Bytes/s and the CPU share are reported beside
// it for the operator.

// nodeCosts are the instances one node reports.
type nodeCosts struct {
	// costs has every instance with a wave.tps, wave.bytes_per_s or
	// wave.instance_running series on the node.
	costs map[string]api.InstanceCost
	// runs holds those the node runs, in the judge's own view (see costsOf), and claims
	// what says so, to weigh against another node's (claim.beats).
	runs   map[string]bool
	claims map[string]claim
	// cpu is the wave process's CPU now (the EWMA of wave.cpu_cores), hasCPU whether
	// the node reports it (and has not stopped: analysis.StoppedAfter).
	cpu    float64
	hasCPU bool
}

// claim is what says that a node runs an instance: its wave.instance_running at 1
// (byState), else, for a wave that reports no instance_running, its wave.tps; at is the
// time of that series' last sample.
type claim struct {
	node    string
	byState bool
	at      time.Time
}

// beats reports whether claim c is the better of two nodes' claims to run one
// instance: the wave's state over a rate, then the newer (the wave the instance left
// says running for up to analysis.StoppedAfter intervals after it left, in batches
// older than the new wave's), then the first node by id.
func (c claim) beats(o claim) bool {
	switch {
	case c.byState != o.byState:
		return c.byState
	case !c.at.Equal(o.at):
		return c.at.After(o.at)
	}
	return c.node < o.node
}

// costsOf derives the costs of the instances node n reports, each instance costing
// floor plus its rows/s (the EWMA of wave.tps{instance}); its CPU share is the wave
// process's wave.cpu_cores split by rows between the instances whose wave.tps the node
// still reports. A series that stopped (analysis.StoppedAfter) keeps the level it
// stopped at while the process's CPU moves on without it: its rows no longer split the
// CPU (an instance that left or failed kept a share of the CPU for the rest of the
// hour, and the instances still running were shown that much cheaper).
//
// The node runs an instance, in the judge's view, when a wave.instance_running series of
// it holds 1 and is in the node's recent batches (not stopped, analysis.StoppedAfter),
// carried into this hour or not: at xx:00 every series is carried until its wave's
// first batch of the new hour, and a placement in those seconds, when only a sample of
// this hour counted, found no instance on any wave. A wave that reports wave.instance_running
// (of any instance, this hour) says so of every instance it runs: one it reports only a
// wave.tps of runs elsewhere. The wave an instance left keeps its counters, so its
// wave.tps at 0, until it restarts, and once its instance_running series of it had gone
// (an hour after, or at once for a judge restarted since) that rate alone put the
// instance on it again: GET /v1/rebalance planned moves from it and GET /v1/nodes/{id}
// listed it there at 0 rows/s. Only a wave that reports no wave.instance_running at all
// runs the instances whose wave.tps it reports recently, and none while its
// wave.instances says 0. A wave stops reporting an instance that left it, and its last 1
// stood for the rest of the hour: the wave it left looked as loaded to placements, and
// GET /v1/nodes listed it there, until xx:00. Two nodes may still both claim an
// instance for a few intervals after it moved: claim.beats decides between them.
func costsOf(n analysis.Node, floor float64) nodeCosts {
	rows, bytes, read, sharing := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	hasRunning := map[string]bool{}
	runningAt, tpsAt := map[string]time.Time{}, map[string]time.Time{}
	var cpu, totalRows float64
	hasCPU, reportsStates := false, false
	idle := false // the wave says it leads no instance (wave.instances 0)
	for _, s := range n.Series {
		inst := s.Labels[labelInstance]
		if inst == "" {
			switch {
			case len(s.Labels) > 0 || n.Stopped(s):
			case s.Name == metric.WaveCPUCores:
				cpu, hasCPU = nonNegative(s.EWMA), s.HasLevel()
			case s.Name == metric.WaveInstances:
				idle = !n.Stopped(s) && s.Last == 0
			}
			continue
		}
		switch s.Name {
		case metric.WaveTPS:
			v := nonNegative(s.EWMA)
			rows[inst] += v
			if !n.Stopped(s) {
				sharing[inst] += v
				totalRows += v
			}
			if at, ok := tpsAt[inst]; !n.Stopped(s) && (!ok || s.LastTS.After(at)) {
				tpsAt[inst] = s.LastTS
			}
		case metric.WaveBytesPerS:
			bytes[inst] += nonNegative(s.EWMA)
		case metric.WaveBinlogBytesPerS:
			read[inst] += nonNegative(s.EWMA)
		case metric.WaveInstanceRunning:
			// One series per state the instance was in this hour: any that says running.
			hasRunning[inst], reportsStates = true, true
			if s.Last == 1 && !n.Stopped(s) {
				if at, ok := runningAt[inst]; !ok || s.LastTS.After(at) {
					runningAt[inst] = s.LastTS
				}
			}
		}
	}
	out := nodeCosts{costs: map[string]api.InstanceCost{}, runs: map[string]bool{}, claims: map[string]claim{}, cpu: cpu, hasCPU: hasCPU}
	add := func(inst string) {
		if _, ok := out.costs[inst]; ok {
			return
		}
		c := api.InstanceCost{Instance: inst, Node: n.Node, RowsPerS: rows[inst], BytesPerS: bytes[inst], BinlogBytesPerS: read[inst],
			Cost: rows[inst] + floor, Measured: true}
		if totalRows > 0 {
			c.CPUShare = cpu * sharing[inst] / totalRows
		}
		out.costs[inst] = c
		if at, ok := runningAt[inst]; ok {
			out.runs[inst], out.claims[inst] = true, claim{node: n.Node, byState: true, at: at}
		} else if at, ok := tpsAt[inst]; ok && !reportsStates && !idle {
			out.runs[inst], out.claims[inst] = true, claim{node: n.Node, at: at}
		}
	}
	for _, m := range []map[string]float64{rows, bytes} {
		for inst := range m {
			add(inst)
		}
	}
	for inst := range hasRunning {
		add(inst)
	}
	return out
}

// resolveRuns leaves each instance among the runs of the node whose claim to it is
// the best (claim.beats), removing it from the others'. costs are the nodes' own,
// changed in place.
func resolveRuns(costs []*nodeCosts) {
	best := map[string]*nodeCosts{}
	for _, nc := range costs {
		for inst := range nc.runs {
			b, ok := best[inst]
			switch {
			case !ok:
				best[inst] = nc
			case nc.claims[inst].beats(b.claims[inst]):
				b.drop(inst)
				best[inst] = nc
			default:
				nc.drop(inst)
			}
		}
	}
}

// drop takes inst out of the instances the node runs.
func (c *nodeCosts) drop(inst string) {
	delete(c.runs, inst)
	delete(c.claims, inst)
}

// labelInstance is the label of the capture instance on wave.* series.
const labelInstance = analysis.InstanceLabel

// running returns the costs of the instances the node runs, sorted by instance: the
// node detail's "instances".
func (c nodeCosts) running() []api.InstanceCost {
	out := make([]api.InstanceCost, 0, len(c.runs))
	for _, inst := range sortedRuns(c.runs) {
		out = append(out, c.costs[inst])
	}
	return out
}

func sortedRuns(runs map[string]bool) []string {
	out := make([]string, 0, len(runs))
	for inst := range runs {
		out = append(out, inst)
	}
	slices.Sort(out)
	return out
}

// nonNegative keeps a rate usable as a cost: a NaN, negative or infinite level (a
// broken agent or wave) counts as 0 rather than poisoning every sum it enters.
func nonNegative(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 1) {
		return 0
	}
	return v
}

// instanceCost is what instance id costs, from the node that runs it (of two that claim
// it, the one claim.beats picks), else any node that reports it, the first by id, for
// the placement explanation, in cores at that node's prices (now and at the peak of its
// hourly profile, as GET /v1/nodes/{id} prices it; 0 where the node has none); nil when
// no node reports it. It reads every node's series, so only `explain: all` placements
// ask for it.
func (j *Judge) instanceCost(id string) *api.InstanceCost {
	var found *api.InstanceCost
	var by *claim
	for _, node := range j.inc.NodeIDs() { // sorted: the first reporting node wins a tie
		n, ok := j.inc.Node(node)
		if !ok {
			continue
		}
		nc := costsOf(n, j.o.Rebalance.InstanceFloor)
		c, ok := nc.costs[id]
		switch {
		case !ok:
		case nc.runs[id]:
			if cl := nc.claims[id]; by == nil || cl.beats(*by) {
				found, by = &c, &cl
			}
		case found == nil:
			found = &c
		}
	}
	if found != nil {
		cw := workOf(id, *found, j.profilesOf(j.hist.Snapshot())).cost(j.model.Prices(found.Node))
		found.CoresNow, found.CoresPeak = cw[0], slices.Max(cw)
	}
	return found
}
