package alarm

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/metric"
)

// The Kafka path's cost per point (issue "metric path through Kafka at 1M points/s"):
// encoded agent batches through Alarm.ObserveRaw, as the bus handler hands them over
// (decode, validate, evaluate), 100 policies over 1,000 nodes.

const (
	tpNodes    = 1000
	tpPolicies = 100
)

// agentPolicies writes n policies over the metrics of an agent batch (benchkit.AgentShape)
// with a mix of functions, none of which agentBatch's values violate. Every other policy
// on a labelled metric selects the labelled series (label: "*"), the rest read them all.
func agentPolicies(n int) string {
	type m struct{ name, label string }
	var ms []m
	for _, s := range benchkit.AgentShape {
		for _, name := range s.Names {
			ms = append(ms, m{name, s.Label})
		}
	}
	funcs := []string{"last > 1e15", "avg(#3) > 1e15", "max(#5) > 1e15", "all(#3) > 1e15", "pdiff(#2) > 1e9",
		"avg_over(1m) > 1e15", "diff(#3) > 1e15", "min(#4) > 1e15", "sum(#3) > 1e16", "last(#2) > 1e15"}
	var b strings.Builder
	b.WriteString("policies:\n")
	for i := range n {
		x := ms[i%len(ms)]
		fmt.Fprintf(&b, "  - name: a%d\n    metric: %s\n    condition: %q\n    severity: P%d\n    channels: [c]\n",
			i, x.name, funcs[(i/len(ms))%len(funcs)], i%6)
		if x.label != "" && i%2 == 1 {
			fmt.Fprintf(&b, "    nodes: {labels: {%s: \"*\"}}\n", x.label)
		}
	}
	return b.String()
}

// agentBatch is one agent tick as metric.Batch (benchkit.AgentPoints: 55 points, 27
// node-level, the rest over 12 label sets).
func agentBatch(node string, ts time.Time, seq int) metric.Batch {
	b := metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: make([]metric.Point, 0, 56)}
	benchkit.AgentPoints(seq, func(name string, labels map[string]string, v float64) {
		b.Points = append(b.Points, metric.Point{Name: name, Value: v, Labels: labels})
	})
	return b
}

// encodedFleet is every node's encoded batch; stamp rewrites a node's timestamp in place
// (the batches' times are whole seconds, so the RFC 3339 text keeps its length).
type encodedFleet struct {
	data [][]byte
	tsAt []int
}

var tsField = []byte(`"ts":"`)

func newEncodedFleet(tb testing.TB, nodes int, ts time.Time) *encodedFleet {
	f := &encodedFleet{data: make([][]byte, nodes), tsAt: make([]int, nodes)}
	for i := range nodes {
		d, err := metric.Encode(agentBatch(fmt.Sprintf("wave-%04d", i), ts, i))
		if err != nil {
			tb.Fatal(err)
		}
		f.data[i], f.tsAt[i] = d, bytes.Index(d, tsField)+len(tsField)
	}
	return f
}

func (f *encodedFleet) stamp(i int, ts []byte) { copy(f.data[i][f.tsAt[i]:], ts) }

func tsText(ts time.Time) []byte { return ts.UTC().AppendFormat(nil, time.RFC3339) }

// newBenchAlarm builds an alarm (not run: the benchmark is the bus handler) with the
// agent policies, and counts the condition evaluations.
func newBenchAlarm(b *testing.B, evals *atomic.Int64) *Alarm {
	c := openCoord(b, b.TempDir())
	b.Cleanup(func() { c.Close() })
	a, err := New(Options{Policies: parsePolicies(b, agentPolicies(tpPolicies)),
		Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}}, Coordinator: c, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	a.eng.o.OnEvaluations = func(n int) { evals.Add(int64(n)) }
	return a
}

// warm observes every node's batch once (series are created on first sight) and checks
// that each point met its policies.
func warm(b *testing.B, a *Alarm, f *encodedFleet, ts time.Time, evals *atomic.Int64) {
	t := tsText(ts)
	for i := range f.data {
		f.stamp(i, t)
		if err := a.ObserveRaw(f.data[i]); err != nil {
			b.Fatal(err)
		}
	}
	if evals.Load() == 0 {
		b.Fatal("no condition was evaluated")
	}
}

// BenchmarkDecodeEvaluate: one op is one agent batch (55 points) of one of 1,000 nodes
// through ObserveRaw; nodes take turns, each tick 10 s after its previous one.
// With log=others the notification log holds firing alerts of nodes this process does
// not evaluate (alarm processes share the log; each restores all of it): they must not
// cost the evaluation of the others.
func BenchmarkDecodeEvaluate(b *testing.B) {
	for _, others := range []int{0, 20} {
		b.Run(fmt.Sprintf("log=%d-others", others), func(b *testing.B) { benchDecodeEvaluate(b, others) })
	}
}

func benchDecodeEvaluate(b *testing.B, others int) {
	var evals atomic.Int64
	a := newBenchAlarm(b, &evals)
	for i := range others {
		le := LogEntry{Fingerprint: fpString(uint64(i + 1)), Policy: "a0",
			Labels: map[string]string{"node": fmt.Sprintf("elsewhere-%d", i)}, FiringSince: t0, Sent: 1, LastSent: t0}
		if err := a.eng.o.Log.Save(context.Background(), le); err != nil {
			b.Fatal(err)
		}
	}
	if n, err := a.eng.Restore(context.Background()); err != nil || n != others {
		b.Fatalf("restored %d entries (%v), want %d", n, err, others)
	}
	ts := t0
	f := newEncodedFleet(b, tpNodes, ts)
	warm(b, a, f, ts, &evals)
	perRound := evals.Load()
	points := len(agentBatch("x", ts, 0).Points)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	var stampTS []byte
	for i := range b.N {
		n := i % tpNodes
		if n == 0 {
			ts = ts.Add(10 * time.Second)
			stampTS = tsText(ts)
		}
		f.stamp(n, stampTS)
		if err := a.ObserveRaw(f.data[n]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	runtime.ReadMemStats(&ms1)
	total := float64(b.N * points)
	b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/point")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/point")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/point")
	b.ReportMetric(total/b.Elapsed().Seconds(), "points/s")
	if b.N >= tpNodes {
		if got, want := evals.Load()-perRound, perRound*int64(b.N/tpNodes); got < want {
			b.Fatalf("evaluations %d, want at least %d", got, want)
		}
	}
	if p, fi, _ := a.eng.Counts(); p+fi != 0 {
		b.Fatalf("nothing should violate: %d pending, %d firing", p, fi)
	}
}

// BenchmarkObserveParallel: points/s with GOMAXPROCS goroutines observing at once, as the
// Kafka consumer delivers partitions concurrently: each goroutine owns its share of the
// 1,000 nodes (a node is on one partition). Run with -cpu 1,2.
func BenchmarkObserveParallel(b *testing.B) {
	var evals atomic.Int64
	a := newBenchAlarm(b, &evals)
	ts0 := t0
	f := newEncodedFleet(b, tpNodes, ts0)
	warm(b, a, f, ts0, &evals)
	points := len(agentBatch("x", ts0, 0).Points)
	g := runtime.GOMAXPROCS(0)
	var ids, batches atomic.Int64
	b.ResetTimer()
	cpu0 := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		id := int(ids.Add(1) - 1)
		var mine []int
		for n := id % g; n < tpNodes; n += g {
			mine = append(mine, n)
		}
		ts := ts0
		var stampTS []byte
		done := int64(0)
		for k := 0; pb.Next(); k++ {
			j := k % len(mine)
			if j == 0 {
				ts = ts.Add(10 * time.Second)
				stampTS = tsText(ts)
			}
			f.stamp(mine[j], stampTS)
			if err := a.ObserveRaw(f.data[mine[j]]); err != nil {
				b.Error(err)
				return
			}
			done++
		}
		batches.Add(done)
	})
	b.StopTimer()
	total := float64(batches.Load() * int64(points))
	b.ReportMetric(total/b.Elapsed().Seconds(), "points/s")
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/total, "cpu-ns/point")
}

// processCPU is the CPU time this process used so far (user and system): on a shared
// machine a steadier measure of the cost than the wall clock.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
