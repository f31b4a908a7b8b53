// Package kafkatest opens the Kafka bus of the test services for integration tests, so
// that each test says what it does with the broker rather than how it connects to it.
package kafkatest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// Open returns a bus on the test broker (testenv.Kafka: fails the test under CI=true when
// it is not set, skips it otherwise), closed when the test ends. opts.Brokers is filled in;
// a nil opts.Logger logs nothing.
func Open(t testing.TB, opts kafka.Options) *kafka.Bus {
	t.Helper()
	opts.Brokers = testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b, err := kafka.New(opts)
	if err != nil {
		t.Fatalf("kafka.New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Topic creates a topic of this run's own ("<prefix>-<nanoseconds>"): the broker is
// shared by every test and keeps its topics between runs.
func Topic(t testing.TB, ctx context.Context, b *kafka.Bus, prefix string, partitions int) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: name, Partitions: partitions}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}
