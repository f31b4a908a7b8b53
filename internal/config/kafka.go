package config

import (
	"errors"
	"fmt"
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
	TLS *ClientTLS `yaml:"tls"`
	// SASL, when its mechanism is set, authenticates every connection.
	SASL KafkaSASL `yaml:"sasl"`
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

// PasswordRef is where the password is read.
func (s KafkaSASL) PasswordRef() SecretRef {
	return SecretRef{File: s.PasswordFile, Env: s.PasswordEnv}
}

// Password resolves the password from the environment or the file. Its errors name the
// variable or the file, never a value.
func (s KafkaSASL) Password() (Secret, error) {
	p, err := s.PasswordRef().Resolve()
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

// Validate checks the section once the role filled its defaults. prefix is where the
// role keeps it ("sink.kafka", "bus"), so that every error names the key as the file
// spells it ("sink.kafka.brokers[1]"); all problems are reported, joined.
func (k Kafka) Validate(prefix string) error { return k.validate(prefix, "") }

// validate is Validate, hint ending the message of brokers left out.
func (k Kafka) validate(prefix, hint string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, Bad(prefix+"."+key, format, args...))
	}
	if len(k.Brokers) == 0 {
		bad("brokers", "required: at least one host:port%s", hint)
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
	if err := k.TLS.Check(prefix + ".tls"); err != nil {
		errs = append(errs, err)
	}
	k.SASL.validate("sasl", bad)
	if k.SASL.Enabled() {
		if err := checkPasswordFile(k.SASL.PasswordFile, k.SASL.PasswordEnv); err != nil {
			bad("sasl.password_file", "%w", err)
		}
	}
	return errors.Join(errs...)
}
