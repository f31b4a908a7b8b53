// Package cluster builds crafted NodeView clusters for the plugins' tests and benchmarks.
package cluster

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/binlake/binlake/lbplugins"
)

// Now is the decision time of crafted clusters: 13:30 UTC, so the next hour is 14.
var Now = time.Date(2026, 11, 29, 13, 30, 0, 0, time.UTC)

// Node is a live node (last batch 5 s before Now, 10 s interval) whose current-hour
// series sit at the given values (mean = EWMA = last, no spread).
func Node(name string, values map[string]float64) *lbplugins.NodeView {
	n := &lbplugins.NodeView{
		Node:     name,
		LastSeen: Now.Add(-5 * time.Second),
		Interval: 10 * time.Second,
		Current:  map[string]lbplugins.Current{},
		History:  map[string]lbplugins.History{},
	}
	for k, v := range values {
		n.Current[k] = lbplugins.Current{Count: 60, Mean: v, Min: v, Max: v, Last: v, EWMA: v, P95: v}
	}
	return n
}

// Stale moves a node's last batch age before Now.
func Stale(n *lbplugins.NodeView, age time.Duration) *lbplugins.NodeView {
	n.LastSeen = Now.Add(-age)
	return n
}

// Random builds n live nodes with random cpu, memory, load, network, tps and instances.
//
// Each node is a wave in the load model too (Capacity): 4, 8 or 16 cores, prices that
// vary by a factor of two around 1e-4 cores per row/s and 1e-8 per byte/s, a peak of
// 10–90 % of its cores. They come from a source of their own, so that the other levels
// are what they were before capacities existed (the golden decisions).
func Random(n int, seed uint64) []*lbplugins.NodeView {
	r := rand.New(rand.NewPCG(seed, seed+1))
	rc := rand.New(rand.NewPCG(seed^0xcafe, seed+2))
	out := make([]*lbplugins.NodeView, n)
	for i := range out {
		node := Node(fmt.Sprintf("wave-%04d", i), map[string]float64{
			lbplugins.CPUUtil:       r.Float64() * 85,
			lbplugins.MemUsedPct:    r.Float64() * 85,
			lbplugins.Load1:         r.Float64() * 8,
			lbplugins.CPUCores:      8,
			lbplugins.NetRxBps:      r.Float64() * 1e8,
			lbplugins.NetTxBps:      r.Float64() * 1e8,
			lbplugins.WaveTPS:       r.Float64() * 5000,
			lbplugins.WaveInstances: float64(r.IntN(20)),
		})
		var h lbplugins.History
		for hour := range h.Profile {
			avg := r.Float64() * 80
			h.Profile[hour] = lbplugins.Window{Count: 360, Avg: avg, Max: avg + 15, P95: avg + 10}
		}
		node.History[lbplugins.CPUUtil] = h
		node.History[lbplugins.MemUsedPct] = h
		cores := float64(int(4) << rc.IntN(3))
		node.Capacity = &lbplugins.Capacity{Cores: cores, Priced: true,
			RowCores: 1e-4 * (0.5 + rc.Float64()), ByteCores: 1e-8 * (0.5 + rc.Float64()),
			UtilNow: rc.Float64() * 0.8, HasUtilNow: true, PeakCores: cores * (0.1 + 0.8*rc.Float64()), PeakHour: rc.IntN(25) - 1}
		out[i] = node
	}
	return out
}

// Wave is a live node with the given levels that is a wave of the load model: cores,
// prices per row/s and per byte/s, and the cores it uses at its peak (PeakHour 14).
func Wave(name string, values map[string]float64, cores, rowCores, byteCores, peakCores float64) *lbplugins.NodeView {
	n := Node(name, values)
	n.Capacity = &lbplugins.Capacity{Cores: cores, RowCores: rowCores, ByteCores: byteCores, Priced: true,
		PeakCores: peakCores, PeakHour: 14}
	return n
}
