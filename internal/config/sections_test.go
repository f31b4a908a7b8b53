package config

import (
	"path/filepath"
	"strings"
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
		{"no port", HTTP{Listen: "8090"}, `field "http.listen": "8090": want host:port, e.g. 127.0.0.1:8090 (port 0 picks a free one)`, ""},
		{"missing token file", HTTP{TokenFile: "/nonexistent/t"}, `field "http.token_file": read secret: open /nonexistent/t: no such file or directory`, ""},
		{"bad token variable", HTTP{TokenEnv: "NOT-A-NAME"}, `field "http.token_env": "NOT-A-NAME" is not an environment variable name`, ""},
		{"tls cert without key", HTTP{TLS: HTTPTLS{CertFile: "c.pem"}}, `field "http.tls.key_file": required with http.tls.cert_file`, ""},
		{"tls key without cert", HTTP{TLS: HTTPTLS{KeyFile: "k.pem"}}, `field "http.tls.cert_file": required with http.tls.key_file`, ""},
		{"tls missing cert", HTTP{TLS: HTTPTLS{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}},
			`field "http.tls.cert_file": "/nonexistent/c.pem": no such file or directory`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("127.0.0.1:1", "ROLE_TOKEN")
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.addr, tc.in.Listen)
			require.Equal(t, "ROLE_TOKEN", tc.in.TokenEnv, "the role's variable by default")
		})
	}
}

func TestBusSectionValidate(t *testing.T) {
	broker := Kafka{Brokers: []string{"b:1"}}
	defaults := Kafka{Brokers: []string{"b:1"}, Partitions: metric.TopicPartitions, Replication: 1}
	noKafka := Kafka{Partitions: metric.TopicPartitions, Replication: 1}
	for _, tc := range []struct {
		name string
		in   Bus
		want string
		out  Bus
	}{
		{"defaults need brokers", Bus{}, `field "bus.brokers": required: at least one host:port (or bus.kind: none to run without the bus)`, Bus{}},
		{"kafka defaults", Bus{Kafka: broker}, "",
			Bus{Kind: BusKafka, Kafka: defaults, Topic: metric.Topic, Group: "g", Start: StartNewest}},
		{"none", Bus{Kind: BusNone, Group: "mine", Topic: "t"}, "", Bus{Kind: BusNone, Kafka: noKafka, Group: "mine", Topic: "t", Start: StartNewest}},
		{"none does not check kafka keys", Bus{Kind: BusNone, Kafka: Kafka{Brokers: []string{"nohost"}, Partitions: -1}}, "",
			Bus{Kind: BusNone, Kafka: Kafka{Brokers: []string{"nohost"}, Partitions: -1, Replication: 1}, Topic: metric.Topic, Group: "g", Start: StartNewest}},
		{"partitions and replication kept", Bus{Kafka: Kafka{Brokers: []string{"b:1"}, Partitions: 6, Replication: 3}}, "",
			Bus{Kind: BusKafka, Kafka: Kafka{Brokers: []string{"b:1"}, Partitions: 6, Replication: 3}, Topic: metric.Topic, Group: "g", Start: StartNewest}},
		{"bad kind", Bus{Kind: "rabbit"}, `field "bus.kind": "rabbit": want kafka or none`, Bus{}},
		// A topic Kafka refuses is said by --check, not at the first subscribe.
		{"bad topic", Bus{Kafka: broker, Topic: ".."}, `field "bus.topic": topic name ".." is not allowed`, Bus{}},
		{"none does not check the topic", Bus{Kind: BusNone, Topic: "a b"}, "", Bus{Kind: BusNone, Kafka: noKafka, Topic: "a b", Group: "g", Start: StartNewest}},
		{"negative partitions", Bus{Kafka: Kafka{Brokers: []string{"b:1"}, Partitions: -1}}, `field "bus.partitions": -1: want at least 1`, Bus{}},
		{"broker without port", Bus{Kafka: Kafka{Brokers: []string{"b:1", "b"}}}, `field "bus.brokers[1]": "b": want host:port, e.g. kafka-1:9092`, Bus{}},
		{"start kept", Bus{Kind: BusNone, Start: StartOldest}, "",
			Bus{Kind: BusNone, Kafka: noKafka, Topic: metric.Topic, Group: "g", Start: StartOldest}},
		{"bad start", Bus{Kind: BusNone, Start: "earliest"}, `field "bus.start": "earliest": want oldest or newest`, Bus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("g", StartNewest)
			if tc.want != "" {
				require.EqualError(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.out, tc.in)
		})
	}
}

// TestKafkaSectionValidate: every problem is reported, each under the caller's prefix.
func TestKafkaSectionValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Kafka
		want []string // the joined errors, in order; nil for none
	}{
		{"valid", Kafka{Brokers: []string{"a:1", "[::1]:9092"}, Partitions: 1, Replication: 1}, nil},
		{"no brokers", Kafka{Partitions: 1, Replication: 1}, []string{`field "sink.kafka.brokers": required: at least one host:port`}},
		{"broker without port", Kafka{Brokers: []string{"a:1", "b"}, Partitions: 1, Replication: 1},
			[]string{`field "sink.kafka.brokers[1]": "b": want host:port, e.g. kafka-1:9092`}},
		{"everything wrong", Kafka{Brokers: []string{"x", "y:1:2"}, Partitions: 0, Replication: -1}, []string{
			`field "sink.kafka.brokers[0]": "x": want host:port, e.g. kafka-1:9092`,
			`field "sink.kafka.brokers[1]": "y:1:2": want host:port, e.g. kafka-1:9092`,
			`field "sink.kafka.partitions": 0: want at least 1`,
			`field "sink.kafka.replication": -1: want at least 1`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("sink.kafka")
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, strings.Join(tc.want, "\n"))
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
		{"zk needs servers", Coordinator{Kind: CoordZK}, `field "coordinator.servers": required: at least one ZooKeeper host:port`, Coordinator{}},
		{"zk", Coordinator{Kind: CoordZK, Servers: []string{"z:1"}}, "", Coordinator{Kind: CoordZK, Servers: []string{"z:1"}}},
		{"bad kind", Coordinator{Kind: "etcd"}, `field "coordinator.kind": "etcd": want single or zk`, Coordinator{}},
		// What the ZooKeeper client and the single coordinator would refuse at start.
		{"zk server port out of range", Coordinator{Kind: CoordZK, Servers: []string{"z:1", "z:218100"}},
			`field "coordinator.servers[1]": "z:218100": port "218100": want a number from 1 to 65535`, Coordinator{}},
		{"zk server without port", Coordinator{Kind: CoordZK, Servers: []string{"z"}}, `field "coordinator.servers[0]": "z": want host:port`, Coordinator{}},
		{"zk negative session timeout", Coordinator{Kind: CoordZK, Servers: []string{"z:1"}, SessionTimeout: -1},
			`field "coordinator.session_timeout": -1ns: want 0 or more`, Coordinator{}},
		{"single path is a folder", Coordinator{Path: "/"}, `field "coordinator.path": / is a folder: want a file path`, Coordinator{}},
		{"single with auth", Coordinator{Auth: CoordAuth{Username: "u"}}, `field "coordinator.auth": only for kind zk`, Coordinator{}},
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

// TestSectionsReportEveryProblem: each shared section reports every value it refuses,
// not the first: an operator fixes a config in one pass. Each case fails on two or more
// independent keys; a value that depends on a refused one is not reported as well.
func TestSectionsReportEveryProblem(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name  string
		check func() error
		want  []string // the joined errors, in order
	}{
		{"http", func() error {
			h := HTTP{Listen: "8090", TokenEnv: "1X", TLS: HTTPTLS{CertFile: "c.pem"}}
			return h.Validate("127.0.0.1:1", "ROLE_TOKEN")
		}, []string{
			`field "http.listen": "8090": want host:port, e.g. 127.0.0.1:8090 (port 0 picks a free one)`,
			`field "http.token_env": "1X" is not an environment variable name`,
			`field "http.tls.key_file": required with http.tls.cert_file`,
		}},
		{"bus kind and start", func() error {
			b := Bus{Kind: "rabbit", Start: "latest"}
			return b.Validate("g", StartNewest)
		}, []string{
			`field "bus.kind": "rabbit": want kafka or none`, // the Kafka keys are not checked: whether they count is not known
			`field "bus.start": "latest": want oldest or newest`,
		}},
		{"bus without brokers", func() error {
			b := Bus{Kafka: Kafka{Replication: -1}, Start: "latest"}
			return b.Validate("g", StartNewest)
		}, []string{
			`field "bus.brokers": required: at least one host:port (or bus.kind: none to run without the bus)`,
			`field "bus.replication": -1: want at least 1`,
			`field "bus.start": "latest": want oldest or newest`,
		}},
		{"single coordinator", func() error {
			c := Coordinator{Path: "/", Auth: CoordAuth{Username: "u"}}
			return c.Validate("d/c.json")
		}, []string{
			`field "coordinator.path": / is a folder: want a file path`,
			`field "coordinator.auth": only for kind zk`,
		}},
		{"secret", func() error { return SecretRef{File: missing, Env: "1X"}.Check("http.token") }, []string{
			`field "http.token_env": "1X" is not an environment variable name`,
			`field "http.token_file": read secret: open ` + missing + `: no such file or directory`,
		}},
		{"http tls files", func() error {
			return HTTPTLS{CertFile: missing + ".crt", KeyFile: missing + ".key"}.Validate("http.tls")
		}, []string{
			`field "http.tls.cert_file": "` + missing + `.crt": no such file or directory`,
			`field "http.tls.key_file": "` + missing + `.key": no such file or directory`,
		}},
		{"client tls", func() error {
			return (&ClientTLS{CAFile: missing, KeyFile: "k.pem"}).Check("bus.tls")
		}, []string{
			`field "bus.tls.cert_file": required with key_file`,
			`field "bus.tls.ca_file": open ` + missing + `: no such file or directory`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.EqualError(t, tc.check(), strings.Join(tc.want, "\n"))
		})
	}
}
