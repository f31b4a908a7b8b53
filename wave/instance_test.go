package wave

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
)

func writeFile(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "wave.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodConfig = `node: wave-1
http:
  listen: 127.0.0.1:8091
coordinator:
  kind: zk
  servers: [127.0.0.1:2181]
  session_timeout: 4s
sink:
  kind: kafka
  kafka:
    brokers: [127.0.0.1:9092]
pipeline:
  batch_rows: 1000
`

func TestLoadConfig(t *testing.T) {
	cfg, err := Load(writeFile(t, goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sink.Kafka.Partitions != 3 || cfg.Pipeline.BatchRows != 1000 || cfg.Coordinator.Root != "/binlake" {
		t.Errorf("defaults or values wrong: %+v", cfg)
	}
	if b := cfg.Balancer.Options(); b.Disabled || b.Auto || b.InFlight != 1 || b.FailoverGrace != 5*time.Second || b.Planner != nil {
		t.Errorf("balancer defaults: %+v, want enabled, manual, one move at a time, a 5 s grace, no judge", b)
	}
	cfg.Balancer.FailoverGrace = 0
	if g := cfg.Balancer.Options().FailoverGrace; g >= 0 {
		t.Errorf("failover_grace 0 gives %v, want a negative grace (none) for balancer.Options", g)
	}
	example, err := Load("../deploy/wave.example.yaml")
	if err != nil {
		t.Fatalf("the shipped example does not load: %v", err)
	}
	if example.Node == "" {
		t.Error("example has no node")
	}
}

// TestKafkaWriteTimeout: the wave's produce requests are bounded well below the ZooKeeper
// session timeout, derived when unset, as configured when set.
func TestKafkaWriteTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		want  time.Duration
		valid bool
	}{
		{"derived from the session", func(c *Config) {}, time.Second, true},
		{"configured", func(c *Config) { c.Sink.Kafka.WriteTimeout = config.Duration(500 * time.Millisecond) }, 500 * time.Millisecond, true},
		{"configured at the limit", func(c *Config) { c.Sink.Kafka.WriteTimeout = config.Duration(time.Second) }, time.Second, true},
		{"configured above the limit", func(c *Config) { c.Sink.Kafka.WriteTimeout = config.Duration(1001 * time.Millisecond) }, 1001 * time.Millisecond, false},
		{"long session, capped", func(c *Config) { c.Coordinator.SessionTimeout = config.Duration(time.Minute) }, 10 * time.Second, true},
		{"single coordinator", func(c *Config) {
			c.Coordinator = config.Coordinator{Kind: config.CoordSingle, Path: "/tmp/coord.json"}
			c.Sink.Kafka.WriteTimeout = config.Duration(30 * time.Second)
		}, 30 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(writeFile(t, goodConfig)) // session_timeout 4s
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&cfg)
			if got := cfg.KafkaWriteTimeout(); got != tc.want {
				t.Errorf("KafkaWriteTimeout() = %v, want %v", got, tc.want)
			}
			if err := cfg.Validate(); (err == nil) != tc.valid {
				t.Errorf("Validate() = %v, want valid=%v", err, tc.valid)
			}
		})
	}
}

// TestLoadConfigErrors: a bad wave.yaml gives an error naming the field.
func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown key", strings.Replace(goodConfig, "batch_rows", "batch_rowz", 1), "batch_rowz"},
		{"wrong type", strings.Replace(goodConfig, "batch_rows: 1000", "batch_rows: many", 1), "pipeline.batch_rows"},
		{"bad duration", strings.Replace(goodConfig, "4s", "4", 1), "coordinator.session_timeout"},
		{"no node", strings.Replace(goodConfig, "node: wave-1", "node: ''", 1), `"node"`},
		{"coordinator kind", strings.Replace(goodConfig, "kind: zk", "kind: etcd", 1), "coordinator.kind"},
		{"renamed coordinator.type", strings.Replace(goodConfig, "kind: zk", "type: zk", 1), `this key is now "coordinator.kind"`},
		{"renamed http_addr", strings.Replace(goodConfig, "http:\n  listen: 127.0.0.1:8091", "http_addr: 127.0.0.1:8091", 1), `this key is now "http.listen"`},
		{"no servers", strings.Replace(goodConfig, "servers: [127.0.0.1:2181]", "servers: []", 1), "coordinator.servers"},
		{"bad server", strings.Replace(goodConfig, "servers: [127.0.0.1:2181]", "servers: [zk]", 1), "coordinator.servers[0]"},
		{"sink kind", strings.Replace(goodConfig, "kind: kafka", "kind: s3", 1), "sink.kind"},
		{"renamed sink.type", strings.Replace(goodConfig, "kind: kafka", "type: kafka", 1), `this key is now "sink.kind"`},
		{"no brokers", strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]", "brokers: []", 1), "sink.kafka.brokers"},
		{"file path", strings.Replace(goodConfig, "kind: kafka", "kind: file", 1), "sink.file.path"},
		{"batch rows", strings.Replace(goodConfig, "batch_rows: 1000", "batch_rows: 0", 1), "pipeline.batch_rows"},
		{"in flight", strings.Replace(goodConfig, "batch_rows: 1000", "batch_rows: 1000\n  publish_in_flight: 0", 1), "pipeline.publish_in_flight"},
		{"compression", strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]", "brokers: [127.0.0.1:9092]\n    compression: brotli", 1), `"sink.kafka.compression": "brotli"`},
		{"linger", strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]", "brokers: [127.0.0.1:9092]\n    linger: 0s", 1), "sink.kafka.linger"},
		{"http listen", strings.Replace(goodConfig, "listen: 127.0.0.1:8091", "listen: nowhere", 1), "http.listen"},
		{"write timeout not below session", strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]",
			"brokers: [127.0.0.1:9092]\n    write_timeout: 2s", 1), `"sink.kafka.write_timeout": 2s: must be at most a quarter of field "coordinator.session_timeout" 4s`},
		{"negative write timeout", strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]",
			"brokers: [127.0.0.1:9092]\n    write_timeout: -1s", 1), "sink.kafka.write_timeout"},
		{"balancer judge", goodConfig + "balancer:\n  judge: judge:8080\n", `"balancer.judge": "judge:8080": want the judge's base URL`},
		{"balancer in flight", goodConfig + "balancer:\n  in_flight: 0\n", `"balancer.in_flight": 0`},
		{"balancer interval", goodConfig + "balancer:\n  interval: 0s\n", `"balancer.interval"`},
		{"balancer grace", goodConfig + "balancer:\n  failover_grace: -1s\n", `"balancer.failover_grace": -1s: want 0 or more`},
		{"balancer unknown key", goodConfig + "balancer:\n  band: 5\n", "balancer.band"},
		{"balancer judge CA", goodConfig + "balancer:\n  judge: https://judge:8090\n  tls: {ca_file: /nonexistent/ca.pem}\n", `"balancer.tls.ca_file": open /nonexistent/ca.pem`},
		{"balancer TLS over http", goodConfig + "balancer:\n  judge: http://judge:8090\n  tls: {}\n", `"balancer.tls": set, but the URL is not https://`},
		{"balancer judge token file", goodConfig + "balancer:\n  judge: http://judge:8090\n  judge_token_file: /nonexistent/t\n", `"balancer.judge_token_file": read secret: open /nonexistent/t`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %q", err, tc.want)
			}
		})
	}
}
