package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/agent/collector/host"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// TestAgentRecreatesDeletedTopicIntegration: the metrics topic deleted while the agent
// runs (an outside trial did it with one kafka-go DeleteTopics call) is created again by
// the agent's sink, with the partitions it created it with, and the batches collected
// meanwhile, buffered while the writes failed, are delivered to it: nothing dropped and
// no restart. Before, the agent logged `sink failing; buffering` once and buffered
// until it was restarted, since it created the topic only at its start.
func TestAgentRecreatesDeletedTopicIntegration(t *testing.T) {
	brokers := testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	node := fmt.Sprintf("agent-del-%d", time.Now().UnixNano())
	topic := "binlake.metrics.del." + node[len("agent-del-"):]
	cfg := DefaultConfig()
	cfg.Node = node
	cfg.Interval = config.Duration(200 * time.Millisecond)
	cfg.HTTP.Listen = MetricsListenOff
	cfg.Sink.Kafka.Brokers = brokers
	cfg.Sink.Kafka.Topic = topic
	cfg.Collectors = Collectors{}
	cfg.Collectors.Set("host", host.DefaultConfig())

	// The moment the sink finds the topic missing: batches acknowledged before it may
	// have gone to the old topic, as the broker deletes a topic some time after
	// DeleteTopics returns (three did once, and the count came out short).
	var a *Agent
	var missingAt atomic.Int64 // Delivered then, plus one
	log := slog.New(noticeHandler{Handler: testenv.Logger(t).Handler(), msg: "a write found the topic missing", seen: func() {
		missingAt.CompareAndSwap(0, int64(a.Stats().Delivered)+1)
	}})
	b, err := kafka.New(kafka.Options{Brokers: brokers, Logger: log})
	require.NoError(t, err)
	defer b.Close()
	a, err = New(Options{Config: cfg, Sink: NewBusSink(b, BusSinkOptions{Topic: topic, Partitions: 2, Replication: 1, Logger: log}), Logger: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	var stopErr error
	stopped := false
	stop := func() error { // once: the test stops the agent to count, or a failure does
		if !stopped {
			stopped = true
			cancel()
			stopErr = <-errc
		}
		return stopErr
	}
	defer func() {
		require.NoError(t, stop())
		require.NoError(t, a.Close())
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			require.True(t, time.Now().Before(deadline), "%s: not within 60 s: %+v", what, a.Stats())
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("the first batches delivered", func() bool { return a.Stats().Delivered >= 3 })

	admin := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 30 * time.Second}
	resp, err := admin.DeleteTopics(context.Background(), &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
	require.NoError(t, err)
	require.NoError(t, resp.Errors[topic])
	deletedAt := time.Now()
	waitFor("the sink to find the topic missing", func() bool { return missingAt.Load() != 0 })
	// A batch may be on its way to the old topic as it goes: counted from the next one.
	before := uint64(missingAt.Load())

	// Ten batches (two seconds of collection) on the topic the agent created again.
	waitFor("batches delivered after the deletion", func() bool { return a.Stats().Delivered >= before+10 })
	t.Logf("delivering again %s after the deletion: %+v", time.Since(deletedAt).Round(time.Millisecond), a.Stats())
	// Let what is buffered drain, then stop, so that the count is final.
	waitFor("the buffer drained", func() bool { return a.Stats().Pending == 0 })
	require.NoError(t, stop())
	st := a.Stats()
	require.Zero(t, st.Dropped, "batches dropped")
	require.Zero(t, st.Rejected, "batches rejected")

	// A client of its own: admin's metadata cache still has the topic deleted.
	fresh := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 30 * time.Second, Transport: &kafkago.Transport{}}
	md, err := fresh.Metadata(context.Background(), &kafkago.MetadataRequest{Topics: []string{topic}})
	require.NoError(t, err)
	require.Len(t, md.Topics, 1)
	require.NoError(t, md.Topics[0].Error)
	require.Len(t, md.Topics[0].Partitions, 2, "the topic created again has other partitions than the sink's")

	// Every batch delivered from the one after the deletion on is in the new topic.
	got := 0
	var last time.Time
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	err = b.Read(rctx, bus.ReadOptions{Topic: topic}, func(m bus.Message) error {
		batch, err := metric.Decode(m.Value)
		if err != nil {
			return err
		}
		if batch.Node != node {
			return fmt.Errorf("a batch of node %q", batch.Node)
		}
		if batch.TS.Before(last) {
			return fmt.Errorf("batch of %s after one of %s: out of order", batch.TS, last)
		}
		last = batch.TS
		got++
		return nil
	})
	require.NoError(t, err)
	want := int(st.Delivered - before)
	require.GreaterOrEqual(t, got, want, "the recreated topic holds %d batches; the agent delivered %d after the deletion", got, want)
	t.Logf("the recreated topic holds %d batches; %d delivered after the deletion (%d send errors)", got, want, st.SendErrors)
}

// noticeHandler calls seen when a record whose message starts with msg is logged.
type noticeHandler struct {
	slog.Handler
	msg  string
	seen func()
}

func (h noticeHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		h.seen()
	}
	return h.Handler.Handle(ctx, r)
}

func (h noticeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return noticeHandler{Handler: h.Handler.WithAttrs(as), msg: h.msg, seen: h.seen}
}

func (h noticeHandler) WithGroup(name string) slog.Handler {
	return noticeHandler{Handler: h.Handler.WithGroup(name), msg: h.msg, seen: h.seen}
}
