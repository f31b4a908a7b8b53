package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/internal/metric"
)

// The config sections several roles share: the same keys, defaults filled by the role,
// and checks in one place. Building what they describe (a bus subscription, a
// coordinator) is the composition's job (cmd/binlake), so that a role's config does
// not link the Kafka and ZooKeeper clients.

// Kinds of the bus and coordinator sections, and where a new consumer group starts.
const (
	BusKafka    = "kafka"
	BusNone     = "none"
	StartOldest = "oldest" // the oldest message the topic retains
	StartNewest = "newest" // messages published after the group joined
	CoordSingle = "single"
	CoordZK     = "zk"
)

// Log is the log: section.
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Validate checks the level and the format as the logger will at start.
func (l Log) Validate() error {
	var errs []error
	if _, err := logging.ParseLevel(l.Level); err != nil {
		errs = append(errs, Bad("log.level", "%w", err))
	}
	if err := logging.CheckFormat(l.Format); err != nil {
		errs = append(errs, Bad("log.format", "%w", err))
	}
	return errors.Join(errs...)
}

// HTTP is the core of the http: section of a role that serves an API.
type HTTP struct {
	Listen string `yaml:"listen"`
	// The token, when there is one (from TokenEnv or TokenFile, a SecretRef), is
	// required as a bearer token on writes. TokenEnv defaults to the role's variable.
	TokenFile string `yaml:"token_file"`
	TokenEnv  string `yaml:"token_env"`
	// TLS, when its files are set, serves the API over HTTPS only.
	TLS HTTPTLS `yaml:"tls"`
}

// Token is where the token is read.
func (h HTTP) Token() SecretRef { return SecretRef{File: h.TokenFile, Env: h.TokenEnv} }

// HTTPRetired is the retired key of the http section, for the roles' RetiredKeys.
var HTTPRetired = map[string]string{"http.token": InlineSecret("token")}

// Validate fills Listen with defaultListen and TokenEnv with defaultTokenEnv (the
// role's variable) when empty, and checks the section. Every problem is reported,
// joined, each naming its field.
func (h *HTTP) Validate(defaultListen, defaultTokenEnv string) error {
	if h.Listen == "" {
		h.Listen = defaultListen
	}
	if h.TokenEnv == "" {
		h.TokenEnv = defaultTokenEnv
	}
	var errs []error
	if err := CheckListen(h.Listen); err != nil {
		errs = append(errs, Bad("http.listen", "%w", err))
	}
	errs = append(errs, h.Token().Check("http.token"), h.TLS.Validate("http.tls"))
	return errors.Join(errs...)
}

// Bus is the bus: section of a role that consumes the metric stream.
type Bus struct {
	Kind  string `yaml:"kind"`
	Kafka `yaml:",inline"`
	Topic string `yaml:"topic"`
	// Group is the consumer group; each role chooses its default (shared by its
	// processes, or one per process).
	Group string `yaml:"group"`
	// Start is where the group begins when it has no committed position yet:
	// StartOldest or StartNewest; each role chooses its default.
	Start string `yaml:"start"`
}

// Validate fills the defaults (kafka, the metric topic and its partitions, replication 1,
// defaultGroup, defaultStart) and checks the section. A zero partitions or replication
// means the default here, since the judge and the alarm have no defaults of their own
// to start from. With kind none the Kafka keys are not used, so not checked; nor with a
// kind it refuses, as which keys count depends on it. Every problem is reported, joined.
func (b *Bus) Validate(defaultGroup, defaultStart string) error {
	var errs []error
	switch b.Kind {
	case "":
		b.Kind = BusKafka
	case BusKafka, BusNone:
	default:
		errs = append(errs, Bad("bus.kind", "%q: want kafka or none", b.Kind))
	}
	if b.Topic == "" {
		b.Topic = metric.Topic
	}
	if b.Partitions == 0 {
		b.Partitions = metric.TopicPartitions
	}
	if b.Replication == 0 {
		b.Replication = 1
	}
	if b.Kind == BusKafka {
		// The kind defaults to kafka: without brokers, say how to run without a bus.
		errs = append(errs, b.Kafka.validate("bus", " (or bus.kind: none to run without the bus)"))
		if err := bus.CheckTopicName(b.Topic); err != nil {
			errs = append(errs, Bad("bus.topic", "%w", err))
		}
	}
	if b.Group == "" {
		b.Group = defaultGroup
	}
	if b.Start == "" {
		b.Start = defaultStart
	}
	if b.Start != StartOldest && b.Start != StartNewest {
		errs = append(errs, Bad("bus.start", "%q: want %s or %s", b.Start, StartOldest, StartNewest))
	}
	return errors.Join(errs...)
}

// Coordinator is the coordinator: section (kind: single or zk).
type Coordinator struct {
	Kind           string   `yaml:"kind"`
	Path           string   `yaml:"path"`
	Servers        []string `yaml:"servers"`
	Root           string   `yaml:"root"`
	SessionTimeout Duration `yaml:"session_timeout"`
	// Auth, when its username is set, authenticates the ZooKeeper session with the digest
	// scheme and gives the znodes the coordinator creates a digest ACL for that user only.
	Auth CoordAuth `yaml:"auth"`
}

// CoordAuth is the coordinator's auth: key, ZooKeeper digest credentials. The password is
// never inline: it comes from the variable PasswordEnv when set and non-empty, else from
// PasswordFile.
type CoordAuth struct {
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
}

// Enabled reports whether the section asks for digest authentication.
func (a CoordAuth) Enabled() bool { return a.Username != "" }

// Password resolves the password from the environment or the file. Its errors name the
// variable or the file, never a value.
func (a CoordAuth) Password() (Secret, error) {
	return KafkaSASL{PasswordFile: a.PasswordFile, PasswordEnv: a.PasswordEnv}.Password()
}

// PasswordRef is where the password is read.
func (a CoordAuth) PasswordRef() SecretRef {
	return SecretRef{File: a.PasswordFile, Env: a.PasswordEnv}
}

// reEnvName is a portable environment variable name.
var reEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the keys; prefix is the auth key's path ("coordinator.auth"). Every
// problem is reported, joined, each naming its field.
func (a CoordAuth) Validate(prefix string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, Bad(prefix+"."+key, format, args...))
	}
	if a.Username == "" {
		if a.PasswordFile != "" || a.PasswordEnv != "" {
			bad("username", "required when a password is set")
		}
		return errors.Join(errs...)
	}
	if strings.Contains(a.Username, ":") {
		bad("username", "%q: a digest user name cannot contain ':'", a.Username)
	}
	if a.PasswordFile == "" && a.PasswordEnv == "" {
		bad("password_file", "required with a username (or password_env; the password is never inline)")
	}
	if a.PasswordEnv != "" && !reEnvName.MatchString(a.PasswordEnv) {
		bad("password_env", "%q is not an environment variable name", a.PasswordEnv)
	}
	if err := checkPasswordFile(a.PasswordFile, a.PasswordEnv); err != nil {
		bad("password_file", "%w", err)
	}
	return errors.Join(errs...)
}

// Validate fills the defaults (single, at defaultPath) and checks the section: the
// keys of its kind (of ZooKeeper's root only its leading slash: the client's rules for
// the rest are checked by the composition, see cmd/binlake), and that no key of the
// other kind is set. Every
// problem is reported, joined; with a kind it refuses, only that.
func (c *Coordinator) Validate(defaultPath string) error {
	switch c.Kind {
	case "":
		c.Kind = CoordSingle
		fallthrough
	case CoordSingle:
		if c.Path == "" {
			c.Path = defaultPath
		}
		var errs []error
		if err := CheckStorePath(c.Path); err != nil {
			errs = append(errs, Bad("coordinator.path", "%w", err))
		}
		if c.Auth != (CoordAuth{}) {
			errs = append(errs, Bad("coordinator.auth", "only for kind zk"))
		}
		return errors.Join(errs...)
	case CoordZK:
		return c.validateZK()
	default:
		return Bad("coordinator.kind", "%q: want single or zk", c.Kind)
	}
}

// CheckRootSlash checks that a ZooKeeper root (empty: the default) is absolute.
func CheckRootSlash(root string) error {
	if root != "" && !strings.HasPrefix(root, "/") {
		return fmt.Errorf("%q: must start with a slash, e.g. %q", root, "/"+strings.TrimSuffix(root, "/"))
	}
	return nil
}

// validateZK checks the keys of kind zk, every problem joined.
func (c *Coordinator) validateZK() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, Bad("coordinator.servers", "required: at least one ZooKeeper host:port"))
	}
	for i, s := range c.Servers {
		if err := CheckDial(s); err != nil {
			errs = append(errs, Bad(fmt.Sprintf("coordinator.servers[%d]", i), "%w", err))
		}
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, Bad("coordinator.session_timeout", "%s: want 0 or more", c.SessionTimeout))
	}
	if err := CheckRootSlash(c.Root); err != nil {
		// The rest of the path's rules are the client's (zk.CheckRoot, at composition):
		// the slash, the usual slip, is said here with the section's other problems.
		errs = append(errs, Bad("coordinator.root", "%w", err))
	}
	if err := c.Auth.Validate("coordinator.auth"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
