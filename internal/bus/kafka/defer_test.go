package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// TestDeferredAckIntegration: a handler that defers its acks (as the judge does until
// the store has the points) gets its messages committed only up to the oldest one not
// acked, even though later ones were acked: a new subscriber of the group resumes there.
func TestDeferredAckIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("binlake.test.defer-%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n, unacked = 10, 6
	var msgs []bus.Message
	for i := range n {
		msgs = append(msgs, bus.Message{Topic: topic, Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}
	if err := p.Publish(ctx, msgs...); err != nil {
		t.Fatal(err)
	}

	group := topic + "-group"
	sub := func() bus.Subscriber {
		s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: group})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// The first subscriber defers every ack; on the last message it acks all but one,
	// from other goroutines, and stops: Subscribe commits as it returns what is done.
	var acks []func()
	sctx, stop := context.WithCancel(ctx)
	err = sub().Subscribe(sctx, func(hctx context.Context, m bus.Message) error {
		ack := bus.Defer(hctx)
		if string(m.Value) != strconv.Itoa(unacked) {
			acks = append(acks, ack)
		}
		if string(m.Value) == strconv.Itoa(n-1) {
			var wg sync.WaitGroup
			for _, a := range acks {
				wg.Go(a)
			}
			wg.Wait()
			stop()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("first Subscribe: %v", err)
	}

	got := make(chan string, n)
	sctx2, stop2 := context.WithCancel(ctx)
	defer stop2()
	go sub().Subscribe(sctx2, func(_ context.Context, m bus.Message) error {
		got <- string(m.Value)
		return nil
	})
	select {
	case v := <-got:
		if v != strconv.Itoa(unacked) {
			t.Fatalf("the group resumed at message %s, want %d (the oldest one never acked)", v, unacked)
		}
	case <-ctx.Done():
		t.Fatal("the second subscriber got nothing")
	}
}
