package judge

import (
	"math"
	"slices"

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
	// runs holds those the node runs, in the judge's own view (see costsOf).
	runs map[string]bool
	// cpu is the wave process's CPU now (the EWMA of wave.cpu_cores), hasCPU whether
	// the node reports it (and has not stopped: analysis.StoppedAfter).
	cpu    float64
	hasCPU bool
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
// it holds 1 and is in the node's recent batches (not stopped, analysis.StoppedAfter;
// a carried level is the previous hour's), or, for a wave that reports no
// wave.instance_running of it, when its wave.tps is: instance_running, when there, says
// that an instance with a rate is stopped. A wave stops reporting an instance that left
// it, and its last 1 stood for the rest of the hour: the wave it left looked as loaded
// to placements, and GET /v1/nodes listed it there, until xx:00.
func costsOf(n analysis.Node, floor float64) nodeCosts {
	rows, bytes, sharing := map[string]float64{}, map[string]float64{}, map[string]float64{}
	running, hasRunning, tpsNow := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var cpu, totalRows float64
	hasCPU := false
	recent := func(s analysis.Series) bool { return !s.Carried && !n.Stopped(s) }
	for _, s := range n.Series {
		inst := s.Labels[labelInstance]
		if inst == "" {
			if s.Name == metric.WaveCPUCores && len(s.Labels) == 0 && !n.Stopped(s) {
				cpu, hasCPU = nonNegative(s.EWMA), s.HasLevel()
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
			tpsNow[inst] = tpsNow[inst] || recent(s)
		case metric.WaveBytesPerS:
			bytes[inst] += nonNegative(s.EWMA)
		case metric.WaveInstanceRunning:
			// One series per state the instance was in this hour: any that says running.
			hasRunning[inst] = true
			running[inst] = running[inst] || (s.Last == 1 && recent(s))
		}
	}
	out := nodeCosts{costs: map[string]api.InstanceCost{}, runs: map[string]bool{}, cpu: cpu, hasCPU: hasCPU}
	add := func(inst string) {
		if _, ok := out.costs[inst]; ok {
			return
		}
		c := api.InstanceCost{Instance: inst, Node: n.Node, RowsPerS: rows[inst], BytesPerS: bytes[inst],
			Cost: rows[inst] + floor, Measured: true}
		if totalRows > 0 {
			c.CPUShare = cpu * sharing[inst] / totalRows
		}
		out.costs[inst] = c
		if running[inst] || (!hasRunning[inst] && tpsNow[inst]) {
			out.runs[inst] = true
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

// labelInstance is the label of the capture instance on wave.* series.
const labelInstance = "instance"

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

// instanceCost is what instance id costs, from a node that runs it (else any node that
// reports it), for the placement explanation; nil when no node reports it. It reads
// every node's series, so only `explain: all` placements ask for it.
func (j *Judge) instanceCost(id string) *api.InstanceCost {
	var found *api.InstanceCost
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
			return &c
		case found == nil:
			found = &c
		}
	}
	return found
}
