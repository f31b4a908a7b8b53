package lbplugins

import "math"

// Resources the weighted-sum plugins (leastload, balanced, p2c) weigh. Each turns into a
// utilisation between 0 (idle) and 1 (full) per node; see Usage.
const (
	ResCPU       = "cpu"       // cpu.util / 100
	ResMemory    = "memory"    // mem.used_pct / 100
	ResLoad      = "load"      // load.1 per core (cpu.cores), or relative to the busiest candidate
	ResNetwork   = "network"   // net.rx_bps + net.tx_bps relative to the busiest candidate
	ResTPS       = "tps"       // wave.tps relative to the busiest candidate
	ResInstances = "instances" // wave.instances relative to the candidate running most
)

// AllResources lists the resources in a fixed order, for stable explanations.
var AllResources = []string{ResCPU, ResMemory, ResLoad, ResNetwork, ResTPS, ResInstances}

// rawUsage reads one resource's raw level from a node.
func rawUsage(n *NodeView, res string) (float64, bool) {
	switch res {
	case ResCPU:
		v, ok := n.Load(CPUUtil)
		return v / 100, ok
	case ResMemory:
		v, ok := n.Load(MemUsedPct)
		return v / 100, ok
	case ResLoad:
		v, ok := n.Load(Load1)
		if !ok {
			return 0, false
		}
		if cores, ok := n.Load(CPUCores); ok && cores > 0 {
			return v / cores, true
		}
		return v, true
	case ResNetwork:
		rx, ok1 := n.Load(NetRxBps)
		tx, ok2 := n.Load(NetTxBps)
		return rx + tx, ok1 || ok2
	case ResTPS:
		return n.Load(WaveTPS)
	case ResInstances:
		return n.Load(WaveInstances)
	}
	return 0, false
}

// relative reports whether a resource has no absolute capacity and is compared with the
// busiest candidate instead.
func relative(n *NodeView, res string) bool {
	switch res {
	case ResNetwork, ResTPS, ResInstances:
		return true
	case ResLoad:
		cores, ok := n.Load(CPUCores)
		return !ok || cores <= 0
	}
	return false
}

// Usage returns, for each candidate in order, its utilisation (0–1) of each resource that
// at least one candidate reports. Absolute resources (cpu, memory, load per core) are
// fractions of the node's capacity; relative ones are divided by the largest value among
// the candidates (at least 1, so that near-idle clusters are not magnified). A node that
// does not report a resource others report counts as full on it: placing work on a node
// the judge cannot see is the riskier choice. Resources no candidate reports are absent.
func Usage(candidates []*NodeView, resources []string) []map[string]float64 {
	out := make([]map[string]float64, len(candidates))
	for i := range out {
		out[i] = make(map[string]float64, len(resources))
	}
	for _, res := range resources {
		raw := make([]float64, len(candidates))
		have := make([]bool, len(candidates))
		maxRel, any := 1.0, false
		for i, n := range candidates {
			raw[i], have[i] = rawUsage(n, res)
			if have[i] {
				any = true
				if relative(n, res) && raw[i] > maxRel {
					maxRel = raw[i]
				}
			}
		}
		if !any {
			continue
		}
		for i, n := range candidates {
			u := 1.0
			if have[i] {
				u = raw[i]
				if relative(n, res) {
					u /= maxRel
				}
			}
			out[i][res] = clamp01(u)
		}
	}
	return out
}

func clamp01(v float64) float64 {
	if math.IsNaN(v) {
		return 1
	}
	return math.Max(0, math.Min(1, v))
}

// Composite is the weighted free capacity of a node: 100·Σ w·(1−u) / Σ w over the
// resources present in usage. The parts are the per-resource contributions; they add up
// to the score.
func Composite(usage map[string]float64, weights map[string]float64) (float64, map[string]float64) {
	total := 0.0
	for _, res := range AllResources {
		if _, ok := usage[res]; ok {
			total += weights[res]
		}
	}
	parts := make(map[string]float64, len(usage))
	if total == 0 {
		return 0, parts
	}
	score := 0.0
	for _, res := range AllResources {
		u, ok := usage[res]
		if !ok || weights[res] == 0 {
			continue
		}
		c := 100 * weights[res] * (1 - u) / total
		parts[res] = c
		score += c
	}
	return score, parts
}

// DefaultWeights are leastload's and p2c's weights when judge.yaml sets none: CPU and
// memory dominate, the load average confirms CPU pressure, and the wave's own figures
// spread instances and traffic.
func DefaultWeights() map[string]float64 {
	return map[string]float64{ResCPU: 3, ResMemory: 2, ResLoad: 1, ResNetwork: 1, ResTPS: 1, ResInstances: 2}
}
