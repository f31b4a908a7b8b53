//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/bus/kafka/kafkatest"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestSubscribeNone(t *testing.T) {
	sub, closeFn, desc, err := Subscribe(context.Background(), config.Bus{Kind: config.BusNone}, "c", quiet)
	require.NoError(t, err)
	require.Nil(t, sub)
	require.Equal(t, "none", desc)
	closeFn()
}

func TestOpenSingleCoordinator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "coord.json")
	cc := config.Coordinator{}
	require.NoError(t, cc.Validate(path))
	c, desc, err := Open(context.Background(), cc, quiet)
	require.NoError(t, err)
	require.Equal(t, "single "+path, desc)
	_, err = c.Put(context.Background(), "k", []byte("v"), coord.AnyVersion)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.FileExists(t, path)
}

func TestOpenZKCoordinatorIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.ZooKeeper)
	cc := config.Coordinator{Kind: config.CoordZK, Servers: []string{addr}, Root: fmt.Sprintf("/wiring-test-%d", time.Now().UnixNano()),
		SessionTimeout: 0}
	require.NoError(t, cc.Validate(""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, desc, err := Open(ctx, cc, quiet)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "zk "+addr+" root "+cc.Root, desc, "the servers and the root")
	_, err = c.Put(ctx, "k", []byte("v"), coord.AnyVersion)
	require.NoError(t, err)
}

func TestSubscribeKafkaIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	topic := fmt.Sprintf("wiring-test-%d", time.Now().UnixNano())
	b := config.Bus{Kafka: config.Kafka{Brokers: []string{addr}}, Topic: topic}
	require.NoError(t, b.Validate("wiring-test", config.StartNewest))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub, closeFn, desc, err := Subscribe(ctx, b, "wiring-test", quiet)
	require.NoError(t, err)
	defer closeFn()
	require.Equal(t, fmt.Sprintf("kafka %s topic %s group wiring-test (a new group starts at the newest message)", addr, topic), desc)

	// The topic exists now: a message published to it reaches the subscription.
	k := kafkatest.Open(t, kafka.Options{})
	pub, err := k.Publisher()
	require.NoError(t, err)
	defer pub.Close()
	got := make(chan string, 1)
	go sub.Subscribe(ctx, func(_ context.Context, m bus.Message) error {
		select {
		case got <- string(m.Value):
		default:
		}
		return nil
	})
	for {
		require.NoError(t, pub.Publish(ctx, bus.Message{Topic: topic, Key: []byte("k"), Value: []byte("hello")}))
		select {
		case v := <-got:
			require.Equal(t, "hello", v)
			return
		case <-time.After(2 * time.Second): // StartLast: the subscription may join after the first message
		case <-ctx.Done():
			t.Fatal("no message delivered")
		}
	}
}

// With no broker to dial, the judge's and the alarm's subscription waits for one, saying
// so at each attempt, until it is stopped (it exited, and systemd gave up after five
// restarts); a stop while it waits is a stop (context.Canceled), not a failure.
func TestSubscribeWaitsForABroker(t *testing.T) {
	var logs testenv.SyncBuffer
	b := config.Bus{Kafka: config.Kafka{Brokers: []string{"127.0.0.1:1"}}, Topic: "binlake.metrics"}
	require.NoError(t, b.Validate("wait-test", config.StartNewest))
	kopts, err := BusOptions(b, "wait-test", slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, _, err := SubscribeWith(ctx, b, kopts)
		done <- err
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "attempt=2") }, 20*time.Second, 10*time.Millisecond,
		"the second attempt, said")
	select {
	case err := <-done:
		t.Fatalf("returned while no broker could be dialled: %v", err)
	default:
	}
	require.Contains(t, logs.String(), `msg="bus: no Kafka broker reachable yet; waiting for one" brokers=127.0.0.1:1 attempt=1`)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}
