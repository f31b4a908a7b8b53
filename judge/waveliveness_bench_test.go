package judge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// BenchmarkWaveLivenessCheck is one check of the waves' liveness (checkWaves, which the
// judge runs every waveLogEvery, 5 s, for as long as it runs) on BenchmarkRebalancePlan's
// fleet: 1,000 waves running 10,000 instances, 23 series a wave in the current hour.
// It reports how many waves the checks found down (0: the fleet reports). Not in make
// test: a measurement, `go test -run '^$' -bench WaveLivenessCheck ./judge`.
func BenchmarkWaveLivenessCheck(b *testing.B) {
	j, _ := planFleet(b)
	waitStored(b, j)
	b.ReportAllocs()
	for b.Loop() {
		j.checkWaves()
	}
	b.StopTimer()
	down := 0
	for _, w := range j.waveWatch.waves {
		if w.down != "" {
			down++
		}
	}
	if len(j.waveWatch.waves) != 1000 {
		b.Fatalf("%d waves checked, want 1000", len(j.waveWatch.waves))
	}
	b.ReportMetric(float64(down), "down")
}

// BenchmarkIngestWhileLivenessCheck is how the liveness check weighs on the analysis of
// the fleet's batches (Judge.observe, the part of Ingest before the store, whose
// Incremental.Observe takes the analysis' write lock): one wave's batch of 23 points
// (BenchmarkRebalancePlan's fleet, the waves in turn, each batch dated now), with no
// check running ("check=none") and with checkWaves run every 25 ms in another
// goroutine ("check=every25ms", 200 times the judge's every 5 s, so that the batches
// meet checks; as many checks a second whatever one costs, as long as it takes less).
// It reports the batches' latency percentiles and the checks run: a batch that meets a
// check waits for the check's read of the analysis, which ns/op (the mean), the 99.9th
// percentile and the largest show where the checks are tens in 100,000 batches.
// Allocations are the process's, the checks' included.
func BenchmarkIngestWhileLivenessCheck(b *testing.B) {
	j, req := planFleet(b)
	waitStored(b, j)
	batches := make([]metric.Batch, len(req.Waves))
	perWave := len(req.Instances) / len(req.Waves)
	for w := range batches {
		bt := metric.Batch{Node: req.Waves[w].Node, IntervalS: 10, Points: []metric.Point{{Name: metric.CPUCores, Value: 8}}}
		for _, in := range req.Instances[w*perWave : (w+1)*perWave] {
			l := map[string]string{"instance": in.ID}
			bt.Points = append(bt.Points, metric.Point{Name: metric.WaveTPS, Labels: l, Value: 1000},
				metric.Point{Name: metric.WaveBytesPerS, Labels: l, Value: 1e6})
		}
		bt.Points = append(bt.Points, metric.Point{Name: metric.WaveCPUCores, Value: 1}, metric.Point{Name: metric.CPUUtil, Value: 12.5})
		batches[w] = bt
	}
	for _, mode := range []string{"none", "every25ms"} {
		b.Run("check="+mode, func(b *testing.B) {
			stop := make(chan struct{})
			var (
				wg     sync.WaitGroup
				checks int
			)
			if mode != "none" {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tick := time.NewTicker(25 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						j.checkWaves()
						checks++
					}
				}()
			}
			lats := make([]time.Duration, 0, b.N)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				bt := batches[n%len(batches)]
				n++
				bt.TS = time.Now()
				t := time.Now()
				j.observe(bt, sourceHTTP)
				lats = append(lats, time.Since(t))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			reportLatencies(b, lats) // sorts them
			b.ReportMetric(float64(lats[len(lats)*999/1000].Nanoseconds())/1e3, "p99.9-µs")
			b.ReportMetric(float64(lats[len(lats)-1].Nanoseconds())/1e3, "max-µs")
			b.ReportMetric(float64(checks), "checks")
		})
	}
}

// waitStored waits until the fleet's ingested points are in the store, so that its
// writer takes no CPU from what is timed.
func waitStored(b *testing.B, j *Judge) {
	b.Helper()
	if err := j.buf.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
}
