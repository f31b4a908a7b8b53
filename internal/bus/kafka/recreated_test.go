package kafka_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
)

// TestSubscriberReadsTopicRecreatedAtOnceIntegration: the metrics topic deleted and
// created again within a second (the agent does so with its next batch) is not seen
// missing by a running subscription: its partitions' readers stood at the old topic's
// offsets (the group's committed 20), which are past the new topic's end. kafka-go
// retried "Offset Out Of Range" until the new topic grew past them, so every message
// below was skipped. The subscriber reads such a partition from its start (Kafka's
// auto.offset.reset=earliest) and says so once per partition.
func TestSubscriberReadsTopicRecreatedAtOnceIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const parts, n, m = 2, 20, 3
	rec := newRecords(testLogger(t).Handler())
	opts := kafka.Options{Logger: slog.New(rec)}
	tt := newTestTopic(t, ctx, "recreated", parts, opts)
	b := tt.newBus(t, opts)
	group := "recreated-" + tt.name
	sub := tt.subscriber(t, b, group)

	type at struct {
		part   int
		offset int64
	}
	var mu sync.Mutex
	var got []at
	handled := func() []at {
		mu.Lock()
		defer mu.Unlock()
		return append([]at(nil), got...)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- sub.SubscribeConcurrent(sctx, func(_ context.Context, msg bus.Message) error {
			mu.Lock()
			got = append(got, at{msg.Partition, msg.Offset})
			mu.Unlock()
			return nil
		})
	}()
	defer func() { stop(); <-done }()

	tt.publishSeq(t, ctx, n, 0)
	waitFor(t, "the first messages committed", time.Minute, func() bool {
		c := tt.committed(t, ctx, group)
		for p := range parts {
			if c[p] != n {
				return false
			}
		}
		return true
	})
	before := len(handled())

	// Deleted and created again at once, as the agent does: the subscription's partition
	// watcher (every 5 s) does not see it missing.
	deleteTopic(t, ctx, tt.brokers, tt.name)
	recreatedAt := time.Now()
	// As soon as the broker takes it (TopicAlreadyExists while the deletion is under way).
	c := &kafkago.Client{Addr: kafkago.TCP(tt.brokers...), Timeout: 10 * time.Second}
	waitFor(t, "the topic created again", 10*time.Second, func() bool {
		resp, err := c.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{
			{Topic: tt.name, NumPartitions: parts, ReplicationFactor: 1}}})
		return err == nil && resp.Errors[tt.name] == nil
	})
	if err := tt.bus.CreateTopic(ctx, bus.TopicSpec{Name: tt.name, Partitions: parts}); err != nil {
		t.Fatal(err) // waits for the partitions' leaders
	}
	t.Logf("topic created again %s after it was deleted", time.Since(recreatedAt).Round(time.Millisecond))
	tt.publishSeq(t, ctx, m, 0)

	want := map[at]bool{}
	for p := range parts {
		for o := range int64(m) {
			want[at{p, o}] = true
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		after := handled()[before:]
		missing := 0
		seen := map[at]bool{}
		for _, a := range after {
			seen[a] = true
		}
		for w := range want {
			if !seen[w] {
				missing++
			}
		}
		if missing == 0 {
			t.Logf("the recreated topic's %d messages handled %s after it was deleted (%d deliveries)", len(want), time.Since(recreatedAt).Round(time.Millisecond), len(after))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the recreated topic's %d messages not handled within 15 s (handled after the deletion: %v)", missing, len(want), after)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := rec.count(slog.LevelWarn, "is missing", recreatedAt); n > 0 {
		t.Logf("the subscription saw the topic missing (created again too late for this test's case)")
	}
	if n := rec.count(slog.LevelWarn, "past the end", recreatedAt); n < 1 || n > parts {
		t.Errorf("%d warnings that an offset is past the end of the topic, want 1 to %d (one per partition)", n, parts)
	}
}
