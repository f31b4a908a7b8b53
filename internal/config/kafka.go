package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Kafka is what every Kafka section has in common: the wave's and the agent's sink.kafka
// and the bus section of the judge and the alarm. Each embeds it inline and adds its own
// keys (the topic, producer tuning, the consumer group), so that these keys are spelled,
// mean and are checked the same in every role; each role keeps its own defaults.
type Kafka struct {
	// Brokers are the bootstrap brokers, host:port each.
	Brokers []string `yaml:"brokers"`
	// Partitions and Replication are those of a topic the role creates because it is
	// missing; an existing topic is used as it is.
	Partitions  int `yaml:"partitions"`
	Replication int `yaml:"replication"`
	// TLS, when the tls key is present (even as `tls: {}`, which trusts the system's
	// CAs), makes every connection to the brokers use TLS.
	TLS *KafkaTLS `yaml:"tls"`
	// SASL, when its mechanism is set, authenticates every connection.
	SASL KafkaSASL `yaml:"sasl"`
}

// KafkaTLS is the tls: key of a Kafka section.
type KafkaTLS struct {
	// CAFile is a PEM file of the CAs that sign the brokers' certificates; the system's
	// CAs when empty.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's PEM certificate and key, for brokers that
	// require (ssl.client.auth) a client certificate; both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name checked in the brokers' certificates; by default the host
	// of the address dialled.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate. For tests only: it allows a
	// man in the middle.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// SASL mechanisms of a Kafka section's sasl.mechanism.
const (
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
)

// KafkaSASL is the sasl: key of a Kafka section. The password is never inline: it comes
// from the variable PasswordEnv when set and non-empty, else from PasswordFile.
type KafkaSASL struct {
	// Mechanism is plain, scram-sha-256 or scram-sha-512; no SASL when empty.
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
}

// Enabled reports whether the section asks for SASL.
func (s KafkaSASL) Enabled() bool { return s.Mechanism != "" }

// Password resolves the password from the environment or the file. Its errors name the
// variable or the file, never a value.
func (s KafkaSASL) Password() (Secret, error) {
	p, err := ResolveSecret("", s.PasswordEnv, s.PasswordFile)
	if err != nil {
		return "", err
	}
	if p == "" {
		switch {
		case s.PasswordEnv != "" && s.PasswordFile == "":
			return "", fmt.Errorf("variable %s is empty or unset", s.PasswordEnv)
		default:
			return "", errors.New("no password: set password_file or password_env")
		}
	}
	return p, nil
}

// validate checks the keys; prefix is the sasl key's path ("bus.sasl").
func (s KafkaSASL) validate(prefix string, bad func(key, format string, args ...any)) {
	if s.Mechanism == "" {
		if s.Username != "" || s.PasswordFile != "" || s.PasswordEnv != "" {
			bad(prefix+".mechanism", "required when %s is set: %s, %s or %s", prefix, SASLPlain, SASLScramSHA256, SASLScramSHA512)
		}
		return
	}
	switch strings.ToLower(s.Mechanism) {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.Mechanism != strings.ToLower(s.Mechanism) {
			bad(prefix+".mechanism", "%q: want %s, %s or %s (lower case)", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
		}
	default:
		bad(prefix+".mechanism", "%q: want %s, %s or %s", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	if s.Username == "" {
		bad(prefix+".username", "required with a SASL mechanism")
	}
	if s.PasswordFile == "" && s.PasswordEnv == "" {
		bad(prefix+".password_file", "required with a SASL mechanism (or password_env; the password is never inline)")
	}
	if s.PasswordEnv != "" && !reEnvName.MatchString(s.PasswordEnv) {
		bad(prefix+".password_env", "%q is not an environment variable name", s.PasswordEnv)
	}
}

// validate checks the keys (Kafka.Validate then reads the files with Load); prefix is the
// tls key's path.
func (t *KafkaTLS) validate(prefix string, bad func(key, format string, args ...any)) {
	if t == nil {
		return
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		if t.CertFile == "" {
			bad(prefix+".cert_file", "required with key_file")
		} else {
			bad(prefix+".key_file", "required with cert_file")
		}
	}
	if t.InsecureSkipVerify && t.CAFile != "" {
		bad(prefix+".insecure_skip_verify", "set with ca_file: the CA would not be checked; set one of them")
	}
}

// Load builds the client TLS configuration: it reads the CA file and the client's
// certificate and key. prefix is the tls key's path, for the errors ("bus.tls"). A nil
// t (no tls key) gives nil: plaintext.
func (t *KafkaTLS) Load(prefix string) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pool, _, err := LoadCAPool(t.CAFile)
		if err != nil {
			return nil, Bad(prefix+".ca_file", "%w", err)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			// tls.LoadX509KeyPair's errors name the problem, never the key's bytes.
			return nil, Bad(prefix+".cert_file", "%q with key_file %q: %w", t.CertFile, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Validate checks the section once the role filled its defaults. prefix is where the
// role keeps it ("sink.kafka", "bus"), so that every error names the key as the file
// spells it ("sink.kafka.brokers[1]"); all problems are reported, joined.
func (k Kafka) Validate(prefix string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, Bad(prefix+"."+key, format, args...))
	}
	if len(k.Brokers) == 0 {
		bad("brokers", "required: at least one host:port")
	}
	for i, b := range k.Brokers {
		if err := CheckDial(b); err != nil {
			bad(fmt.Sprintf("brokers[%d]", i), "%w", err)
		}
	}
	if k.Partitions < 1 {
		bad("partitions", "%d: want at least 1", k.Partitions)
	}
	if k.Replication < 1 {
		bad("replication", "%d: want at least 1", k.Replication)
	}
	n := len(errs)
	k.TLS.validate("tls", bad)
	if k.TLS != nil && len(errs) == n {
		// The files must be readable and hold what they should (as at start-up), so that
		// --check finds a wrong path.
		if _, err := k.TLS.Load(prefix + ".tls"); err != nil {
			errs = append(errs, err)
		}
	}
	k.SASL.validate("sasl", bad)
	if k.SASL.Enabled() {
		if err := checkPasswordFile(k.SASL.PasswordFile, k.SASL.PasswordEnv); err != nil {
			bad("sasl.password_file", "%w", err)
		}
	}
	return errors.Join(errs...)
}

// checkPasswordFile checks that a password file that will be read is readable and not
// empty: unless the variable env, which takes precedence, is set. An unset variable is
// not an error here: a service manager may set it only for the running process.
func checkPasswordFile(file, env string) error {
	if file == "" || (env != "" && strings.TrimSpace(os.Getenv(env)) != "") {
		return nil
	}
	_, err := ResolveSecret("", "", file)
	return err
}
