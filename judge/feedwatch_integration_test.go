package judge

import (
	"context"
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/api"
)

// TestPlacementThroughItsBrokersOutageIntegration: a judge fed through Kafka whose broker
// is killed keeps answering placements from the nodes live when the bus last answered,
// well past their staleness (3 intervals of 1 s), and says in /readyz since when its feed
// is stalled; before, every node went stale and every placement was refused.
func TestPlacementThroughItsBrokersOutageIntegration(t *testing.T) {
	t.Parallel() // waits on a broker of its own
	broker := testenv.StartKafkaBroker(t)
	ctx := testenv.Context(t)
	b, err := kafka.New(kafka.Options{Brokers: []string{broker.Addr()}, ClientID: "judge-feed-test", Logger: quiet, WriteTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.CreateTopic(ctx, bus.TopicSpec{Name: metric.Topic, Partitions: metric.TopicPartitions}))
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "binlake-judge-feed-test", StartAt: bus.StartLast})
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	base, j := readyJudge(t, Options{Store: openStore(t), Subscriber: sub, Algorithm: "leastload", Logger: testenv.Logger(t)})

	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	nodes := []string{"wave-a", "wave-b"}
	// Batches every 200 ms, declared at 1 s intervals: a node is stale 3 s after its last.
	deadline := time.Now().Add(time.Minute)
	for len(j.Incremental().NodeIDs()) < len(nodes) || !j.feedStalledSince().IsZero() {
		require.True(t, time.Now().Before(deadline), "the judge never saw every node through the bus")
		for _, n := range nodes {
			bt := load(n, time.Now(), 20, 30)
			bt.IntervalS = 1
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			require.NoError(t, pub.Publish(pctx, bus.Message{Topic: metric.Topic, Key: []byte(n), Value: encode(t, bt)}))
			cancel()
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = j.Place(api.PlacementRequest{Instance: "before", DryRun: true})
	require.NoError(t, err, "a placement with the feed flowing")

	broker.Stop(t, syscall.SIGKILL)
	// Past the nodes' staleness (3 s) and the stall's detection (3 s), with room.
	for j.feedStalledSince().IsZero() {
		require.True(t, time.Now().Before(deadline.Add(time.Minute)), "the judge never saw its feed stall")
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // the nodes' last batches are now well past 3 intervals: the point of the test
	ans, err := j.Place(api.PlacementRequest{Instance: "during", DryRun: true})
	require.NoError(t, err, "a placement while the judge's own broker is down")
	require.Contains(t, nodes, ans.Node)

	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var rd readiness
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rd))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotNil(t, rd.FeedStalledSince, "/readyz says since when the feed is stalled")
}
