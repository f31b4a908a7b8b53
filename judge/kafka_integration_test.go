package judge

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/bus/kafka/kafkatest"
)

// TestJudgeKafkaIntegration runs a judge on the real Kafka in a group of its own that
// starts at the newest message (bus.start: newest): batches published by "agents" become
// visible in GET /v1/nodes and drive placement; a garbage message is skipped.
func TestJudgeKafkaIntegration(t *testing.T) {
	b := kafkatest.Open(t, kafka.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := kafkatest.Topic(t, ctx, b, "binlake.metrics.judgetest", 3)
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-judge", StartAt: bus.StartLast})
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	base, _ := readyJudge(t, Options{Store: openStore(t), Subscriber: sub, Algorithm: "leastload"})

	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	// The group joins asynchronously and starts at the newest offset, so publish until the
	// judge has seen both nodes and the garbage (three partitions: each message's own
	// partition may be consumed later than the others'), as agents do every tick.
	deadline := time.Now().Add(90 * time.Second)
	for {
		now := time.Now().UTC()
		require.NoError(t, pub.Publish(ctx,
			bus.Message{Topic: topic, Key: []byte("junk"), Value: []byte("{garbage")},
			bus.Message{Topic: topic, Key: []byte("wave-k1"), Value: encode(t, load("wave-k1", now, 75, 40))},
			bus.Message{Topic: topic, Key: []byte("wave-k2"), Value: encode(t, load("wave-k2", now, 25, 40))},
		))
		_, body := get(t, base+"/v1/nodes")
		_, m := get(t, base+"/metrics")
		if strings.Contains(body, `"node":"wave-k1"`) && strings.Contains(body, `"node":"wave-k2"`) &&
			countedGarbage.MatchString(m) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the judge did not see both nodes and count the garbage message through Kafka: %s", body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	code, body := post(t, base+"/v1/placement", `{"instance":"orders"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"node":"wave-k2"`)
	_, m := get(t, base+"/metrics")
	require.Regexp(t, countedGarbage, m)
	require.NotContains(t, m, `binlake_judge_subscribe_errors_total 1`)
}

// countedGarbage: the bus's decode errors counted (the series is exported at 0 from the start).
var countedGarbage = regexp.MustCompile(`binlake_judge_decode_errors_total\{source="bus"\} [1-9]`)
