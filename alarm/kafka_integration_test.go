package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/bus/kafka/kafkatest"
	"github.com/binlake/binlake/internal/metric"
)

// TestAlarmKafkaIntegration: a violating batch published to the metric topic on the real
// Kafka produces the webhook call, through the shared consumer group.
func TestAlarmKafkaIntegration(t *testing.T) {
	b := kafkatest.Open(t, kafka.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := kafkatest.Topic(t, ctx, b, metric.Topic+".alarmtest", 3)
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-alarm", StartAt: bus.StartFirst})
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	rcv := newReceiver(t)
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	startAlarm(t, Options{
		Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
		Subscriber: sub, Coordinator: c, EvalInterval: 100 * time.Millisecond, Logger: quiet,
	})
	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	now := time.Now().UTC()
	ok, err := metric.Encode(batch("wave-k1", now, cpu(20)))
	require.NoError(t, err)
	bad, err := metric.Encode(batch("wave-k2", now, cpu(99.5)))
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx,
		bus.Message{Topic: topic, Key: []byte("wave-k1"), Value: ok},
		bus.Message{Topic: topic, Key: []byte("wave-k2"), Value: bad},
	))
	p := rcv.wait(t, 1)
	require.Len(t, p, 1)
	require.Equal(t, "firing", p[0].Status)
	require.Len(t, p[0].Alerts, 1)
	a := p[0].Alerts[0]
	require.Equal(t, "wave-k2", a.Labels["node"])
	require.Equal(t, "cpu", a.Labels["alertname"])
	require.Equal(t, "P2", a.Labels["severity"])
	require.Equal(t, "wave-k2 at 99.5", a.Annotations["summary"])
}
