package lbplugins_test

import (
	"fmt"
	"testing"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

// BenchmarkDecide measures one placement decision on a snapshot (common filters, the
// plugin's scores, the top 5 explained) per algorithm and cluster size, and building the
// snapshot itself, which the judge does at most once per snapshot interval.
func BenchmarkDecide(b *testing.B) {
	filters := lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90, "mem.used_pct": 95}}
	for _, algo := range lbplugins.Names() {
		p, err := lbplugins.New(algo, lbplugins.Settings{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{10, 100, 1000, 5000} {
			snap := lbplugins.NewSnapshot(cluster.Random(n, 1), filters, cluster.Now, p)
			// The expected work and the cap are the utilisation plugin's; the others ignore them.
			req := lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0001"},
				Expected: lbplugins.Work{Rows: 500, Bytes: 2e5}, MaxUtilisation: 0.7}
			b.Run(fmt.Sprintf("%s/nodes=%d", algo, n), func(b *testing.B) {
				d, err := snap.Decide(p, req, cluster.Now)
				if err != nil || d.Node == "" || d.Candidates+d.FilteredBy.Total() != n || len(d.Scores) != min(n-1, 5) {
					b.Fatalf("bad decision before timing: %v %+v", err, d)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := snap.Decide(p, req, cluster.Now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	// Reservations pending on every node: the judge under a burst of placements faster
	// than the nodes report their instances (BenchmarkPlacementHTTP's reserve case).
	for _, n := range []int{1000, 5000} {
		p, _ := lbplugins.New("utilisation", lbplugins.Settings{})
		snap := lbplugins.NewSnapshot(cluster.Random(n, 1), filters, cluster.Now, p)
		rv := lbplugins.NewReserved(snap)
		for i := range n {
			rv.Add(i, int32(1+i%40))
			rv.AddCores(i, 0.01*float64(1+i%40))
		}
		req := lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0001"}, Reserved: rv,
			Expected: lbplugins.Work{Rows: 500, Bytes: 2e5}, MaxUtilisation: 0.7}
		b.Run(fmt.Sprintf("utilisation/reserved=all/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := snap.Decide(p, req, cluster.Now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, n := range []int{1000, 5000} {
		p, _ := lbplugins.New("leastload", lbplugins.Settings{Seed: 1})
		snap := lbplugins.NewSnapshot(cluster.Random(n, 1), filters, cluster.Now, p)
		rv := lbplugins.NewReserved(snap)
		for i := range n {
			rv.Add(i, int32(1+i%40))
		}
		req := lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0001"}, Reserved: rv}
		b.Run(fmt.Sprintf("leastload/reserved=all/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := snap.Decide(p, req, cluster.Now); err != nil {
					b.Fatal(err)
				}
			}
		})
		// As in a burst: every decision reserves, so the next one sees one more.
		b.Run(fmt.Sprintf("leastload/reserved=all,growing/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := snap.Decide(p, req, cluster.Now)
				if err != nil {
					b.Fatal(err)
				}
				k, _ := snap.Index(d.Node)
				rv.Add(k, 1)
			}
		})
	}
	for _, n := range []int{1000, 5000} {
		nodes := cluster.Random(n, 1)
		ps := make([]lbplugins.Plugin, 0, len(lbplugins.Names()))
		for _, algo := range lbplugins.Names() {
			p, _ := lbplugins.New(algo, lbplugins.Settings{Seed: 1})
			ps = append(ps, p)
		}
		b.Run(fmt.Sprintf("snapshot/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lbplugins.NewSnapshot(nodes, filters, cluster.Now, ps...)
			}
		})
	}
}
