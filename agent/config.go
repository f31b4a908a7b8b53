package agent

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
)

// Defaults of agent.yaml.
const (
	DefaultInterval      = 10 * time.Second
	DefaultBuffer        = 360 // an hour of batches at the default interval
	DefaultMetricsListen = "127.0.0.1:9108"
	// MetricsListenOff disables the agent's own /metrics.
	MetricsListenOff = "off"
	// TokenEnv is sink.http.token_env's default: the judge's token has one variable,
	// whichever role reads it.
	TokenEnv = config.JudgeTokenEnv
	// OldTokenEnv is the variable older agents read the judge's token from.
	OldTokenEnv = "BINLAKE_AGENT_TOKEN"
	maxBuffer   = 1_000_000
)

// Sink types.
const (
	SinkKafka = "kafka"
	SinkHTTP  = "http"
)

// Config is agent.yaml. deploy/agent.example.yaml documents every field.
type Config struct {
	// Node is the key of every batch: the wave's node id. Default: the host name.
	Node     string          `yaml:"node"`
	Interval config.Duration `yaml:"interval"`
	// Buffer is how many batches wait while the sink is down; past it the oldest go.
	Buffer int `yaml:"buffer"`
	// HTTP.Listen is where the agent serves its own /metrics and /healthz, or "off".
	HTTP struct {
		Listen string `yaml:"listen"`
	} `yaml:"http"`
	Log        config.Log `yaml:"log"`
	Sink       SinkConfig `yaml:"sink"`
	Collectors Collectors `yaml:"collectors"`
}

// RenamedKeys are the keys of older agent.yaml files, now the same as every role's.
func (*Config) RenamedKeys() map[string]string {
	return map[string]string{"metrics_listen": "http.listen", "sink.type": "sink.kind", "sink.http.ca_file": "sink.http.tls.ca_file"}
}

// RetiredKeys are the inline secrets older agent.yaml files could hold.
func (*Config) RetiredKeys() map[string]string {
	return map[string]string{"sink.http.token": config.InlineSecret("token"), "sink.kafka.sasl.password": config.InlineSecret("password")}
}

// SinkConfig chooses where batches go.
type SinkConfig struct {
	Kind  string          `yaml:"kind"`
	Kafka KafkaSinkConfig `yaml:"kafka"`
	HTTP  HTTPSinkConfig  `yaml:"http"`
}

// KafkaSinkConfig is the bus sink over Kafka: the keys every Kafka section has
// (partitions and replication are the metric topic's, if the agent creates it) and the
// topic.
type KafkaSinkConfig struct {
	config.Kafka `yaml:",inline"`
	Topic        string `yaml:"topic"`
}

// HTTPSinkConfig is the HTTP sink: POST to the judge's /v1/metrics.
type HTTPSinkConfig struct {
	URL string `yaml:"url"`
	// The judge's token, when it has one: from the variable TokenEnv names (default
	// BINLAKE_JUDGE_TOKEN) or the file TokenFile names.
	TokenFile string          `yaml:"token_file"`
	TokenEnv  string          `yaml:"token_env"`
	Timeout   config.Duration `yaml:"timeout"`
	// TLS, for an https URL: the CA of the judge's certificate when it is not one the
	// system trusts (the judge's http.tls with a private CA).
	TLS *config.ClientTLS `yaml:"tls"`
}

// Token is where the judge's token is read.
func (h HTTPSinkConfig) Token() config.SecretRef {
	return config.SecretRef{File: h.TokenFile, Env: h.TokenEnv}
}

// DefaultConfig returns the defaults: host collector only, Kafka sink on the local broker.
func DefaultConfig() Config {
	node, _ := os.Hostname()
	c := Config{
		Node:     node,
		Interval: config.Duration(DefaultInterval),
		Buffer:   DefaultBuffer,
		Log:      config.Log{Level: "info", Format: "text"},
		Sink: SinkConfig{
			Kind: SinkKafka,
			Kafka: KafkaSinkConfig{
				Kafka: config.Kafka{Brokers: []string{"127.0.0.1:9092"}, Partitions: metric.TopicPartitions, Replication: 1},
				Topic: metric.Topic,
			},
			HTTP: HTTPSinkConfig{Timeout: config.Duration(5 * time.Second)},
		},
	}
	c.HTTP.Listen = DefaultMetricsListen
	// Without a collectors section, the host collector runs with its defaults.
	if cfg, ok := (collectorRegistry{}).NewConfig("host"); ok {
		c.Collectors.Set("host", cfg)
	}
	return c
}

// Load reads agent.yaml strictly over the defaults and validates it.
func Load(path string) (Config, error) {
	c := DefaultConfig()
	if err := config.Load(path, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate implements config.Validator; every error names its field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad(field, format, args...))
	}
	errs = append(errs, c.Log.Validate())
	if c.Node == "" { // written out empty, as the judge's example does: the default, the host name
		c.Node, _ = os.Hostname()
	}
	switch {
	case c.Node == "":
		bad("node", "empty, and the host name is unknown: set it")
	case !config.IDPattern.MatchString(c.Node):
		// The wave on this host reports under the same node, and the judge's URLs name
		// it: one the wave refuses ("a b/c") could be read back by neither.
		bad("node", "%q: %s", c.Node, config.IDRule)
	}
	if c.Interval.D() < 10*time.Millisecond || c.Interval.D() > 24*time.Hour {
		bad("interval", "%s: want between 10ms and 24h", c.Interval)
	}
	if c.Buffer < 1 || c.Buffer > maxBuffer {
		bad("buffer", "%d: want between 1 and %d batches", c.Buffer, maxBuffer)
	}
	if c.HTTP.Listen != MetricsListenOff {
		if err := config.CheckListen(c.HTTP.Listen); err != nil {
			bad("http.listen", "%w, or %q", err, MetricsListenOff)
		}
	}
	switch c.Sink.Kind {
	case SinkKafka:
		k := c.Sink.Kafka
		if err := k.Kafka.Validate("sink.kafka"); err != nil {
			errs = append(errs, err)
		}
		if err := bus.CheckTopicName(k.Topic); err != nil {
			bad("sink.kafka.topic", "%w", err)
		}
	case SinkHTTP:
		h := c.Sink.HTTP
		u, err := url.Parse(h.URL)
		urlOK := false
		if h.URL == "" {
			bad("sink.http.url", "required when sink.kind is http (e.g. http://judge:8090/v1/metrics)")
		} else if config.URLHasCredentials(h.URL) {
			bad("sink.http.url", "%s: use token_file or token_env", config.URLCredentialsRefused)
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("sink.http.url", "%q is not an http(s) URL", h.URL)
		} else {
			urlOK = true
		}
		if h.Timeout <= 0 {
			bad("sink.http.timeout", "%s: want more than 0", h.Timeout)
		}
		if h.TokenEnv == "" && os.Getenv(OldTokenEnv) != "" {
			bad("sink.http.token_env", "the variable %s is set: the judge's token is now read from %s (or the variable token_env names): rename it", OldTokenEnv, TokenEnv)
		}
		if c.Sink.HTTP.TokenEnv == "" {
			c.Sink.HTTP.TokenEnv = TokenEnv
		}
		errs = append(errs, c.Sink.HTTP.Token().Check("sink.http.token"))
		if urlOK {
			errs = append(errs, h.TLS.CheckHTTPS("sink.http.tls", u.Scheme == "https"))
		} else {
			// Whether the URL is https is not known yet: the block's keys and files are.
			errs = append(errs, h.TLS.Check("sink.http.tls"))
		}
	default:
		bad("sink.kind", "%q: want %q or %q", c.Sink.Kind, SinkKafka, SinkHTTP)
	}
	if len(c.Collectors.Enabled()) == 0 {
		bad("collectors", "no collector enabled (known: %s)", strings.Join(collector.Names(), ", "))
	}
	return errors.Join(errs...)
}

// Warnings are what the config allows but a deployment likely did not mean, each a line
// naming its key: a collectors section that lists the wave collector and not the host
// one runs no host collector (a listed section runs what it lists), and the judge then
// has no cpu.cores or cpu.util of the host: its placements and plans fall back from
// utilisation (an outside trial's agent ran so, `--check` calling it valid).
func (c *Config) Warnings() []string {
	var out []string
	enabled := c.Collectors.Enabled()
	if slices.Contains(enabled, "wave") && !slices.Contains(enabled, "host") {
		out = append(out, "collectors: wave runs without host, so this host's cpu.cores and cpu.util are not sent: "+
			"the judge's placements and rebalancing plans need them to weigh load in utilisation (else they fall back); "+
			"add \"host: {}\" to collectors (a collectors section runs only the collectors it lists)")
	}
	return out
}

// Collectors is the collectors section: one key per registered collector, each holding
// that collector's own config plus "enabled" (default true); config.Plugins decodes it.
type Collectors struct {
	config.Plugins[collectorRegistry]
}

// collectorRegistry is the collector registry as config.Plugins reads it.
type collectorRegistry struct{}

func (collectorRegistry) Names() []string { return collector.Names() }

func (collectorRegistry) NewConfig(name string) (any, bool) {
	f, err := collector.Lookup(name)
	if err != nil {
		return nil, false
	}
	return f.Config(), true
}

// Build constructs the enabled collectors.
func (cs Collectors) Build(env collector.Env) ([]collector.Collector, error) {
	names := cs.Enabled()
	out := make([]collector.Collector, 0, len(names))
	for _, name := range names {
		f, err := collector.Lookup(name)
		if err != nil {
			return nil, err
		}
		cfg, _ := cs.Config(name)
		c, err := f.New(cfg, env)
		if err != nil {
			return nil, fmt.Errorf("collector %s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// redactURL drops userinfo so a URL can be logged or put in an error.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User = nil
	return u.String()
}
