package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/judge/store"
)

// AgentBatch returns the points of one agent tick of node at ts (benchkit.AgentPoints:
// 55 points, 27 of them node-level, the rest over 12 label sets); seq varies the values.
func AgentBatch(node string, ts time.Time, seq int) []store.Point {
	pts := make([]store.Point, 0, 56)
	benchkit.AgentPoints(seq, func(name string, labels map[string]string, v float64) {
		pts = append(pts, store.Point{Node: node, Name: name, Labels: labels, TS: ts, Value: v})
	})
	return pts
}

// unowned hands a store to store.Buffered, which closes what it wraps, without letting
// it close the store: the benchmark's caller owns it.
type unowned struct{ store.Store }

func (unowned) Close() error { return nil }

// benchNodes is how many nodes the benchmark's agents are; their batches take turns.
const benchNodes = 100

// BenchIngest measures ingest the way the judge does it: b.N agent batches (AgentBatch,
// 55 points each, benchNodes nodes taking turns, one tick every 10 s per node) go through
// a store.Buffered built with opts into s, timed from the first Write until every point
// is written (Flush) and visible to queries (Refresh). It reports points/s and the CPU
// time this process spent per point (cpu-ns/point: on a shared machine the steadier
// figure; it leaves out a separate engine's CPU), then checks that nothing was dropped
// and that every node's points read back.
func BenchIngest(b *testing.B, s store.Store, opts store.BufferOptions) {
	ctx := context.Background()
	per := len(AgentBatch("x", time.Unix(0, 0), 0))
	// Room for everything: the benchmark measures the store, not the drop policy.
	opts.Capacity = b.N*per + 1
	buf := store.NewBuffered(unowned{s}, opts)
	defer buf.Close()
	// A fresh day in 2014–2023 per run keeps runs (and the shared engine's other users)
	// apart.
	base := time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rand.IntN(3600))
	prefix := fmt.Sprintf("bench%08x-", rand.Uint32())
	nodes := make([]string, benchNodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	for i := range b.N {
		ts := base.Add(time.Duration(i/benchNodes) * 10 * time.Second)
		if err := buf.Write(ctx, AgentBatch(nodes[i%benchNodes], ts, i)); err != nil {
			b.Fatalf("write: %v", err)
		}
	}
	if err := buf.Refresh(ctx); err != nil {
		b.Fatalf("refresh: %v", err)
	}
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N*per)/elapsed.Seconds(), "points/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*per), "cpu-ns/point")

	if c := buf.Counters(); c.Written != int64(b.N*per) || c.Dropped != 0 {
		b.Fatalf("buffer counters %+v after %d points", c, b.N*per)
	}
	to := base.Add(time.Duration(b.N/benchNodes+1) * 10 * time.Second)
	for i, node := range nodes[:min(b.N, benchNodes)] {
		want := int64((b.N - i + benchNodes - 1) / benchNodes)
		for _, q := range []store.Query{
			{Node: node, Name: "go.goroutines", From: base, To: to},
			{Node: node, Name: "wave.tps", Labels: map[string]string{"instance": "b"}, From: base, To: to},
		} {
			st, err := s.Stats(ctx, q)
			if err != nil || st.Count != want {
				b.Fatalf("after the benchmark, %s/%s%v: %+v, %v; want count %d", node, q.Name, q.Labels, st, err, want)
			}
		}
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
