package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/bustest"
	"github.com/binlake/binlake/internal/bus/memory"
)

func newBus(t *testing.T) bus.Bus {
	b, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	return b
}

func TestConformance(t *testing.T) {
	bustest.Run(t, newBus)
}

// TestBusLimitIsTopicDefault checks that Options.MaxMessageBytes applies to topics that
// set no limit of their own, and that a topic's own limit wins.
func TestBusLimitIsTopicDefault(t *testing.T) {
	ctx := context.Background()
	b, err := memory.New(memory.Options{MaxMessageBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, spec := range []bus.TopicSpec{{Name: "default"}, {Name: "own", MaxMessageBytes: 1000}} {
		if err := b.CreateTopic(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic   string
		size    int
		tooLong bool
	}{
		{"default", 100, false},
		{"default", 101, true},
		{"own", 1000, false},
		{"own", 1001, true},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.topic, tc.size), func(t *testing.T) {
			err := p.Publish(ctx, bus.Message{Topic: tc.topic, Key: []byte("k"), Value: make([]byte, tc.size-1)})
			if got := errors.Is(err, bus.ErrMessageTooLarge); got != tc.tooLong {
				t.Fatalf("Publish(%d bytes) = %v, want too large: %v", tc.size, err, tc.tooLong)
			}
		})
	}
}

// TestPublishIsAllOrNothing checks that a batch with one bad message writes nothing.
func TestPublishIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	b := newBus(t)
	defer b.Close()
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: "t", MaxMessageBytes: 10}); err != nil {
		t.Fatal(err)
	}
	p, _ := b.Publisher()
	err := p.Publish(ctx,
		bus.Message{Topic: "t", Value: []byte("ok")},
		bus.Message{Topic: "t", Value: make([]byte, 11)})
	if !errors.Is(err, bus.ErrMessageTooLarge) {
		t.Fatalf("Publish = %v, want ErrMessageTooLarge", err)
	}
	if err := p.Publish(ctx, bus.Message{Topic: "t", Value: []byte("second")}); err != nil {
		t.Fatal(err)
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got bus.Message
	_ = s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		got = m
		cancel()
		return nil
	})
	if string(got.Value) != "second" || got.Offset != 0 {
		t.Fatalf("first stored message = %q at offset %d, want %q at 0", got.Value, got.Offset, "second")
	}
}

func TestSubscriberRejectsBadOptions(t *testing.T) {
	b := newBus(t)
	defer b.Close()
	if err := b.CreateTopic(context.Background(), bus.TopicSpec{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts bus.SubscribeOptions
	}{
		{"no group", bus.SubscribeOptions{Topic: "t"}},
		{"bad topic name", bus.SubscribeOptions{Topic: "a/b", Group: "g"}},
		{"bad start", bus.SubscribeOptions{Topic: "t", Group: "g", StartAt: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := b.Subscriber(tc.opts); err == nil {
				t.Fatalf("Subscriber(%+v) succeeded", tc.opts)
			}
		})
	}
}

func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	for _, batch := range []int{1, 10, 100, 1000} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			mb, err := memory.New(memory.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer mb.Close()
			if err := mb.CreateTopic(ctx, bus.TopicSpec{Name: "bench", Partitions: 8}); err != nil {
				b.Fatal(err)
			}
			p, _ := mb.Publisher()
			msgs := make([]bus.Message, batch)
			for i := range msgs {
				msgs[i] = bus.Message{Topic: "bench", Key: []byte("node-" + strconv.Itoa(i%16)), Value: make([]byte, 256)}
			}
			// Correctness before timing: a batch goes through.
			if err := p.Publish(ctx, msgs...); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(batch * 256))
			b.ResetTimer()
			for b.Loop() {
				if err := p.Publish(ctx, msgs...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
