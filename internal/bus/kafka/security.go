package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/binlake/binlake/internal/config"
)

// SASL is how a Bus authenticates its connections.
type SASL struct {
	// Mechanism is config.SASLPlain, config.SASLScramSHA256 or config.SASLScramSHA512
	// (case does not matter).
	Mechanism string
	Username  string
	// Password prints as "***" everywhere; it reaches only the SASL exchange.
	Password config.Secret
}

// Name is the mechanism as Kafka spells it ("SCRAM-SHA-512").
func (s *SASL) Name() string { return strings.ToUpper(s.Mechanism) }

// mechanism builds kafka-go's mechanism; its errors never hold the password.
func (s *SASL) mechanism() (sasl.Mechanism, error) {
	if s.Username == "" {
		return nil, fmt.Errorf("kafka bus: SASL %s: no username", s.Name())
	}
	if s.Password == "" {
		return nil, fmt.Errorf("kafka bus: SASL %s: no password", s.Name())
	}
	switch strings.ToLower(s.Mechanism) {
	case config.SASLPlain:
		return plain.Mechanism{Username: s.Username, Password: s.Password.Reveal()}, nil
	case config.SASLScramSHA256, config.SASLScramSHA512:
		algo := scram.SHA256
		if strings.ToLower(s.Mechanism) == config.SASLScramSHA512 {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, s.Username, s.Password.Reveal())
		if err != nil {
			// SASLprep rejects some characters; the error names neither value.
			return nil, fmt.Errorf("kafka bus: SASL %s: the username or password is not valid for SCRAM: %w", s.Name(), err)
		}
		return m, nil
	default:
		return nil, fmt.Errorf("kafka bus: SASL mechanism %q: want %s, %s or %s", s.Mechanism,
			config.SASLPlain, config.SASLScramSHA256, config.SASLScramSHA512)
	}
}

// FromConfig sets o's Brokers, TLS and SASL from a Kafka config section: it reads the
// TLS files and resolves the SASL password (from its variable or file). prefix is where
// the role keeps the section ("bus", "sink.kafka"), so that errors name the key.
func (o *Options) FromConfig(k config.Kafka, prefix string) error {
	o.Brokers = k.Brokers
	t, err := k.TLS.Load(prefix + ".tls")
	if err != nil {
		return err
	}
	o.TLS = t
	o.SASL = nil
	if k.SASL.Enabled() {
		p, err := k.SASL.Password()
		if err != nil {
			key := prefix + ".sasl.password_file"
			if k.SASL.PasswordFile == "" {
				key = prefix + ".sasl.password_env"
			}
			return config.Bad(key, "%w", err)
		}
		o.SASL = &SASL{Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, Password: p}
	}
	return nil
}

// explain adds what an operator needs to a failed authentication or TLS handshake: which
// mechanism and user were refused, which CA did not verify the broker. Other errors are
// returned as they are. It never shows the password.
//
// kafka-go's Transport keeps the error of its last connection attempt to itself and fails
// requests routed to a broker with BrokerNotAvailable; for that error explain asks the
// transport for the cluster metadata, which returns the connection's error, and explains
// that one.
func (b *Bus) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kafkago.BrokerNotAvailable) && ctx.Err() == nil {
		if _, cause := b.transport.RoundTrip(ctx, b.addr, &metadata.Request{}); cause != nil && ctx.Err() == nil {
			if explained, ok := b.security(cause); ok {
				return fmt.Errorf("%w (then: %w)", explained, err)
			}
			if errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF) {
				// A proxy or load balancer with no broker behind it closes at once too: a
				// Kafka outage behind one read as a TLS mistake (an outside trial).
				hint := "the connection was closed at once: a TLS listener (set tls:), or a proxy or load balancer in front of a broker that is down?"
				if b.opts.TLS != nil {
					hint = "the broker closed the connection during the TLS handshake: is the listener a TLS one (SSL or SASL_SSL)?"
				}
				return fmt.Errorf("kafka: %s: %w (then: %w)", hint, cause, err)
			}
			return fmt.Errorf("%w: cannot connect: %w", err, cause)
		}
	}
	if explained, ok := b.security(err); ok {
		return explained
	}
	return err
}

// security explains err if it is an authentication or TLS failure; ok is false otherwise.
func (b *Bus) security(err error) (_ error, ok bool) {
	if s := b.opts.SASL; s != nil {
		switch {
		case errors.Is(err, kafkago.SASLAuthenticationFailed):
			return fmt.Errorf("kafka: SASL %s authentication as user %q failed (wrong username or password, or the user is unknown to the broker): %w",
				s.Name(), s.Username, err), true
		case errors.Is(err, kafkago.UnsupportedSASLMechanism):
			return fmt.Errorf("kafka: the broker's listener does not enable SASL mechanism %s: %w", s.Name(), err), true
		case errors.Is(err, kafkago.IllegalSASLState):
			return fmt.Errorf("kafka: SASL %s exchange refused by the broker (is the listener a SASL one?): %w", s.Name(), err), true
		}
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var header tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("kafka: TLS: the broker's certificate is not signed by a trusted CA (tls.ca_file, or the system's CAs without it): %w", err), true
	case errors.As(err, &hostname):
		return fmt.Errorf("kafka: TLS: the broker's certificate does not name the address dialled (tls.server_name can set the expected name): %w", err), true
	case errors.As(err, &invalid):
		return fmt.Errorf("kafka: TLS: the broker's certificate is not valid: %w", err), true
	case errors.As(err, &header):
		return fmt.Errorf("kafka: TLS: the broker did not answer with TLS (a plaintext listener? remove tls: or use its TLS port): %w", err), true
	}
	return err, false
}

// Security describes the connection's protection for the log: "plaintext", "TLS",
// "SASL_SSL SCRAM-SHA-512 as user u" or "SASL_PLAINTEXT PLAIN as user u".
func (o *Options) Security() string {
	switch {
	case o.SASL == nil && o.TLS == nil:
		return "plaintext"
	case o.SASL == nil:
		return "TLS"
	case o.TLS == nil:
		return fmt.Sprintf("SASL_PLAINTEXT %s as user %s", o.SASL.Name(), o.SASL.Username)
	default:
		return fmt.Sprintf("SASL_SSL %s as user %s", o.SASL.Name(), o.SASL.Username)
	}
}
