package alarm

import (
	"regexp"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// TestAlarmTopicDeletedIntegration: a `binlake alarm` process on the real Kafka whose
// metrics topic is deleted (an outside trial did it with one kafka-go DeleteTopics call)
// says once that the bus delivers nothing and holds nodata, and once, when the topic is
// created again and batches flow, that the bus answers again: no pair every few seconds
// while the topic is missing (the trial saw 14 pairs in a minute, and kafka-go's
// `Problem getting partitions during startup` 10,680 times, a quarter of a core).
func TestAlarmTopicDeletedIntegration(t *testing.T) {
	r := newProcessRig(t, "alarmdel", 3*time.Minute)
	ctx := r.ctx
	proc := startAlarmProc(t, "alarm-del", r.cfg, shardPolicies)
	waitMembers(t, ctx, r.kc, r.group, 1)
	nodes, _ := shardNodes(4, metric.TopicPartitions, 0)
	agents := startFleet(t, ctx, r.pub, r.topic, nodes, nil)
	watch(3 * time.Second) // read and caught up
	agents.stop()          // the agents' writes would fail: they create it again (their own test)

	gone := regexp.MustCompile(`the bus delivers nothing`)
	back := regexp.MustCompile(`the bus answers again`)
	count := func(re *regexp.Regexp) int { return len(re.FindAllString(proc.Output(), -1)) }
	gone0, back0 := count(gone), count(back)
	brokers := testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	admin := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 30 * time.Second, Transport: &kafkago.Transport{}}
	resp, err := admin.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: []string{r.topic}})
	require.NoError(t, err)
	require.NoError(t, resp.Errors[r.topic])
	watch(20 * time.Second) // the trial's flaps came every 2-4 s
	missing := proc.Output()
	t.Logf("in the 20 s the topic was missing: %d lines 'the bus delivers nothing', %d 'the bus answers again'", count(gone)-gone0, count(back)-back0)
	require.LessOrEqual(t, count(gone)-gone0, 1, "'the bus delivers nothing' while the topic was missing")
	require.Zero(t, count(back)-back0, "'the bus answers again' while the topic was missing")
	require.LessOrEqual(t, strings.Count(missing, "is missing (deleted?)"), 1, "warnings that the topic is missing")
	require.Contains(t, missing, "is missing (deleted?)", "no warning that the topic is missing")

	b, err := kafka.New(kafka.Options{Brokers: brokers, Logger: quiet})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.CreateTopic(ctx, bus.TopicSpec{Name: r.topic, Partitions: metric.TopicPartitions}))
	pub, err := b.Publisher()
	require.NoError(t, err)
	defer pub.Close()
	startFleet(t, ctx, pub, r.topic, nodes, nil)
	proc.WaitOutput(t, regexp.MustCompile(`the topic is back`), waitLimit)
	if count(gone)-gone0 == 1 { // held: it says so once it caught up on the new topic
		require.Eventually(t, func() bool { return count(back)-back0 == 1 }, waitLimit, waitTick, "'the bus answers again' once the topic is back")
	}
	watch(3 * time.Second)
	t.Logf("in all: %d lines 'the bus delivers nothing', %d 'the bus answers again'", count(gone)-gone0, count(back)-back0)
	require.Equal(t, count(gone)-gone0, count(back)-back0, "lines that the bus delivers nothing and that it answers again, in all")
	require.LessOrEqual(t, count(gone)-gone0, 1)
	require.NoError(t, proc.Exited())
}
