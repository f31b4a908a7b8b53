package wiring

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestHTTPConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   HTTPConfig
		want string // error substring; "" for none
		addr string
	}{
		{"default", HTTPConfig{}, "", "127.0.0.1:1"},
		{"kept", HTTPConfig{Listen: ":9"}, "", ":9"},
		{"no port", HTTPConfig{Listen: "8090"}, `http.listen "8090": want host:port`, ""},
		{"both tokens", HTTPConfig{Token: "a", TokenFile: "f"}, "http: set token or token_file, not both", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("127.0.0.1:1")
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.addr, tc.in.Listen)
		})
	}
}

func TestBusConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   BusConfig
		want string
		out  BusConfig
	}{
		{"defaults need brokers", BusConfig{}, "bus.brokers: at least one host:port", BusConfig{}},
		{"kafka defaults", BusConfig{Brokers: []string{"b:1"}}, "",
			BusConfig{Kind: BusKafka, Brokers: []string{"b:1"}, Topic: metric.Topic, Partitions: metric.TopicPartitions, Group: "g", Start: StartNewest}},
		{"none", BusConfig{Kind: BusNone, Group: "mine", Topic: "t"}, "", BusConfig{Kind: BusNone, Group: "mine", Topic: "t", Partitions: metric.TopicPartitions, Start: StartNewest}},
		{"partitions kept", BusConfig{Kind: BusNone, Partitions: 6}, "", BusConfig{Kind: BusNone, Topic: metric.Topic, Partitions: 6, Group: "g", Start: StartNewest}},
		{"bad kind", BusConfig{Kind: "rabbit"}, `bus.kind "rabbit": want kafka or none`, BusConfig{}},
		{"negative partitions", BusConfig{Kind: BusNone, Partitions: -1}, "bus.partitions -1 is negative", BusConfig{}},
		{"start kept", BusConfig{Kind: BusNone, Start: StartOldest}, "",
			BusConfig{Kind: BusNone, Topic: metric.Topic, Partitions: metric.TopicPartitions, Group: "g", Start: StartOldest}},
		{"bad start", BusConfig{Kind: BusNone, Start: "earliest"}, `bus.start "earliest": want oldest or newest`, BusConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("g", StartNewest)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.out, tc.in)
		})
	}
}

func TestCoordConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   CoordConfig
		want string
		out  CoordConfig
	}{
		{"default single", CoordConfig{}, "", CoordConfig{Kind: CoordSingle, Path: "d/c.json"}},
		{"zk needs servers", CoordConfig{Kind: CoordZK}, "coordinator.servers: at least one ZooKeeper host:port", CoordConfig{}},
		{"zk", CoordConfig{Kind: CoordZK, Servers: []string{"z:1"}}, "", CoordConfig{Kind: CoordZK, Servers: []string{"z:1"}}},
		{"bad kind", CoordConfig{Kind: "etcd"}, `coordinator.kind "etcd": want single or zk`, CoordConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("d/c.json")
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.out, tc.in)
		})
	}
}

func TestSubscribeNone(t *testing.T) {
	sub, closeFn, desc, err := BusConfig{Kind: BusNone}.Subscribe(context.Background(), "c", quiet)
	require.NoError(t, err)
	require.Nil(t, sub)
	require.Equal(t, "none", desc)
	closeFn()
}

func TestOpenSingleCoordinator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "coord.json")
	cc := CoordConfig{}
	require.NoError(t, cc.Validate(path))
	c, desc, err := cc.Open(context.Background(), quiet)
	require.NoError(t, err)
	require.Equal(t, "single "+path, desc)
	_, err = c.Put(context.Background(), "k", []byte("v"), coord.AnyVersion)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.FileExists(t, path)
}

func TestOpenZKCoordinatorIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.ZooKeeper)
	cc := CoordConfig{Kind: CoordZK, Servers: []string{addr}, Root: fmt.Sprintf("/wiring-test-%d", time.Now().UnixNano()),
		SessionTimeout: 0}
	require.NoError(t, cc.Validate(""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, desc, err := cc.Open(ctx, quiet)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "zk "+addr, desc)
	_, err = c.Put(ctx, "k", []byte("v"), coord.AnyVersion)
	require.NoError(t, err)
}

func TestSubscribeKafkaIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	topic := fmt.Sprintf("wiring-test-%d", time.Now().UnixNano())
	b := BusConfig{Brokers: []string{addr}, Topic: topic}
	require.NoError(t, b.Validate("wiring-test", StartNewest))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub, closeFn, desc, err := b.Subscribe(ctx, "wiring-test", quiet)
	require.NoError(t, err)
	defer closeFn()
	require.Equal(t, fmt.Sprintf("kafka %s topic %s group wiring-test (a new group starts at the newest message)", addr, topic), desc)

	// The topic exists now: a message published to it reaches the subscription.
	k, err := kafka.New(kafka.Options{Brokers: []string{addr}, Logger: quiet})
	require.NoError(t, err)
	defer k.Close()
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
