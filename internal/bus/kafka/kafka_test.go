package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/bustest"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// testLogger is the shared test logger (testenv.Logger).
var testLogger = testenv.Logger

// TestKafkaBusIntegration runs the conformance suite against the test broker: serial
// handlers with the default commit interval, and per-partition handlers (the suite's
// handlers are safe for concurrent calls) with a short one. Both must keep the
// at-least-once contract.
func TestKafkaBusIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	for _, tc := range []struct {
		name       string
		commit     time.Duration
		concurrent bool
	}{{"serial", 0, false}, {"concurrent", 50 * time.Millisecond, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bustest.Run(t, func(t *testing.T) bus.Bus {
				b, err := kafka.New(kafka.Options{
					Brokers:        testenv.HostPorts(addr),
					ClientID:       "binlake-bustest",
					CommitInterval: tc.commit,
					Logger:         testLogger(t),
				})
				if err != nil {
					t.Fatalf("kafka.New: %v", err)
				}
				if tc.concurrent {
					return concurrentBus{b}
				}
				return b
			})
		})
	}
}

// concurrentBus hands out subscribers whose Subscribe is SubscribeConcurrent.
type concurrentBus struct{ bus.Bus }

func (b concurrentBus) Subscriber(opts bus.SubscribeOptions) (bus.Subscriber, error) {
	s, err := b.Bus.Subscriber(opts)
	if err != nil {
		return nil, err
	}
	return concurrentSubscriber{s.(bus.ConcurrentSubscriber)}, nil
}

type concurrentSubscriber struct{ bus.ConcurrentSubscriber }

func (s concurrentSubscriber) Subscribe(ctx context.Context, h bus.Handler) error {
	return s.SubscribeConcurrent(ctx, h)
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kafka.Options
		want string
	}{
		{"no brokers", kafka.Options{}, "no brokers"},
		{"broker without port", kafka.Options{Brokers: []string{"localhost"}}, `broker "localhost"`},
		{"negative batch size", kafka.Options{Brokers: []string{"h:1"}, BatchSize: -1}, "batch size -1"},
		{"negative timeout", kafka.Options{Brokers: []string{"h:1"}, SessionTimeout: -time.Second}, "session timeout"},
		{"heartbeat not below session", kafka.Options{Brokers: []string{"h:1"}, HeartbeatInterval: 10 * time.Second}, "heartbeat interval"},
		{"negative max attempts", kafka.Options{Brokers: []string{"h:1"}, MaxAttempts: -1}, "max attempts -1"},
		{"negative write timeout", kafka.Options{Brokers: []string{"h:1"}, WriteTimeout: -time.Second}, "write timeout"},
		{"negative commit interval", kafka.Options{Brokers: []string{"h:1"}, CommitInterval: -time.Second}, "commit interval"},
		{"backoff max below min", kafka.Options{Brokers: []string{"h:1"}, ReadBackoffMin: time.Second, ReadBackoffMax: time.Millisecond}, "read backoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kafka.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
			}
		})
	}
}

// TestPublishBatchBytesIntegration checks the client-side limit: a message larger than
// the writer's BatchBytes fails with ErrMessageTooLarge before it reaches the broker.
func TestPublishBatchBytesIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), BatchBytes: 1 << 10, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	topic := fmt.Sprintf("bustest.batchbytes.%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	err = p.Publish(ctx, bus.Message{Topic: topic, Value: make([]byte, 2<<10)})
	if !errors.Is(err, bus.ErrMessageTooLarge) {
		t.Fatalf("Publish(2 KiB) with BatchBytes 1 KiB = %v, want ErrMessageTooLarge", err)
	}
	if err := p.Publish(ctx, bus.Message{Topic: topic, Value: make([]byte, 100)}); err != nil {
		t.Fatalf("Publish(100 B): %v", err)
	}
}

// TestTopicFromAnotherClientIntegration publishes to a topic that a second Bus created
// after the first Bus had cached the cluster metadata.
func TestTopicFromAnotherClientIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newBus := func() *kafka.Bus {
		b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), MetadataTTL: time.Minute, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	first, second := newBus(), newBus()
	base := fmt.Sprintf("bustest.othercreator.%d", time.Now().UnixNano())
	if err := first.CreateTopic(ctx, bus.TopicSpec{Name: base + ".a"}); err != nil {
		t.Fatal(err) // first's metadata cache is now filled, valid for a minute
	}
	if err := second.CreateTopic(ctx, bus.TopicSpec{Name: base + ".b"}); err != nil {
		t.Fatal(err)
	}
	p, err := first.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, bus.Message{Topic: base + ".b", Value: []byte("v")}); err != nil {
		t.Fatalf("Publish to a topic created by another client: %v", err)
	}
}

// BenchmarkKafkaPublish measures synchronous publish throughput (acks=all) by batch size.
func BenchmarkKafkaPublish(b *testing.B) {
	addr := os.Getenv(testenv.Kafka.Env)
	if addr == "" {
		b.Skipf("%s not set", testenv.Kafka.Env)
	}
	ctx := context.Background()
	kb, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), BatchSize: 1000, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer kb.Close()
	topic := fmt.Sprintf("bustest.bench.%d", time.Now().UnixNano())
	if err := kb.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 4}); err != nil {
		b.Fatal(err)
	}
	p, err := kb.Publisher()
	if err != nil {
		b.Fatal(err)
	}
	for _, batch := range []int{1, 10, 100, 1000} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			msgs := make([]bus.Message, batch)
			for i := range msgs {
				msgs[i] = bus.Message{Topic: topic, Key: []byte("node-" + strconv.Itoa(i%16)), Value: make([]byte, 256)}
			}
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

// TestPublishCanceledWritesNothingIntegration: a Publish whose context has ended sends
// nothing, not even later. kafka-go queues a batch before it looks at the context and
// sends it whatever the caller does; a wave that lost its leadership must not write.
func TestPublishCanceledWritesNothingIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), MaxAttempts: 1, WriteTimeout: 2 * time.Second,
		Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	topic := fmt.Sprintf("bustest.canceled.%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic}); err != nil {
		t.Fatal(err) // the metadata cache now knows the topic: the writer would queue at once
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	gone, stop := context.WithCancel(ctx)
	stop()
	if err := p.Publish(gone, bus.Message{Topic: topic, Value: []byte("stale")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a canceled context = %v, want context.Canceled", err)
	}
	if err := p.Publish(ctx, bus.Message{Topic: topic, Value: []byte("live")}); err != nil {
		t.Fatal(err)
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	var got []string
	err = s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		got = append(got, string(m.Value))
		scancel() // the first message decides
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "live" {
		t.Fatalf("first message on the topic = %q, want only the live one", got)
	}
}

// TestExistingTopicMaxMessageBytesIntegration: CreateTopic raises an existing topic's
// max.message.bytes to the spec's when it is lower (a topic made before the limit was
// raised), as it sets it on the topics it creates; and a message the broker refuses as
// too large for its topic is an ErrMessageTooLarge naming its size and the topic's limit.
func TestExistingTopicMaxMessageBytesIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const small, large = 1 << 20, 4 << 20
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), BatchBytes: large, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	topic := fmt.Sprintf("bustest.maxbytes.%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1, MaxMessageBytes: small}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.TopicMaxMessageBytes(ctx, topic); err != nil || n != small {
		t.Fatalf("max.message.bytes of the new topic: %d, %v; want %d", n, err, small)
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := bus.Message{Topic: topic, Value: make([]byte, 2<<20)}
	for name, publish := range map[string]func() error{
		"Publish":   func() error { return p.Publish(ctx, big) },
		"PublishTo": func() error { return p.(bus.PartitionPublisher).PublishTo(ctx, topic, 0, big) },
	} {
		err := publish()
		if !errors.Is(err, bus.ErrMessageTooLarge) || !strings.Contains(err.Error(), "the largest is 2097152 bytes") ||
			!strings.Contains(err.Error(), "max.message.bytes is 1048576") {
			t.Errorf("%s of 2 MiB to a topic of 1 MiB: %v; want ErrMessageTooLarge naming the size and the topic's limit", name, err)
		}
	}

	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1, MaxMessageBytes: large}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.TopicMaxMessageBytes(ctx, topic); err != nil || n != large {
		t.Fatalf("max.message.bytes after CreateTopic with a larger limit: %d, %v; want it raised to %d", n, err, large)
	}
	if err := p.Publish(ctx, big); err != nil {
		t.Fatalf("Publish of 2 MiB once the topic takes 4 MiB: %v", err)
	}
	// Never lowered.
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1, MaxMessageBytes: small}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.TopicMaxMessageBytes(ctx, topic); err != nil || n != large {
		t.Fatalf("max.message.bytes after CreateTopic with a smaller limit: %d, %v; want it kept at %d", n, err, large)
	}
}

// A broker given with a user (and password), by a flag or a caller that did not check
// it, is refused before anything dials or logs it, its password shown as ***.
func TestNewRefusesBrokerCredentials(t *testing.T) {
	for _, b := range []string{"kafka:Hunter2K@127.0.0.1:9092", "kafka:Hunter2K@127.0.0.1", "Hunter2K@127.0.0.1:9092"} {
		_, err := kafka.New(kafka.Options{Brokers: []string{b}})
		if err == nil {
			t.Fatalf("%s: accepted", b)
		}
		if !strings.Contains(err.Error(), "is not host:port (without a user or password)") {
			t.Errorf("%s: %v", b, err)
		}
		if strings.Contains(err.Error(), "Hunter2K") && strings.Contains(b, ":Hunter2K") {
			t.Errorf("%s: the password is shown: %v", b, err)
		}
	}
}
