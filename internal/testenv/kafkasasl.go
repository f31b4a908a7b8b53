package testenv

import (
	"os"
	"testing"
)

// KafkaSASL is the test broker's second listener, SASL_SSL (deploy/testenv/kafka.sh): TLS
// with a certificate of the test CA, and SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
var KafkaSASL = Service{"Kafka SASL_SSL listener", "BINLAKE_TEST_KAFKA_SASL"}

// The variables `services.sh env` sets next to BINLAKE_TEST_KAFKA_SASL: the test CA and a
// client certificate it signed (PEM files), and the users with their password files.
const (
	EnvKafkaSASLCA                = "BINLAKE_TEST_KAFKA_SASL_CA"
	EnvKafkaSASLClientCert        = "BINLAKE_TEST_KAFKA_SASL_CLIENT_CERT"
	EnvKafkaSASLClientKey         = "BINLAKE_TEST_KAFKA_SASL_CLIENT_KEY"
	EnvKafkaSASLScramUser         = "BINLAKE_TEST_KAFKA_SASL_SCRAM_USER"
	EnvKafkaSASLScramPasswordFile = "BINLAKE_TEST_KAFKA_SASL_SCRAM_PASSWORD_FILE"
	EnvKafkaSASLPlainUser         = "BINLAKE_TEST_KAFKA_SASL_PLAIN_USER"
	EnvKafkaSASLPlainPasswordFile = "BINLAKE_TEST_KAFKA_SASL_PLAIN_PASSWORD_FILE"
)

// KafkaSASLEnv is what a test needs to reach the SASL_SSL listener.
type KafkaSASLEnv struct {
	Addr                  string // host:port
	CAFile                string
	ClientCert, ClientKey string
	ScramUser             string // has SCRAM-SHA-256 and SCRAM-SHA-512 credentials
	ScramPasswordFile     string
	PlainUser             string
	PlainPasswordFile     string
}

// RequireKafkaSASL is Require for the SASL_SSL listener; it also checks that the CA and
// password files named by the other variables exist.
func RequireKafkaSASL(t testing.TB) KafkaSASLEnv {
	t.Helper()
	addr := Require(t, KafkaSASL)
	e := KafkaSASLEnv{
		Addr:              addr,
		CAFile:            os.Getenv(EnvKafkaSASLCA),
		ClientCert:        os.Getenv(EnvKafkaSASLClientCert),
		ClientKey:         os.Getenv(EnvKafkaSASLClientKey),
		ScramUser:         os.Getenv(EnvKafkaSASLScramUser),
		ScramPasswordFile: os.Getenv(EnvKafkaSASLScramPasswordFile),
		PlainUser:         os.Getenv(EnvKafkaSASLPlainUser),
		PlainPasswordFile: os.Getenv(EnvKafkaSASLPlainPasswordFile),
	}
	for env, v := range map[string]string{
		EnvKafkaSASLCA: e.CAFile, EnvKafkaSASLClientCert: e.ClientCert, EnvKafkaSASLClientKey: e.ClientKey,
		EnvKafkaSASLScramPasswordFile: e.ScramPasswordFile, EnvKafkaSASLPlainPasswordFile: e.PlainPasswordFile,
	} {
		if v == "" {
			t.Fatalf("%s is set but %s is not (eval \"$(bash deploy/testenv/services.sh env)\")", KafkaSASL.Env, env)
		}
		if _, err := os.Stat(v); err != nil {
			t.Fatalf("%s: %v (made by deploy/testenv/kafka.sh up)", env, err)
		}
	}
	if e.ScramUser == "" || e.PlainUser == "" {
		t.Fatalf("%s is set but %s or %s is not", KafkaSASL.Env, EnvKafkaSASLScramUser, EnvKafkaSASLPlainUser)
	}
	return e
}
