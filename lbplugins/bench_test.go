package lbplugins_test

import (
	"fmt"
	"testing"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

// BenchmarkDecide measures one placement decision (common filters, the plugin's filter
// and scores, sorting) per algorithm and cluster size.
func BenchmarkDecide(b *testing.B) {
	filters := lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90, "mem.used_pct": 95}}
	for _, algo := range lbplugins.Names() {
		p, err := lbplugins.New(algo, lbplugins.Settings{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{10, 100, 1000, 5000} {
			nodes := cluster.Random(n, 1)
			req := lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0001"}}
			b.Run(fmt.Sprintf("%s/nodes=%d", algo, n), func(b *testing.B) {
				d, err := lbplugins.Decide(p, filters, req, nodes, cluster.Now)
				if err != nil || d.Node == "" || len(d.Scores)+len(d.Filtered) != n {
					b.Fatalf("bad decision before timing: %v %+v", err, d.Node)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := lbplugins.Decide(p, filters, req, nodes, cluster.Now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
