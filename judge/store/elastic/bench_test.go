package elastic_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/store"
)

// BenchmarkIngest measures points/s through Write (bulk indexing plus the refresh that
// makes them queryable) for several batch sizes. It needs BINLAKE_TEST_ES.
func BenchmarkIngest(b *testing.B) {
	testenv.Require(b, testenv.Elasticsearch)
	prefix := testPrefix(b)
	cleanup(b, prefix)
	s := newStore(b, prefix)
	ctx := context.Background()
	from := time.Date(2013, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, size := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			node := fmt.Sprintf("%sbench-%d", prefix, size)
			seq := 0
			batch := func() []store.Point {
				pts := make([]store.Point, size)
				for i := range pts {
					pts[i] = store.Point{Node: node, Name: "cpu.util", Labels: map[string]string{"instance": "orders"},
						TS: from.Add(time.Duration(seq) * time.Second), Value: float64(seq % 100)}
					seq++
				}
				return pts
			}
			// Correctness before timing: one batch is readable in full.
			if err := s.Write(ctx, batch()); err != nil {
				b.Fatalf("write: %v", err)
			}
			st, err := s.Stats(ctx, store.Query{Node: node, Name: "cpu.util", Labels: map[string]string{"instance": "orders"}, From: from, To: from.Add(time.Duration(seq) * time.Second)})
			if err != nil || st.Count != int64(size) {
				b.Fatalf("after one batch: %+v, %v; want count %d", st, err, size)
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
