package kafka_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
)

// inOrder records each partition's sequence numbers and reports the first gap or
// reordering.
type inOrder struct {
	mu   sync.Mutex
	next map[int]int
}

func (o *inOrder) add(t *testing.T, m bus.Message) (handled int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := seq(t, m); s != o.next[m.Partition] {
		t.Errorf("partition %d: message %d after %d (order broken)", m.Partition, s, o.next[m.Partition]-1)
	}
	o.next[m.Partition]++
	return o.next[m.Partition]
}

// TestPartitionsConcurrentIntegration: with SubscribeConcurrent, a handler stuck on
// partition 0 does not hold partitions 1 and 2 up, and each partition stays in order.
func TestPartitionsConcurrentIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tt := newTestTopic(t, ctx, "concurrent", 3, kafka.Options{CommitInterval: 100 * time.Millisecond})
	const n = 30
	tt.publishTo(t, ctx, 0, n, 0) // the other partitions get theirs once 0 is stuck

	order := &inOrder{next: map[int]int{}}
	stuck := make(chan struct{})
	release := make(chan struct{})
	var stuckOnce sync.Once
	othersDone := make(chan int, 2)
	allDone := make(chan struct{})
	var finished atomic.Int32
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	running := make(chan error, 1)
	go func() {
		running <- tt.subscriber(t, tt.bus, tt.name+".group").SubscribeConcurrent(sctx, func(hctx context.Context, m bus.Message) error {
			if m.Partition == 0 {
				stuckOnce.Do(func() {
					close(stuck)
					select {
					case <-release:
					case <-hctx.Done():
					}
				})
			}
			if order.add(t, m) == n {
				if m.Partition != 0 {
					othersDone <- m.Partition
				}
				if finished.Add(1) == 3 {
					close(allDone)
				}
			}
			return nil
		})
	}()
	select {
	case <-stuck:
	case <-ctx.Done():
		t.Fatal("partition 0's handler was never called")
	}
	tt.publishTo(t, ctx, 1, n, 0)
	tt.publishTo(t, ctx, 2, n, 0)
	for range 2 {
		select {
		case <-othersDone:
		case <-ctx.Done():
			t.Fatal("partitions 1 and 2 were not handled while partition 0's handler was stuck")
		}
	}
	close(release)
	select {
	case <-allDone:
	case <-ctx.Done():
		t.Fatal("partition 0 was not handled once released")
	}
	stop()
	if err := <-running; err != nil {
		t.Fatal(err)
	}
}

// TestSubscribeSerialIntegration: plain Subscribe never runs the handler twice at once,
// though its partitions have workers of their own, and keeps each partition in order.
func TestSubscribeSerialIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tt := newTestTopic(t, ctx, "serial", 3, kafka.Options{})
	const n = 300
	tt.publishSeq(t, ctx, n, 0)

	order := &inOrder{next: map[int]int{}}
	var inside, overlaps, handled atomic.Int32
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	err := tt.subscriber(t, tt.bus, tt.name+".group").Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		// Stay inside a while: another partition's worker would enter, were it allowed to.
		for begin := time.Now(); time.Since(begin) < 50*time.Microsecond; {
			runtime.Gosched()
		}
		order.add(t, m)
		inside.Add(-1)
		if handled.Add(1) == 3*n {
			stop()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if o := overlaps.Load(); o > 0 {
		t.Fatalf("the handler ran concurrently with itself %d times", o)
	}
}
