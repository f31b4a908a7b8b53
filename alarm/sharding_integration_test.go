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
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// TestShardedAlarmsPageOnce: two alarm processes in one consumer group on the real Kafka
// share a shared notification log in ZooKeeper; one stops mid-way and starts again (two
// rebalances). Every violating node pages exactly once, no healthy node pages nodata, and
// every violation's resolution is delivered (issue 18, item 9).
func TestShardedAlarmsPageOnce(t *testing.T) {
	zaddr := testenv.Require(t, testenv.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topic, group, root := shardNames("alarmshard")
	newBus := func() *kafka.Bus {
		return kafkatest.Open(t, kafka.Options{SessionTimeout: 6 * time.Second})
	}
	pb := newBus()
	require.NoError(t, pb.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: metric.TopicPartitions}))
	rcv := newReceiver(t)
	pols := parsePolicies(t, shardPolicies)
	start := func() (stop func()) {
		c, err := zk.New(ctx, zk.Options{Servers: testenv.HostPorts(zaddr), Root: root})
		require.NoError(t, err)
		sub, err := newBus().Subscriber(bus.SubscribeOptions{Topic: topic, Group: group})
		require.NoError(t, err)
		actx, acancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- Run(actx, Options{Policies: pols, Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
				Subscriber: sub, Coordinator: c, EvalInterval: 100 * time.Millisecond, PositionInterval: 500 * time.Millisecond, Logger: quiet})
		}()
		return func() { acancel(); require.NoError(t, <-done); sub.Close(); c.Close() }
	}
	stopA, stopB := start(), start()
	defer func() { stopB() }()

	pub, err := pb.Publisher()
	require.NoError(t, err)
	nodes, violating := shardNodes(12, metric.TopicPartitions, 4)
	agents := startFleet(t, ctx, pub, topic, nodes, violating)
	rcv.waitPages(t, "first pages", func(pg pages) bool { return len(pg.firing) == len(violating) })

	// A stops (its partitions move to B), runs again (they move back), then the
	// violations stop. Between the steps: enough agent ticks for each rebalance.
	stopA()
	watch(12 * time.Second)
	stopA = start()
	watch(12 * time.Second)
	agents.heal()
	rcv.waitPages(t, "resolutions", func(pg pages) bool { return len(pg.resolved) == len(violating) })
	watch(12 * time.Second)
	// The pages as the observation ends: once the agents stop, their nodes are silent,
	// and nodata pages for them are due 3 intervals later.
	pg := rcv.pages()
	agents.stop()
	stopA()
	requirePagedOnce(t, pg, violating, agents)
}
