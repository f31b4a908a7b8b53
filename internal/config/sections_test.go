package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

func TestHTTPSectionValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   HTTP
		want string // error substring; "" for none
		addr string
	}{
		{"default", HTTP{}, "", "127.0.0.1:1"},
		{"kept", HTTP{Listen: ":9"}, "", ":9"},
		{"no port", HTTP{Listen: "8090"}, `http.listen "8090": want host:port`, ""},
		{"both tokens", HTTP{Token: "a", TokenFile: "f"}, "http: set token or token_file, not both", ""},
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

func TestBusSectionValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Bus
		want string
		out  Bus
	}{
		{"defaults need brokers", Bus{}, "bus.brokers: at least one host:port", Bus{}},
		{"kafka defaults", Bus{Brokers: []string{"b:1"}}, "",
			Bus{Kind: BusKafka, Brokers: []string{"b:1"}, Topic: metric.Topic, Partitions: metric.TopicPartitions, Group: "g", Start: StartNewest}},
		{"none", Bus{Kind: BusNone, Group: "mine", Topic: "t"}, "", Bus{Kind: BusNone, Group: "mine", Topic: "t", Partitions: metric.TopicPartitions, Start: StartNewest}},
		{"partitions kept", Bus{Kind: BusNone, Partitions: 6}, "", Bus{Kind: BusNone, Topic: metric.Topic, Partitions: 6, Group: "g", Start: StartNewest}},
		{"bad kind", Bus{Kind: "rabbit"}, `bus.kind "rabbit": want kafka or none`, Bus{}},
		{"negative partitions", Bus{Kind: BusNone, Partitions: -1}, "bus.partitions -1 is negative", Bus{}},
		{"start kept", Bus{Kind: BusNone, Start: StartOldest}, "",
			Bus{Kind: BusNone, Topic: metric.Topic, Partitions: metric.TopicPartitions, Group: "g", Start: StartOldest}},
		{"bad start", Bus{Kind: BusNone, Start: "earliest"}, `bus.start "earliest": want oldest or newest`, Bus{}},
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

func TestCoordinatorSectionValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Coordinator
		want string
		out  Coordinator
	}{
		{"default single", Coordinator{}, "", Coordinator{Kind: CoordSingle, Path: "d/c.json"}},
		{"zk needs servers", Coordinator{Kind: CoordZK}, "coordinator.servers: at least one ZooKeeper host:port", Coordinator{}},
		{"zk", Coordinator{Kind: CoordZK, Servers: []string{"z:1"}}, "", Coordinator{Kind: CoordZK, Servers: []string{"z:1"}}},
		{"bad kind", Coordinator{Kind: "etcd"}, `coordinator.kind "etcd": want single or zk`, Coordinator{}},
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
