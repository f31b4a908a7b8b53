package kafka_test

import (
	"context"
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
