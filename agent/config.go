package agent

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/agent/collector"
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
	// TokenEnv overrides sink.http.token and sink.http.token_file.
	TokenEnv  = "BINLAKE_AGENT_TOKEN"
	maxBuffer = 1_000_000
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
	return map[string]string{"metrics_listen": "http.listen", "sink.type": "sink.kind"}
}

// SinkConfig chooses where batches go.
type SinkConfig struct {
	Kind  string          `yaml:"kind"`
	Kafka KafkaSinkConfig `yaml:"kafka"`
	HTTP  HTTPSinkConfig  `yaml:"http"`
}

// KafkaSinkConfig is the bus sink over Kafka.
type KafkaSinkConfig struct {
	Brokers     []string `yaml:"brokers"`
	Topic       string   `yaml:"topic"`
	Partitions  int      `yaml:"partitions"`
	Replication int      `yaml:"replication"`
}

// HTTPSinkConfig is the HTTP sink: POST to the judge's /v1/metrics.
type HTTPSinkConfig struct {
	URL       string          `yaml:"url"`
	Token     config.Secret   `yaml:"token"`
	TokenFile string          `yaml:"token_file"`
	Timeout   config.Duration `yaml:"timeout"`
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
			Kind:  SinkKafka,
			Kafka: KafkaSinkConfig{Brokers: []string{"127.0.0.1:9092"}, Topic: metric.Topic, Partitions: metric.TopicPartitions, Replication: 1},
			HTTP:  HTTPSinkConfig{Timeout: config.Duration(5 * time.Second)},
		},
	}
	c.HTTP.Listen = DefaultMetricsListen
	// Without a collectors section, the host collector runs with its defaults.
	f, err := collector.Lookup("host")
	if err == nil {
		c.Collectors.set("host", f.Config())
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
		errs = append(errs, fmt.Errorf("field %q: %s", field, fmt.Sprintf(format, args...)))
	}
	probe := metric.Batch{Node: c.Node, TS: time.Now(), IntervalS: c.Interval.D().Seconds()}
	if c.Node == "" {
		bad("node", "empty, and the host name is unknown: set it")
	} else if err := probe.Validate(); err != nil && strings.Contains(err.Error(), "node") {
		bad("node", "%v", err)
	}
	if c.Interval.D() < 10*time.Millisecond || c.Interval.D() > 24*time.Hour {
		bad("interval", "%s: want between 10ms and 24h", c.Interval)
	}
	if c.Buffer < 1 || c.Buffer > maxBuffer {
		bad("buffer", "%d: want between 1 and %d batches", c.Buffer, maxBuffer)
	}
	if c.HTTP.Listen != MetricsListenOff {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			bad("http.listen", "%q: want host:port or %q", c.HTTP.Listen, MetricsListenOff)
		}
	}
	switch c.Sink.Kind {
	case SinkKafka:
		k := c.Sink.Kafka
		if len(k.Brokers) == 0 {
			bad("sink.kafka.brokers", "required when sink.kind is kafka")
		}
		for i, b := range k.Brokers {
			if _, _, err := net.SplitHostPort(b); err != nil {
				bad(fmt.Sprintf("sink.kafka.brokers[%d]", i), "%q is not host:port", b)
			}
		}
		if k.Topic == "" {
			bad("sink.kafka.topic", "empty")
		}
		if k.Partitions < 1 {
			bad("sink.kafka.partitions", "%d: want at least 1", k.Partitions)
		}
		if k.Replication < 1 {
			bad("sink.kafka.replication", "%d: want at least 1", k.Replication)
		}
	case SinkHTTP:
		h := c.Sink.HTTP
		u, err := url.Parse(h.URL)
		if h.URL == "" {
			bad("sink.http.url", "required when sink.kind is http (e.g. http://judge:8080/v1/metrics)")
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("sink.http.url", "%q is not an http(s) URL", redactURL(h.URL))
		} else if u.User != nil {
			bad("sink.http.url", "credentials in the URL would be logged: use token or token_file")
		}
		if h.Timeout <= 0 {
			bad("sink.http.timeout", "%s: must be positive", h.Timeout)
		}
		if h.Token != "" && h.TokenFile != "" {
			bad("sink.http.token", "set token or token_file, not both")
		}
	default:
		bad("sink.kind", "%q: want %q or %q", c.Sink.Kind, SinkKafka, SinkHTTP)
	}
	if len(c.Collectors.Enabled()) == 0 {
		bad("collectors", "no collector enabled (known: %s)", strings.Join(collector.Names(), ", "))
	}
	return errors.Join(errs...)
}

// Collectors is the collectors section: one key per registered collector, each holding
// that collector's own config, plus "enabled" (default true).
type Collectors struct {
	names   []string // enabled, in file order
	configs map[string]any
}

func (cs *Collectors) set(name string, cfg any) {
	if cs.configs == nil {
		cs.configs = map[string]any{}
	}
	if _, ok := cs.configs[name]; !ok {
		cs.names = append(cs.names, name)
	}
	cs.configs[name] = cfg
}

// Enabled returns the names of the enabled collectors in file order.
func (cs Collectors) Enabled() []string { return append([]string(nil), cs.names...) }

// Config returns the decoded config of an enabled collector.
func (cs Collectors) Config(name string) (any, bool) {
	c, ok := cs.configs[name]
	return c, ok
}

// Build constructs the enabled collectors.
func (cs Collectors) Build(env collector.Env) ([]collector.Collector, error) {
	out := make([]collector.Collector, 0, len(cs.names))
	for _, name := range cs.names {
		f, err := collector.Lookup(name)
		if err != nil {
			return nil, err
		}
		c, err := f.New(cs.configs[name], env)
		if err != nil {
			return nil, fmt.Errorf("collector %s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// UnmarshalYAML decodes the section strictly. The yaml package cannot reject unknown keys
// when decoding from a node, so they are checked here against the config struct's tags;
// errors are *yaml.TypeError with lines, so config.Decode names file, line and field.
func (cs *Collectors) UnmarshalYAML(n *yaml.Node) error {
	*cs = Collectors{}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s into collectors (want a mapping of collector names)", n.Line, n.ShortTag())}}
	}
	var errs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		f, err := collector.Lookup(name)
		if err != nil {
			errs = append(errs, fmt.Sprintf("line %d: collectors.%s: %v", k.Line, name, err))
			continue
		}
		cfg := f.Config()
		enabled, e := decodeSection(name, v, cfg)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if enabled {
			cs.set(name, cfg)
		}
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// decodeSection decodes one collector's section into cfg and reports whether it is enabled.
func decodeSection(name string, v *yaml.Node, cfg any) (bool, []string) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		return true, validate(name, v, cfg)
	}
	if v.Kind != yaml.MappingNode {
		return false, []string{fmt.Sprintf("line %d: cannot unmarshal %s into collectors.%s (want a mapping, e.g. {enabled: true})", v.Line, v.ShortTag(), name)}
	}
	known := yamlFields(reflect.TypeOf(cfg).Elem())
	enabled := true
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column}
	var errs []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch {
		case k.Value == "enabled":
			if err := val.Decode(&enabled); err != nil {
				errs = append(errs, typeErrors(err)...)
			}
		case known[k.Value]:
			rest.Content = append(rest.Content, k, val)
		default:
			errs = append(errs, fmt.Sprintf("line %d: field %s not found in type %T (known: enabled, %s)", k.Line, k.Value, cfg, strings.Join(sortedKeys(known), ", ")))
		}
	}
	if len(errs) > 0 {
		return false, errs
	}
	if err := rest.Decode(cfg); err != nil {
		return false, typeErrors(err)
	}
	return enabled, validate(name, v, cfg)
}

// validate calls the collector config's Validate and points the error at the line of
// the field it names, when it names one.
func validate(name string, section *yaml.Node, cfg any) []string {
	vd, ok := cfg.(config.Validator)
	if !ok {
		return nil
	}
	err := vd.Validate()
	if err == nil {
		return nil
	}
	line := section.Line
	if section.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(section.Content); i += 2 {
			if strings.HasPrefix(err.Error(), section.Content[i].Value+":") {
				line = section.Content[i+1].Line
			}
		}
	}
	return []string{fmt.Sprintf("line %d: collectors.%s: %v", line, name, err)}
}

func typeErrors(err error) []string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return te.Errors
	}
	return []string{err.Error()}
}

func yamlFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		out[tag] = true
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
