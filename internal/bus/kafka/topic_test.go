package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// testTopic is a fresh topic on the test broker, with the Bus that made it (opts with the
// broker filled in) and a publisher, all closed when the test ends.
type testTopic struct {
	name    string
	brokers []string
	bus     *kafka.Bus
	pub     bus.Publisher
	parts   int
}

func newTestTopic(t testing.TB, ctx context.Context, prefix string, partitions int, opts kafka.Options) *testTopic {
	t.Helper()
	brokers := testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	tt := &testTopic{name: "bustest." + prefix + "." + hex.EncodeToString(suffix[:]), brokers: brokers, parts: partitions}
	tt.bus = tt.newBus(t, opts)
	if err := tt.bus.CreateTopic(ctx, bus.TopicSpec{Name: tt.name, Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	p, err := tt.bus.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	tt.pub = p
	return tt
}

// newBus is another connection to the topic's broker (a second group member with its
// own commit count).
func (tt *testTopic) newBus(t testing.TB, opts kafka.Options) *kafka.Bus {
	t.Helper()
	opts.Brokers = tt.brokers
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	b, err := kafka.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func (tt *testTopic) subscriber(t testing.TB, b *kafka.Bus, group string) bus.ConcurrentSubscriber {
	t.Helper()
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: tt.name, Group: group})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(bus.ConcurrentSubscriber)
}

// publishSeq publishes n messages to each of the topic's partitions, valued 0…n-1 per
// partition and padded to valueBytes.
func (tt *testTopic) publishSeq(t testing.TB, ctx context.Context, n int, valueBytes int) {
	t.Helper()
	for p := range tt.parts {
		tt.publishTo(t, ctx, p, n, valueBytes)
	}
}

// publishTo publishes n messages to partition p, valued 0…n-1 and padded to valueBytes.
func (tt *testTopic) publishTo(t testing.TB, ctx context.Context, p, n int, valueBytes int) {
	t.Helper()
	key := []byte(keyFor(p, tt.parts))
	var msgs []bus.Message
	for i := range n {
		v := []byte(strconv.Itoa(i))
		if len(v) < valueBytes {
			v = append(v, make([]byte, valueBytes-len(v))...)
			v[len(strconv.Itoa(i))] = ' '
		}
		msgs = append(msgs, bus.Message{Topic: tt.name, Key: key, Value: v})
	}
	for len(msgs) > 0 {
		k := min(len(msgs), 1000)
		if err := tt.pub.Publish(ctx, msgs[:k]...); err != nil {
			t.Fatal(err)
		}
		msgs = msgs[k:]
	}
}

// committed is the group's committed position per partition, as another client sees it
// (-1 for a partition never committed); t is a test or, in a wait, one look.
func (tt *testTopic) committed(t require.TestingT, ctx context.Context, group string) map[int]int64 {
	parts := make([]int, tt.parts)
	for i := range parts {
		parts[i] = i
	}
	c := &kafkago.Client{Addr: kafkago.TCP(tt.brokers...), Timeout: 10 * time.Second}
	resp, err := c.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{tt.name: parts}})
	if err == nil {
		err = resp.Error
	}
	require.NoError(t, err, "fetch the committed offsets of %s", group)
	out := map[int]int64{}
	for _, po := range resp.Topics[tt.name] {
		require.NoError(t, po.Error, "fetch the committed offset of %s partition %d", group, po.Partition)
		out[po.Partition] = po.CommittedOffset
	}
	return out
}

// keyFor returns a key that the publisher's balancer (Murmur2, as the Java client's)
// puts on partition p of n.
func keyFor(p, n int) string {
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	for i := 0; ; i++ {
		k := "key-" + strconv.Itoa(i)
		if (&kafkago.Murmur2Balancer{}).Balance(kafkago.Message{Key: []byte(k)}, parts...) == p {
			return k
		}
	}
}

// seq is the sequence number publishSeq gave a message.
func seq(t testing.TB, m bus.Message) int {
	v := m.Value
	for i, c := range v {
		if c == ' ' {
			v = v[:i]
			break
		}
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		t.Errorf("message %q at partition %d offset %d is not from publishSeq", m.Value, m.Partition, m.Offset)
	}
	return n
}
