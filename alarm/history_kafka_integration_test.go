package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/history"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/bus/kafka/kafkatest"
	"github.com/binlake/binlake/internal/metric"
)

// A restarted alarm on the real Kafka reads its partitions' retained history back before
// its committed position: the first point after the restart is evaluated on the five
// minutes before it, which the previous process handled and committed, not on itself.
func TestTimeWindowsSurviveARestartOnKafka(t *testing.T) {
	b := kafkatest.Open(t, kafka.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := kafkatest.Topic(t, ctx, b, metric.Topic+".windows", 3)
	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	publish := func(ts time.Time, v float64) {
		data, err := metric.Encode(batch("wave-1", ts, lag(v)))
		require.NoError(t, err)
		require.NoError(t, pub.Publish(ctx, bus.Message{Topic: topic, Key: []byte("wave-1"), Value: data}))
	}
	// run starts an alarm process of the topic's group, with a notification log of its
	// own (so that the second pages afresh), until stop.
	run := func() (*Alarm, *receiver, func()) {
		sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-alarm", StartAt: bus.StartFirst})
		require.NoError(t, err)
		rcv := newReceiver(t)
		c := openCoord(t, t.TempDir())
		a, err := New(Options{
			Policies: parsePolicies(t, lagWindowPolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
			Subscriber: sub, Coordinator: c, EvalInterval: 100 * time.Millisecond, GroupWait: time.Millisecond,
			History: history.Bus{Reader: b, Topic: topic}, Logger: quiet,
		})
		require.NoError(t, err)
		rctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(rctx) }()
		return a, rcv, func() {
			stop()
			require.NoError(t, <-done)
			sub.Close()
			c.Close()
		}
	}

	t0 := time.Now().UTC().Truncate(time.Second)
	for s := 240; s >= 10; s -= 10 {
		publish(t0.Add(-time.Duration(s)*time.Second), 40)
	}
	first, rcv, stop := run()
	require.InDelta(t, 40, firstPageValue(t, rcv), 1e-9, "the first process's page: its first point alone")
	require.Eventually(t, func() bool { return testutil.ToFloat64(first.m.batches) == 24 }, time.Minute, 50*time.Millisecond)
	require.Zero(t, testutil.ToFloat64(first.m.historyBatches), "nothing before the group's first message")
	stop() // commits the 24

	second, rcv, stop := run()
	defer stop()
	publish(t0, 100)
	require.InDelta(t, (24*40+100)/25.0, firstPageValue(t, rcv), 1e-9, "the restarted process's page: the window before it and its point")
	require.Equal(t, 1.0, testutil.ToFloat64(second.m.batches), "the restart read from the committed position")
	require.Equal(t, 24.0, testutil.ToFloat64(second.m.historyBatches))
}
