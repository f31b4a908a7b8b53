package wave

import (
	"errors"
	"net"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// Config is wave.yaml (see deploy/wave.example.yaml).
type Config struct {
	// Node is this wave's id, unique among the waves.
	Node string `yaml:"node"`
	// HTTP.Listen serves /metrics, /healthz and /status.
	HTTP struct {
		Listen string `yaml:"listen"`
	} `yaml:"http"`
	// AdvertiseAddr is the HTTP address other hosts reach this wave at; http.listen when empty.
	AdvertiseAddr string             `yaml:"advertise_addr"`
	Log           config.Log         `yaml:"log"`
	Coordinator   config.Coordinator `yaml:"coordinator"`
	Sink          SinkConfig         `yaml:"sink"`
	Pipeline      PipelineConfig     `yaml:"pipeline"`
	Balancer      BalancerConfig     `yaml:"balancer"`
}

// RenamedKeys are the keys of older wave.yaml files, now the same as every role's.
func (*Config) RenamedKeys() map[string]string {
	return map[string]string{"http_addr": "http.listen", "coordinator.type": "coordinator.kind", "sink.type": "sink.kind",
		"pipeline.publish_backoff_max": "pipeline.publish_max_backoff", "pipeline.reconnect_backoff_max": "pipeline.reconnect_max_backoff",
		"balancer.judge_ca_file": "balancer.tls.ca_file"}
}

// RetiredKeys answers an inline secret with where it goes instead, as every role's
// config does (config.InlineSecret).
func (*Config) RetiredKeys() map[string]string {
	return map[string]string{"sink.kafka.sasl.password": config.InlineSecret("password"),
		"coordinator.auth.password": config.InlineSecret("password"), "balancer.judge_token": config.InlineSecret("judge_token")}
}

// Sink kinds.
const (
	SinkKafka  = "kafka"
	SinkFile   = "file"
	SinkStdout = "stdout"
)

// SinkConfig chooses where row messages go.
type SinkConfig struct {
	Kind  string          `yaml:"kind"`
	Kafka KafkaSinkConfig `yaml:"kafka"`
	File  FileSinkConfig  `yaml:"file"`
}

// KafkaSinkConfig is the Kafka sink: the keys every Kafka section has (partitions and
// replication are those of the row topics the wave creates) and the producer's tuning.
type KafkaSinkConfig struct {
	config.Kafka `yaml:",inline"`
	// MaxMessageBytes is the largest row message; it sets the topics' max.message.bytes
	// (on the topics the wave creates, and raised to it on existing ones that take less)
	// and the producer's batch limit.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// BatchSize is the most messages per partition in one produce request.
	BatchSize int `yaml:"batch_size"`
	// Linger is how long a partition's request that is not full waits for more rows.
	// The wave hands the producer whole chunks, so a short linger only adds latency. 1 ms.
	Linger config.Duration `yaml:"linger"`
	// Compression is the codec of produced batches: none, gzip, snappy, lz4 or zstd.
	Compression string `yaml:"compression"`
	// WriteTimeout bounds one produce request, which is tried once (the wave retries
	// itself, checking its leadership between attempts). Empty: a quarter of
	// coordinator.session_timeout with ZooKeeper, 10 s with the single coordinator. With
	// ZooKeeper it must be at most a quarter of the session timeout; see KafkaWriteTimeout.
	WriteTimeout config.Duration `yaml:"write_timeout"`
}

// FileSinkConfig is the JSON-lines file sink.
type FileSinkConfig struct {
	Path string `yaml:"path"`
	Sync bool   `yaml:"sync"`
}

// PipelineConfig tunes every instance's pipeline.
type PipelineConfig struct {
	BatchRows           int             `yaml:"batch_rows"`
	QueueItems          int             `yaml:"queue_items"`
	PublishInFlight     int             `yaml:"publish_in_flight"`
	CommitInterval      config.Duration `yaml:"commit_interval"`
	PublishMaxBackoff   config.Duration `yaml:"publish_max_backoff"`
	ReconnectMaxBackoff config.Duration `yaml:"reconnect_max_backoff"`
	Heartbeat           config.Duration `yaml:"heartbeat"`
	PollInterval        config.Duration `yaml:"poll_interval"`
	// XAHoldBytes bounds the row messages an instance holds for its prepared XA
	// transactions until their XA COMMIT.
	XAHoldBytes int `yaml:"xa_hold_bytes"`
}

// DefaultConfig returns the defaults that a file overrides.
func DefaultConfig() Config {
	c := Config{
		Log:         config.Log{Level: "info", Format: "text"},
		Coordinator: config.Coordinator{Kind: config.CoordZK, Root: "/binlake", SessionTimeout: config.Duration(10 * time.Second)},
		Sink: SinkConfig{Kind: SinkKafka, Kafka: KafkaSinkConfig{Kafka: config.Kafka{Partitions: 3, Replication: 1},
			MaxMessageBytes: 1 << 20, BatchSize: 1000, Linger: config.Duration(time.Millisecond), Compression: "none"}},
		Pipeline: PipelineConfig{BatchRows: 5000, QueueItems: 256, PublishInFlight: DefaultPublishInFlight,
			CommitInterval: config.Duration(500 * time.Millisecond), PublishMaxBackoff: config.Duration(5 * time.Second),
			ReconnectMaxBackoff: config.Duration(10 * time.Second), Heartbeat: config.Duration(2 * time.Second),
			PollInterval: config.Duration(2 * time.Second), XAHoldBytes: capture.DefaultXAHoldBytes},
	}
	c.HTTP.Listen = config.WaveListen
	c.Balancer = DefaultBalancerConfig()
	return c
}

// Load reads wave.yaml strictly over the defaults and validates it; errors name the
// file, line and field.
func Load(path string) (Config, error) {
	cfg := DefaultConfig()
	if err := config.Load(path, &cfg); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks the config and names every bad field, joined (config.Locate puts
// them in the file's order); a value that can only be checked against another (the
// write timeout against the session timeout, say) is left until that one is right.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad(field, format, args...))
	}
	if !cluster.IDPattern.MatchString(c.Node) {
		bad("node", "%q: %s", c.Node, config.IDRule)
	}
	errs = append(errs, c.Log.Validate())
	if err := config.CheckListen(c.HTTP.Listen); err != nil {
		bad("http.listen", "%w", err)
	}
	if c.AdvertiseAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdvertiseAddr); err != nil {
			bad("advertise_addr", "%q: want host:port, e.g. wave-1:8091 (the address other hosts reach http.listen at)", c.AdvertiseAddr)
		} else if err := config.CheckDial(c.AdvertiseAddr); err != nil {
			bad("advertise_addr", "%w (the address other hosts reach http.listen at)", err)
		}
	}
	// The wave needs a session timeout (its write timeout is a share of it): 0 is
	// refused here, and a negative one only here, not again in the section's words
	// ("want 0 or more", which the section checks with 0 in its place).
	st := c.Coordinator.SessionTimeout
	sessionOK := c.Coordinator.Kind != config.CoordZK || st > 0
	if !sessionOK {
		bad("coordinator.session_timeout", "%s: want more than 0", st)
		c.Coordinator.SessionTimeout = 0
	}
	// No default path: the wave's coordinator is ZooKeeper unless the file says single.
	errs = append(errs, c.Coordinator.Validate(""))
	c.Coordinator.SessionTimeout = st
	switch c.Sink.Kind {
	case SinkKafka:
		errs = append(errs, c.validateKafka(sessionOK))
	case SinkFile:
		if c.Sink.File.Path == "" {
			bad("sink.file.path", "required for the file sink")
		} else if err := config.CheckFilePath(c.Sink.File.Path); err != nil {
			bad("sink.file.path", "%w", err)
		}
	case SinkStdout:
	default:
		bad("sink.kind", "%q: want kafka, file or stdout", c.Sink.Kind)
	}
	p := c.Pipeline
	for _, f := range []struct {
		name string
		v    int
	}{{"batch_rows", p.BatchRows}, {"queue_items", p.QueueItems}, {"publish_in_flight", p.PublishInFlight}, {"xa_hold_bytes", p.XAHoldBytes}} {
		if f.v < 1 {
			bad("pipeline."+f.name, "%d: want at least 1", f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    config.Duration
	}{{"commit_interval", p.CommitInterval}, {"publish_max_backoff", p.PublishMaxBackoff},
		{"reconnect_max_backoff", p.ReconnectMaxBackoff}, {"heartbeat", p.Heartbeat}, {"poll_interval", p.PollInterval}} {
		if f.v <= 0 {
			bad("pipeline."+f.name, "%s: want more than 0", f.v)
		}
	}
	errs = append(errs, c.Balancer.Validate())
	return errors.Join(errs...)
}

// validateKafka checks sink.kafka, every problem joined; the write timeout against the
// ZooKeeper session timeout only when that one is valid (sessionOK).
func (c *Config) validateKafka(sessionOK bool) error {
	k := c.Sink.Kafka
	errs := []error{k.Kafka.Validate("sink.kafka")}
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad("sink.kafka."+field, format, args...))
	}
	if k.MaxMessageBytes < 1024 {
		bad("max_message_bytes", "%d: want at least 1024", k.MaxMessageBytes)
	}
	if k.BatchSize < 1 {
		bad("batch_size", "%d: want at least 1", k.BatchSize)
	}
	if k.Linger <= 0 {
		bad("linger", "%s: want more than 0", k.Linger)
	}
	switch k.Compression {
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		bad("compression", "%q: want none, gzip, snappy, lz4 or zstd", k.Compression)
	}
	if k.WriteTimeout < 0 {
		bad("write_timeout", "%s: want 0 or more", k.WriteTimeout)
	} else if c.Coordinator.Kind == config.CoordZK && sessionOK {
		if limit := c.Coordinator.SessionTimeout.D() / 4; c.KafkaWriteTimeout() > limit {
			bad("write_timeout", "%s: must be at most a quarter of field "+
				"\"coordinator.session_timeout\" %s (%s), or a wave that lost its session could still "+
				"be writing when another wave takes over", k.WriteTimeout, c.Coordinator.SessionTimeout, limit)
		}
	}
	return errors.Join(errs...)
}

// KafkaWriteTimeout is the effective bound on one produce request of the wave's Kafka
// writer: sink.kafka.write_timeout, or when unset a quarter of the ZooKeeper session
// timeout (10 s with the single coordinator). The writer tries a request once.
//
// Why a quarter: it bounds how long a wave that lost its leadership can still write.
// The ZooKeeper client declares the connection lost (and with it every leadership: the
// wave cancels publishing and makes no new attempt) when it heard nothing for 2/3 of
// the session timeout S; the server expires the session, and only then lets another
// wave win, S after it last heard from this one: at least about S/3 (less a round trip)
// after Lost. The last produce request begun before Lost, and a batch it left queued
// (sent after at most the writer's 5 ms batch timeout), ends by Lost + 5 ms + T; with
// T <= S/4 that is before the successor can lead, with a margin for the round trip. It
// is an application-level bound: bytes already handed to the kernel before the cut may
// still be retransmitted later, which no client timeout can recall.
func (c *Config) KafkaWriteTimeout() time.Duration {
	if t := c.Sink.Kafka.WriteTimeout.D(); t > 0 {
		return t
	}
	if c.Coordinator.Kind == config.CoordZK && c.Coordinator.SessionTimeout > 0 {
		return min(10*time.Second, c.Coordinator.SessionTimeout.D()/4)
	}
	return 10 * time.Second
}

// PipelineOptions returns the pipeline settings as Options fields.
func (c *Config) PipelineOptions() PipelineOptions {
	p := c.Pipeline
	o := PipelineOptions{BatchRows: p.BatchRows, QueueItems: p.QueueItems, PublishInFlight: p.PublishInFlight, CommitInterval: p.CommitInterval.D(),
		PublishBackoffMax: p.PublishMaxBackoff.D(), ReconnectBackoffMax: p.ReconnectMaxBackoff.D(), Heartbeat: p.Heartbeat.D(),
		XAHoldBytes: p.XAHoldBytes}
	if c.Sink.Kind == SinkKafka {
		// The Kafka bus is built with batch_size and max_message_bytes as its writer's
		// batch size and bytes (cmd/binlake): one produce request per partition per call.
		o.PublishChunkMessages = c.Sink.Kafka.BatchSize
		o.PublishChunkBytes = int64(c.Sink.Kafka.MaxMessageBytes)
		o.PublishLinger = c.Sink.Kafka.Linger.D()
	}
	return o
}
