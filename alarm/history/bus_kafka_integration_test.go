package history

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/bus/kafka/kafkatest"
	"github.com/binlake/binlake/internal/metric"
)

// Bus reads the batches of the first message's partition published before it and within
// the lookback before its publication (by the messages' times, not the batches': a
// node's clock may be off), skipping (and counting) what is not a batch, on the real
// Kafka.
func TestBusReadsThePartitionBeforeTheFirstMessage(t *testing.T) {
	b := kafkatest.Open(t, kafka.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := kafkatest.Topic(t, ctx, b, metric.Topic+".history", 2)
	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	t0 := time.Now().UTC().Truncate(time.Second)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	enc := func(node string, s int) []byte {
		data, err := metric.Encode(metric.Batch{Node: node, TS: at(s), IntervalS: 10, Points: []metric.Point{{Name: "cpu.util", Value: float64(s)}}})
		require.NoError(t, err)
		return data
	}
	// The first published ten minutes ago; the others now, one dated ahead of the first.
	msgs := []bus.Message{{Topic: topic, Key: []byte("n"), Value: enc("n", -100), Time: t0.Add(-10 * time.Minute)}}
	for _, v := range [][]byte{enc("n", -50), []byte("not a batch"), enc("n", -40), enc("n", -20), enc("n", -30), enc("n", -10)} {
		msgs = append(msgs, bus.Message{Topic: topic, Key: []byte("n"), Value: v, Time: t0})
	}
	require.NoError(t, pub.Publish(ctx, msgs...))
	// The partition's messages as Kafka holds them: the 6th (-30) is the first.
	var held []bus.Message
	require.NoError(t, b.Read(ctx, bus.ReadOptions{Topic: topic}, func(m bus.Message) error {
		held = append(held, m)
		return nil
	}))
	require.Len(t, held, 7)
	first := held[5]

	var got []int
	skipped, err := Bus{Reader: b, Topic: topic}.ReadBack(ctx, first, 5*time.Minute, func(b metric.Batch) error {
		got = append(got, int(b.TS.Sub(t0).Seconds()))
		return nil
	})
	require.NoError(t, err)
	// -100 was published before the lookback; -20, dated after the first, was published
	// before it; -10 comes after the first.
	require.Equal(t, []int{-50, -40, -20}, got)
	require.Equal(t, 1, skipped)
}
