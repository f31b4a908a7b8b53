package loadmodel

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRefitFleet is the refit of every wave of a fleet whose windows hold six hours
// of the agents' 10 s samples (2,160 a wave, ten instances each): what a judge's
// warm-up (Warm) spends about once a minute, and what a plan asked of a cold judge
// waited for. Not in make test: `go test -run '^$' -bench RefitFleet -benchtime 3x
// ./judge/loadmodel`.
func BenchmarkRefitFleet(b *testing.B) {
	for _, waves := range []int{100, 1000} {
		b.Run(fmt.Sprintf("waves=%d", waves), func(b *testing.B) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			ws := make([]*wave, waves)
			for i := range ws {
				ws[i] = newWave(fmt.Sprintf("w%d", i), truth{row: 2e-5, byte: 3e-8, base: 0.1}, 10, uint64(i))
			}
			feed(m, &clk, 6*time.Hour, ws...)
			for b.Loop() {
				m.Refit()
				if n := m.Warm(); n != waves {
					b.Fatalf("refitted %d waves, want %d", n, waves)
				}
			}
		})
	}
}
