package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
)

// saslBus builds a Bus from a Kafka config section, as the roles do (Options.FromConfig).
func saslBus(t *testing.T, k config.Kafka) (*kafka.Bus, error) {
	t.Helper()
	opts := kafka.Options{ClientID: "binlake-sasltest", Logger: testLogger(t)}
	if err := opts.FromConfig(k, "bus"); err != nil {
		return nil, err
	}
	b, err := kafka.New(opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { b.Close() })
	return b, nil
}

func randomTopic(prefix string) string {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	return "bustest." + prefix + "." + hex.EncodeToString(suffix[:])
}

// roundTrip creates a topic, publishes a message and consumes it back through a consumer
// group: every kind of connection the roles open (admin, producer, group member, fetch).
func roundTrip(t *testing.T, ctx context.Context, b *kafka.Bus, name string) {
	t.Helper()
	topic := randomTopic(name)
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Publish(ctx, bus.Message{Topic: topic, Key: []byte("k"), Value: []byte("hello " + name)}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + ".group"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
			select {
			case got <- string(m.Value):
			default:
			}
			return nil
		})
	}()
	select {
	case v := <-got:
		if v != "hello "+name {
			t.Fatalf("consumed %q, want %q", v, "hello "+name)
		}
	case err := <-errc:
		t.Fatalf("subscribe ended before a message: %v", err)
	case <-ctx.Done():
		t.Fatalf("no message consumed: %v", ctx.Err())
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("subscribe: %v", err)
	}
}

// TestSASLSSLIntegration produces and consumes through the broker's SASL_SSL listener with
// each mechanism, the broker's certificate checked against the test CA.
func TestSASLSSLIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	for _, tc := range []struct {
		name, mechanism, user, passwordFile string
		clientCert                          bool
	}{
		{"scram-sha-512", config.SASLScramSHA512, env.ScramUser, env.ScramPasswordFile, false},
		{"scram-sha-256", config.SASLScramSHA256, env.ScramUser, env.ScramPasswordFile, false},
		{"plain", config.SASLPlain, env.PlainUser, env.PlainPasswordFile, false},
		{"scram-sha-512 with a client certificate", config.SASLScramSHA512, env.ScramUser, env.ScramPasswordFile, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			k := config.Kafka{
				Brokers: []string{env.Addr},
				TLS:     &config.ClientTLS{CAFile: env.CAFile},
				SASL:    config.KafkaSASL{Mechanism: tc.mechanism, Username: tc.user, PasswordFile: tc.passwordFile},
			}
			if tc.clientCert {
				k.TLS.CertFile, k.TLS.KeyFile = env.ClientCert, env.ClientKey
			}
			b, err := saslBus(t, k)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, ctx, b, strings.ReplaceAll(tc.name, " ", "-"))
		})
	}
}

// TestSASLWrongPasswordIntegration: a refused password fails with an error that names the
// mechanism and the user, never the password.
func TestSASLWrongPasswordIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	const wrong = "not-the-password-4711"
	for _, tc := range []struct{ mechanism, kafkaName, user string }{
		{config.SASLScramSHA512, "SCRAM-SHA-512", env.ScramUser},
		{config.SASLPlain, "PLAIN", env.PlainUser},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			t.Setenv("BINLAKE_TEST_WRONG_PASSWORD", wrong)
			b, err := saslBus(t, config.Kafka{
				Brokers: []string{env.Addr},
				TLS:     &config.ClientTLS{CAFile: env.CAFile},
				SASL:    config.KafkaSASL{Mechanism: tc.mechanism, Username: tc.user, PasswordEnv: "BINLAKE_TEST_WRONG_PASSWORD"},
			})
			if err != nil {
				t.Fatal(err)
			}
			err = b.CreateTopic(ctx, bus.TopicSpec{Name: randomTopic("wrongpw"), Partitions: 1})
			if err == nil {
				t.Fatal("CreateTopic with a wrong password succeeded")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if !strings.Contains(msg, "SASL "+tc.kafkaName+" authentication") || !strings.Contains(msg, tc.user) {
				t.Errorf("error does not name the mechanism %s and the user %s: %s", tc.kafkaName, tc.user, msg)
			}
			if strings.Contains(msg, wrong) {
				t.Errorf("error shows the password: %s", msg)
			}
		})
	}
}

// TestTLSWrongCAIntegration: a broker certificate that the configured CA did not sign is
// refused with an error saying so.
func TestTLSWrongCAIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := saslBus(t, config.Kafka{
		Brokers: []string{env.Addr},
		TLS:     &config.ClientTLS{CAFile: otherCA(t)},
		SASL:    config.KafkaSASL{Mechanism: config.SASLScramSHA512, Username: env.ScramUser, PasswordFile: env.ScramPasswordFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = b.CreateTopic(ctx, bus.TopicSpec{Name: randomTopic("wrongca"), Partitions: 1})
	if err == nil {
		t.Fatal("CreateTopic trusting another CA succeeded")
	}
	t.Logf("error: %s", err)
	if !strings.Contains(err.Error(), "not signed by a trusted CA") {
		t.Errorf("error does not say the CA did not verify the broker: %s", err)
	}
}

// TestTLSToPlaintextListenerIntegration: TLS against the plaintext listener says so.
func TestTLSToPlaintextListenerIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	plain := testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := saslBus(t, config.Kafka{Brokers: plain, TLS: &config.ClientTLS{CAFile: env.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	err = b.CreateTopic(ctx, bus.TopicSpec{Name: randomTopic("tlsplain"), Partitions: 1})
	if err == nil {
		t.Fatal("CreateTopic over TLS to the plaintext listener succeeded")
	}
	t.Logf("error: %s", err)
	if !strings.Contains(err.Error(), "during the TLS handshake: is the listener a TLS one") {
		t.Errorf("error does not say the listener is not TLS: %s", err)
	}
}

// TestPlaintextToTLSListenerIntegration: no tls: key against the SASL_SSL listener says
// that TLS may be missing.
func TestPlaintextToTLSListenerIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := saslBus(t, config.Kafka{Brokers: []string{env.Addr},
		SASL: config.KafkaSASL{Mechanism: config.SASLScramSHA512, Username: env.ScramUser, PasswordFile: env.ScramPasswordFile}})
	if err != nil {
		t.Fatal(err)
	}
	err = b.CreateTopic(ctx, bus.TopicSpec{Name: randomTopic("plaintls"), Partitions: 1})
	if err == nil {
		t.Fatal("CreateTopic without TLS on the SASL_SSL listener succeeded")
	}
	t.Logf("error: %s", err)
	if !strings.Contains(err.Error(), "set tls:") {
		t.Errorf("error does not suggest TLS: %s", err)
	}
}

// otherCA writes a fresh self-signed CA, which signed nothing the broker has, to a file.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "some other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFromConfigErrors: the files and the password are read by FromConfig, whose errors
// name the key and never a secret.
func TestFromConfigErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name string
		k    config.Kafka
		want string
	}{
		{"ca file", config.Kafka{TLS: &config.ClientTLS{CAFile: missing}}, `field "bus.tls.ca_file"`},
		{"client key pair", config.Kafka{TLS: &config.ClientTLS{CertFile: missing, KeyFile: missing}}, `field "bus.tls.cert_file": "` + missing + `" with key_file "` + missing + `": open ` + missing},
		{"password file", config.Kafka{SASL: config.KafkaSASL{Mechanism: "plain", Username: "u", PasswordFile: missing}}, `field "bus.sasl.password_file": read secret`},
		{"password env unset", config.Kafka{SASL: config.KafkaSASL{Mechanism: "plain", Username: "u", PasswordEnv: "BINLAKE_TEST_UNSET_PASSWORD"}}, `field "bus.sasl.password_env": variable BINLAKE_TEST_UNSET_PASSWORD is empty or unset`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.k.Brokers = []string{"127.0.0.1:1"}
			var o kafka.Options
			err := o.FromConfig(tc.k, "bus")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %s", err, tc.want)
			}
		})
	}
	t.Run("plaintext", func(t *testing.T) {
		var o kafka.Options
		if err := o.FromConfig(config.Kafka{Brokers: []string{"b:1"}}, "bus"); err != nil || o.TLS != nil || o.SASL != nil {
			t.Fatalf("got %v, TLS %v, SASL %v; want plaintext", err, o.TLS, o.SASL)
		}
	})
	t.Run("password never printed", func(t *testing.T) {
		t.Setenv("BINLAKE_TEST_PW", "s3cr3t-value")
		var o kafka.Options
		if err := o.FromConfig(config.Kafka{Brokers: []string{"b:1"}, SASL: config.KafkaSASL{Mechanism: "scram-sha-256", Username: "u", PasswordEnv: "BINLAKE_TEST_PW"}}, "bus"); err != nil {
			t.Fatal(err)
		}
		if o.SASL.Password.Reveal() != "s3cr3t-value" {
			t.Fatal("password not resolved from the variable")
		}
		for _, s := range []string{fmtV(o), fmtV(*o.SASL)} {
			if strings.Contains(s, "s3cr3t") {
				t.Fatalf("options print the password: %s", s)
			}
		}
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		_, err := kafka.New(kafka.Options{Brokers: []string{"b:1"}, SASL: &kafka.SASL{Mechanism: "gssapi", Username: "u", Password: "p"}})
		if err == nil || !strings.Contains(err.Error(), `SASL mechanism "gssapi"`) {
			t.Fatalf("got %v", err)
		}
	})
}

func fmtV(v any) string {
	return strings.Join([]string{fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v)}, " ")
}

// TestClosedAtOnceNamesAProxy: a listener that takes the connection and closes it (a TCP
// proxy or load balancer whose broker is down) is named as a possible cause beside a TLS
// listener: a Kafka outage behind a proxy read as a TLS mistake (an outside trial).
func TestClosedAtOnceNamesAProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// As socat does when its broker refuses: the request read, then an orderly
			// close (closed with the request unread, the client would read a reset).
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := saslBus(t, config.Kafka{Brokers: []string{ln.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	err = b.CreateTopic(ctx, bus.TopicSpec{Name: randomTopic("proxied"), Partitions: 1})
	if err == nil || !strings.Contains(err.Error(), "or a proxy or load balancer in front of a broker that is down?") {
		t.Errorf("CreateTopic through a proxy with nothing behind: %v; want a proxy named beside TLS", err)
	}
}
