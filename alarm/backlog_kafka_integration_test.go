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

// TestAlarmBacklogKafkaIntegration: the metric topic on the real Kafka holds twelve
// minutes of batches sent while no alarm ran; an alarm that starts then reads them on
// their own time. wave-b1 violates a `for: 5m` policy from ten minutes ago to now: it
// pages as the backlog is read, dated from when `for` ran out (five minutes ago), not
// five minutes after the start. wave-b2 violated from twelve to four minutes ago: it is
// paged and resolved with that episode's start and end.
func TestAlarmBacklogKafkaIntegration(t *testing.T) {
	b := kafkatest.Open(t, kafka.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := kafkatest.Topic(t, ctx, b, metric.Topic+".alarmbacklog", 3)
	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	now := time.Now().UTC().Truncate(time.Second)
	m := func(n int) time.Time { return now.Add(time.Duration(n) * time.Minute) }
	var msgs []bus.Message
	for ts := m(-12); !ts.After(now); ts = ts.Add(10 * time.Second) {
		for node, bad := range map[string]bool{"wave-b1": !ts.Before(m(-10)), "wave-b2": ts.Before(m(-4))} {
			v := 10.0
			if bad {
				v = 95
			}
			enc, err := metric.Encode(batch(node, ts, cpu(v)))
			require.NoError(t, err)
			msgs = append(msgs, bus.Message{Topic: topic, Key: []byte(node), Value: enc})
		}
	}
	require.NoError(t, pub.Publish(ctx, msgs...))

	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-alarm", StartAt: bus.StartFirst})
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	rcv := newReceiver(t)
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	startAlarm(t, Options{
		Policies: parsePolicies(t, basePolicy+"    for: 5m\n"), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
		Subscriber: sub, Coordinator: c, EvalInterval: 100 * time.Millisecond, Logger: quiet,
	})

	type notice struct{ startsAt, endsAt time.Time }
	got := map[string]notice{}
	deadline := time.After(60 * time.Second)
	for {
		for _, p := range rcv.payloads() {
			for _, a := range p.Alerts {
				n := notice{startsAt: a.StartsAt.UTC()}
				if a.Status == notify.StatusResolved {
					n.endsAt = a.EndsAt.UTC()
				}
				got[a.Status+" "+a.Labels["node"]] = n
			}
		}
		if len(got) >= 3 {
			break
		}
		select {
		case <-rcv.seen:
		case <-deadline:
			t.Fatalf("within a minute of the start, the webhook got %v; want wave-b1 firing, wave-b2 firing and resolved", got)
		}
	}
	require.Equal(t, map[string]notice{
		"firing wave-b1":   {startsAt: m(-5)},
		"firing wave-b2":   {startsAt: m(-7)},
		"resolved wave-b2": {startsAt: m(-7), endsAt: m(-4)},
	}, got)
}
