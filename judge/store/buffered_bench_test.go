package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/storetest"
)

// discard is an inner store that accepts every write at once, or with hang set makes
// every write wait for its context: the benchmarks then time the buffer alone.
type discard struct {
	store.Store
	hang bool
}

func (d discard) Write(ctx context.Context, _ []store.Point) error {
	if d.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (discard) Refresh(context.Context) error { return nil }
func (discard) Close() error                  { return nil }

// BenchmarkBuffered times the queue of store.Buffered with agent batches (55 points
// each) handed over by WriteOwned, as the judge's ingest does: "through" has the writers
// take every point to an inner store that takes no time; "drop" has them stuck, so that
// past the capacity every write drops the oldest points (OverflowDrop).
func BenchmarkBuffered(b *testing.B) {
	batch := storetest.AgentBatch("n1", time.Unix(0, 0), 0)
	for _, bc := range []struct {
		name string
		hang bool
	}{{"through", false}, {"drop", true}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := store.BufferOptions{Capacity: 100_000, Overflow: store.OverflowDrop, CloseTimeout: time.Millisecond}
			buf := store.NewBuffered(discard{hang: bc.hang}, opts)
			defer buf.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := buf.WriteOwned(batch); err != nil {
					b.Fatalf("write: %v", err)
				}
			}
			if !bc.hang {
				if err := buf.Flush(context.Background()); err != nil {
					b.Fatalf("flush: %v", err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/point")
		})
	}
}
