package judge

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
)

// BenchmarkRebalancePlan is the work of one POST /v1/rebalance (Judge.plan, without the
// HTTP) for 10,000 instances on 1,000 waves whose load model holds six hours of the
// agents' 10 s samples (2,160 a wave, the CPU with 3 % noise): "warm", every fit made
// ahead (the wall-clock judge's warmLoop), and "cold", every wave refitted by the request
// (a judge on another clock, or one asked before its first warm-up). Not in make test: a
// measurement, `go test -run '^$' -bench RebalancePlan -benchtime 3x ./judge`.
func BenchmarkRebalancePlan(b *testing.B) {
	j, req := planFleet(b)
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "warm" {
				j.model.Warm()
			}
			var ans api.RebalanceAnswer
			for b.Loop() {
				if mode == "cold" {
					j.model.Refit()
				}
				ans = j.plan(req.Waves, req.Instances, time.Time{})
			}
			if ans.Model != api.ModelUtilisation {
				b.Fatalf("planned in %s (%s): the benchmark measures the utilisation model", ans.Model, ans.ModelNote)
			}
			b.ReportMetric(float64(len(ans.Moves)), "moves")
		})
	}
}

// planFleet is BenchmarkRebalancePlan's judge (utilisation) and request: 1,000 waves
// of 8 cores running 10 instances each, six hours of their agents' 10 s samples (2,160
// a wave, the CPU with 3 % noise), of which the last minute's six batches are ingested
// (the current hour's figures of each instance, which the plan reads) and the rest
// given to the load model only. The request lists every wave alive and every instance
// on its wave.
func planFleet(b *testing.B) (*Judge, api.RebalanceRequest) {
	b.Helper()
	const waves, perWave, samples = 1000, 10, 2160
	j, err := New(Options{Store: openStoreB(b), Algorithm: "utilisation", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	now := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	type inst struct {
		id, node          string
		rows, size, phase float64
	}
	var insts []inst
	req := api.RebalanceRequest{}
	speed := make([]float64, waves)
	for w := range waves {
		node := fmt.Sprintf("wave-%04d", w)
		req.Waves = append(req.Waves, api.RebalanceWave{Node: node, Alive: true})
		speed[w] = 0.7 + 0.6*r.Float64()
		for i := range perWave {
			in := inst{id: fmt.Sprintf("db-%04d-%d", w, i), node: node, rows: 200 + 3000*r.Float64(), size: 100 + 4000*r.Float64(), phase: 24 * r.Float64()}
			insts = append(insts, in)
			req.Instances = append(req.Instances, api.RebalanceInstance{ID: in.id, Node: node})
		}
	}
	for k := samples - 1; k >= 0; k-- {
		ts := now.Add(-time.Duration(k) * 10 * time.Second)
		h := float64(ts.Unix()%86400) / 3600
		for w := range waves {
			b := metric.Batch{Node: req.Waves[w].Node, TS: ts, IntervalS: 10, Points: []metric.Point{{Name: metric.CPUCores, Value: 8}}}
			cpu := 0.1
			for _, in := range insts[w*perWave : (w+1)*perWave] {
				rows := in.rows * (1 + 0.5*math.Sin(2*math.Pi*(h-in.phase)/24)) * math.Exp(0.25*r.NormFloat64())
				bytes := rows * in.size
				cpu += speed[w] * (2e-5*rows + 4e-9*bytes)
				l := map[string]string{"instance": in.id}
				b.Points = append(b.Points, metric.Point{Name: metric.WaveTPS, Labels: l, Value: rows},
					metric.Point{Name: metric.WaveBytesPerS, Labels: l, Value: bytes})
			}
			cpu *= 1 + 0.03*r.NormFloat64()
			b.Points = append(b.Points, metric.Point{Name: metric.WaveCPUCores, Value: cpu}, metric.Point{Name: metric.CPUUtil, Value: 100 * cpu / 8})
			if k < 6 { // the current hour's figures of each instance, which the plan reads
				j.Ingest(b, sourceHTTP)
			} else {
				j.model.Observe(b)
			}
		}
	}
	return j, req
}
