package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// TestPartitionIntegration: on the real Kafka, every message lands on the partition the
// publisher's Partition named for its key, with each compression codec; a keyless
// message is spread (-1); an unknown codec is refused by name.
func TestPartitionIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, codec := range []string{"none", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), ClientID: "binlake-partition", Compression: codec, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			topic := fmt.Sprintf("binlake-partition-%s-%d", codec, time.Now().UnixNano())
			if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 5}); err != nil {
				t.Fatal(err)
			}
			pub, err := b.Publisher()
			if err != nil {
				t.Fatal(err)
			}
			pt, ok := pub.(bus.Partitioner)
			if !ok {
				t.Fatalf("the kafka publisher %T is no bus.Partitioner", pub)
			}
			if p, err := pt.Partition(ctx, topic, nil); err != nil || p != -1 {
				t.Errorf("keyless: partition %d, %v; want -1", p, err)
			}
			const n = 60
			want := map[string]int{}
			var msgs []bus.Message
			used := map[int]bool{}
			for i := range n {
				key := fmt.Sprintf("shop.orders:[%d]", i)
				p, err := pt.Partition(ctx, topic, []byte(key))
				if err != nil {
					t.Fatal(err)
				}
				want[key] = p
				used[p] = true
				msgs = append(msgs, bus.Message{Topic: topic, Key: []byte(key), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))})
			}
			if len(used) < 3 {
				t.Errorf("60 keys went to %d of 5 partitions", len(used))
			}
			if err := pub.Publish(ctx, msgs...); err != nil {
				t.Fatal(err)
			}
			sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-group"})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			sctx, stop := context.WithCancel(ctx)
			got := 0
			err = sub.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
				if p := want[string(m.Key)]; m.Partition != p {
					t.Errorf("%s on partition %d, Partition said %d", m.Key, m.Partition, p)
				}
				if got++; got == n {
					stop()
				}
				return nil
			})
			if err != nil || got != n {
				t.Fatalf("read %d of %d messages: %v", got, n, err)
			}
		})
	}
	if _, err := kafka.New(kafka.Options{Brokers: []string{"127.0.0.1:9"}, Compression: "brotli"}); err == nil || !strings.Contains(err.Error(), `compression "brotli"`) {
		t.Errorf("compression brotli: %v, want an error naming it", err)
	}
}

// TestPublishToIntegration: PublishTo writes a chunk to the partition named, in order,
// compressed as configured; a message over the batch bytes, a chunk over them and a
// message of another topic are refused by name before anything is written.
func TestPublishToIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), ClientID: "binlake-publishto", Compression: "lz4",
		BatchBytes: 4096, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	topic := fmt.Sprintf("binlake-publishto-%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	to, ok := pub.(bus.PartitionPublisher)
	if !ok {
		t.Fatalf("the kafka publisher %T is no bus.PartitionPublisher", pub)
	}
	msg := func(i int) bus.Message {
		return bus.Message{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
	}
	var chunk []bus.Message
	for i := range 20 {
		chunk = append(chunk, msg(i))
	}
	// A new topic's leaders may not be in the client's metadata yet: a caller retries
	// then, as the wave's lanes do.
	for attempt := 1; ; attempt++ {
		err := to.PublishTo(ctx, topic, 2, chunk[:10]...)
		if err == nil {
			break
		}
		if attempt == 50 {
			t.Fatal(err)
		}
		<-time.After(100 * time.Millisecond)
	}
	if err := to.PublishTo(ctx, topic, 2, chunk[10:]...); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		msgs []bus.Message
		want error
	}{
		"message over the batch bytes": {[]bus.Message{{Topic: topic, Value: make([]byte, 5000)}}, bus.ErrMessageTooLarge},
		"chunk over the batch bytes":   {[]bus.Message{{Topic: topic, Value: make([]byte, 3000)}, {Topic: topic, Value: make([]byte, 3000)}}, bus.ErrMessageTooLarge},
	} {
		if err := to.PublishTo(ctx, topic, 0, tc.msgs...); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if err := to.PublishTo(ctx, topic, 0, bus.Message{Topic: "other", Value: []byte("x")}); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("a message of another topic: %v, want an error naming it", err)
	}
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-group"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sctx, stop := context.WithCancel(ctx)
	var got []string
	err = sub.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		if m.Partition != 2 {
			t.Errorf("%s on partition %d, want 2", m.Key, m.Partition)
		}
		if got = append(got, string(m.Value)); len(got) == len(chunk) {
			stop()
		}
		return nil
	})
	if err != nil || len(got) != len(chunk) {
		t.Fatalf("read %d of %d: %v", len(got), len(chunk), err)
	}
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("partition 2 holds %v, want v0…v19 in order", got)
		}
	}
}
