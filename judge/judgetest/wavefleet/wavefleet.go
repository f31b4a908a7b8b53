// Package wavefleet writes the batches the agents of a fleet of waves send, for tests
// of the judge's load model and of what uses it (placements in utilisation, rebalancing
// plans): each wave's host cores and CPU, and its wave process's CPU following given
// prices of the rows and bytes its instances publish (and the binlog they read, where
// given), which vary independently enough for the judge to fit those prices.
package wavefleet

import (
	"math"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// Wave is one wave: its host's cores and CPU (percent), the true prices its wave
// process's CPU follows (cores per row/s and per byte/s, on a base of 0.05 cores), and
// the instances it runs with their mean rows/s.
type Wave struct {
	Node           string
	Cores, UtilPct float64
	Row, Byte      float64
	Instances      map[string]float64
	// Read is the true price of a binlog byte read a second, and Reads each instance's
	// binlog read per byte it publishes (an instance not in it reports no binlog read;
	// nil: the wave's agent reports none).
	Read  float64
	Reads map[string]float64
	// Collinear: the instances' bytes/s are exactly 150 a row, without the part that
	// moves on its own, so that rows and bytes move together (as where every instance
	// publishes rows of one size).
	Collinear bool
	// BootID, when set, is the host's host.info: waves with the same one share a host.
	BootID string
}

// Interval is the agents' reporting interval.
const Interval = 10 * time.Second

// Batches are rounds of the waves' batches, Interval apart, the last at last: round k,
// then wave by wave. An instance's rows/s swing ±30 % around its mean and its bytes/s
// are 150 bytes a row plus up to 80 kB/s that move on their own.
func Batches(waves []Wave, rounds int, last time.Time) []metric.Batch {
	var out []metric.Batch
	for k := range rounds {
		ts := last.Add(-time.Duration(rounds-1-k) * Interval)
		for _, w := range waves {
			b := metric.Batch{Node: w.Node, TS: ts, IntervalS: Interval.Seconds(), Points: []metric.Point{
				{Name: metric.CPUCores, Value: w.Cores}, {Name: metric.CPUUtil, Value: w.UtilPct},
				{Name: metric.MemUsedPct, Value: 40}, {Name: metric.WaveInstances, Value: float64(len(w.Instances))}}}
			if w.BootID != "" {
				b.Points = append(b.Points, metric.Point{Name: metric.HostInfo, Value: 1, Labels: map[string]string{"boot_id": w.BootID}})
			}
			cpu, total := 0.05, 0.0
			ids := make([]string, 0, len(w.Instances))
			for id := range w.Instances {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for i, id := range ids {
				rows := w.Instances[id] * (1 + 0.3*math.Sin(float64(k+3*i)))
				bytes := rows * 150
				if !w.Collinear {
					bytes += 40_000 * (1 + math.Cos(float64(2*k+i)))
				}
				cpu += w.Row*rows + w.Byte*bytes
				total += rows
				inst := map[string]string{"instance": id}
				b.Points = append(b.Points,
					metric.Point{Name: metric.WaveTPS, Value: rows, Labels: inst},
					metric.Point{Name: metric.WaveBytesPerS, Value: bytes, Labels: inst},
					metric.Point{Name: metric.WaveInstanceRunning, Value: 1, Labels: map[string]string{"instance": id, "state": "running"}})
				if ratio, ok := w.Reads[id]; ok {
					cpu += w.Read * bytes * ratio
					b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: bytes * ratio, Labels: inst})
				}
			}
			b.Points = append(b.Points, metric.Point{Name: metric.WaveCPUCores, Value: cpu}, metric.Point{Name: metric.WaveTPS, Value: total})
			out = append(out, b)
		}
	}
	return out
}
