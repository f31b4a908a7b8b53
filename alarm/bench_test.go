package alarm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/metric"
)

// benchPolicies writes n policies spread over the canonical metrics with a mix of
// functions, none of which the benchmark's values violate.
func benchPolicies(n int) string {
	metrics := []string{metric.CPUUtil, metric.Load1, metric.MemUsedPct, metric.DiskUsedPct, metric.NetRxBps,
		metric.GoHeapBytes, metric.GoGoroutines, metric.WaveTPS, metric.WaveLagSeconds, metric.WavePublishErrs}
	funcs := []string{"last > 1e12", "avg(#3) > 1e12", "max(#5) > 1e12", "all(#3) > 1e12", "pdiff(#2) > 1e9", "avg_over(1m) > 1e12", "diff(#3) > 1e12", "min(#4) > 1e12", "sum(#3) > 1e13", "last(#2) > 1e12"}
	var b strings.Builder
	b.WriteString("policies:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - name: p%d\n    metric: %s\n    condition: %q\n    severity: P%d\n    channels: [c]\n",
			i, metrics[i%len(metrics)], funcs[(i/len(metrics))%len(funcs)], i%6)
	}
	return b.String()
}

// BenchmarkEvaluate: points evaluated per second with 100 policies over 1,000 nodes (each
// batch carries the ten canonical metrics a node sends per tick, each read by 10 policies).
func BenchmarkEvaluate(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		b.Run(fmt.Sprintf("policies=100/nodes=%d", nodes), func(b *testing.B) {
			r := newRig(b, benchPolicies(100), nil)
			batches := make([]metric.Batch, nodes)
			names := []string{metric.CPUUtil, metric.Load1, metric.MemUsedPct, metric.DiskUsedPct, metric.NetRxBps,
				metric.GoHeapBytes, metric.GoGoroutines, metric.WaveTPS, metric.WaveLagSeconds, metric.WavePublishErrs}
			for i := range batches {
				pts := make([]metric.Point, len(names))
				for j, n := range names {
					pts[j] = metric.Point{Name: n, Value: float64(i + j)}
				}
				batches[i] = metric.Batch{Node: fmt.Sprintf("wave-%d", i), IntervalS: 10, Points: pts}
			}
			// Correctness before timing: every point is evaluated by its 10 policies.
			var evals int
			r.e.o.OnEvaluations = func(n int) { evals += n }
			ts := t0
			for i := range batches {
				batches[i].TS = ts
				r.e.Observe(batches[i])
			}
			if want := nodes * 10 * 10; evals != want {
				b.Fatalf("evaluations %d, want %d", evals, want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			points := 0
			for i := 0; i < b.N; i++ {
				ts = ts.Add(10 * time.Second)
				for j := range batches {
					batches[j].TS = ts
					r.e.Observe(batches[j])
				}
				points += nodes * len(names)
			}
			b.StopTimer()
			b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
			b.ReportMetric(float64(evals-nodes*100)/b.Elapsed().Seconds(), "evals/s")
			if p, f, _ := r.e.Counts(); p+f != 0 {
				b.Fatalf("nothing should violate: %d pending, %d firing", p, f)
			}
		})
	}
}

// BenchmarkViolationToWebhook: the latency from handing a violating batch to the alarm
// (as the bus handler does) to the webhook receiver having the notification, through the
// dispatcher and a real HTTP POST, with group_wait 0.
func BenchmarkViolationToWebhook(b *testing.B) {
	rcv := newReceiver(b)
	c := openCoord(b, b.TempDir())
	b.Cleanup(func() { c.Close() })
	_, a := startAlarm(b, Options{
		Policies: parsePolicies(b, benchPolicies(100)+"  - name: hot\n    metric: cpu.util\n    condition: last > 90\n    severity: P1\n    channels: [c]\n"),
		Channels: map[string]notify.Notifier{"c": webhookChannel(b, rcv.srv.URL)}, Coordinator: c, Logger: quiet,
		EvalInterval: time.Hour, // only the batch path, no timer help
	})
	ts := time.Now().UTC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ts = ts.Add(time.Second)
		node := fmt.Sprintf("wave-%d", i) // a new alert each time
		data, err := metric.Encode(metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{{Name: "cpu.util", Value: 99}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := a.ObserveRaw(data); err != nil {
			b.Fatal(err)
		}
		rcv.wait(b, i+1)
	}
	b.StopTimer()
	if got := rcv.payloads(); len(got) != b.N || got[b.N-1].Alerts[0].Labels["node"] != fmt.Sprintf("wave-%d", b.N-1) {
		b.Fatalf("webhook got %d payloads", len(got))
	}
	_ = context.Background
}
