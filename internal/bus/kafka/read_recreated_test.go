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

// TestReadFollowsTopicRecreatedIntegration: a following Read (`binlake tail -f`) of a
// topic deleted and created again goes on with the new topic's messages, from its first
// offset, saying so once per partition; while the topic is missing it retries without a
// warning per fetch. Before, the recreated topic answered the old offsets with Offset
// Out Of Range, which ended tail with an error (and the wait logged a line every 500 ms
// per partition).
func TestReadFollowsTopicRecreatedIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const parts, n, m = 2, 5, 3
	rec := newRecords(testLogger(t).Handler())
	opts := kafka.Options{Logger: slog.New(rec)}
	tt := newTestTopic(t, ctx, "readrecreated", parts, opts)
	b := tt.newBus(t, opts)

	var mu sync.Mutex
	var got []bus.Message
	handled := func() []bus.Message {
		mu.Lock()
		defer mu.Unlock()
		return append([]bus.Message(nil), got...)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Read(rctx, bus.ReadOptions{Topic: tt.name, From: bus.From{Kind: bus.FromOldest}, Follow: true}, func(msg bus.Message) error {
			mu.Lock()
			got = append(got, msg)
			mu.Unlock()
			return nil
		})
	}()
	tt.publishSeq(t, ctx, n, 0)
	waitFor(t, "the first messages read", time.Minute, func() bool { return len(handled()) == parts*n })

	deleteTopic(t, ctx, tt.brokers, tt.name)
	deletedAt := time.Now()
	time.Sleep(3 * time.Second) // missing for a while: the readers retry meanwhile
	c := &kafkago.Client{Addr: kafkago.TCP(tt.brokers...), Timeout: 10 * time.Second}
	waitFor(t, "the topic created again", 10*time.Second, func() bool {
		resp, err := c.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{
			{Topic: tt.name, NumPartitions: parts, ReplicationFactor: 1}}})
		return err == nil && resp.Errors[tt.name] == nil
	})
	tt.publishSeq(t, ctx, m, 0)
	waitFor(t, "the new topic's messages read", time.Minute, func() bool { return len(handled()) >= parts*(n+m) })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Read ended with %v, want nil (stopped by its caller)", err)
	}

	after := handled()[parts*n:]
	seen := map[int][]int64{}
	for _, msg := range after {
		seen[msg.Partition] = append(seen[msg.Partition], msg.Offset)
	}
	for p := range parts {
		if want := []int64{0, 1, 2}; len(seen[p]) != m || seen[p][0] != 0 || seen[p][m-1] != m-1 {
			t.Errorf("partition %d: offsets read after the topic came back %v, want %v", p, seen[p], want)
		}
	}
	if len(after) != parts*m {
		t.Errorf("read %d messages after the topic came back, want %d", len(after), parts*m)
	}
	if w := rec.count(slog.LevelWarn, "the partition ends before the offset being read", deletedAt); w != parts {
		t.Errorf("%d warnings that a partition ends before the offset read, want one per partition (%d)", w, parts)
	}
	// 3 s missing at a 500 ms backoff is ~7 fetches a partition: the 1st, 2nd and 4th warn.
	if w := rec.count(slog.LevelWarn, "fetch failed, retrying", deletedAt); w > 4*parts {
		t.Errorf("%d warnings of failed fetches while the topic was missing, want at most %d", w, 4*parts)
	}
}
