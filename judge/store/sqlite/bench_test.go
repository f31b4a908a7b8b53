package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/store"
)

// BenchmarkIngest measures points/s through Write (one transaction per batch) for
// several batch sizes.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, size := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "bench.db"))
			seq := 0
			batch := func() []store.Point {
				pts := make([]store.Point, size)
				for i := range pts {
					pts[i] = store.Point{Node: fmt.Sprintf("wave-%d", i%20), Name: "cpu.util", Labels: map[string]string{"instance": "orders"},
						TS: from.Add(time.Duration(seq) * time.Second), Value: float64(seq % 100)}
					seq++
				}
				return pts
			}
			// Correctness before timing: one batch is readable in full.
			if err := s.Write(ctx, batch()); err != nil {
				b.Fatalf("write: %v", err)
			}
			st, err := s.Stats(ctx, store.Query{Node: "wave-0", Name: "cpu.util", Labels: map[string]string{"instance": "orders"}, From: from, To: from.Add(time.Duration(seq) * time.Second)})
			if err != nil || st.Count != int64(size/20) {
				b.Fatalf("after one batch: %+v, %v; want count %d", st, err, size/20)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				pts := batch()
				b.StartTimer()
				if err := s.Write(ctx, pts); err != nil {
					b.Fatalf("write: %v", err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
