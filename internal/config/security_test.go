package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// busConfig is a role's config with a Kafka bus section and a coordinator, as the judge's
// and the alarm's are.
type busConfig struct {
	Bus         Bus         `yaml:"bus"`
	Coordinator Coordinator `yaml:"coordinator"`
}

func (c *busConfig) Validate() error {
	if err := c.Bus.Validate("g", StartNewest); err != nil {
		return err
	}
	return c.Coordinator.Validate("./coord.json")
}

func TestDecodeKafkaSecurityKeys(t *testing.T) {
	ca, cert, key, pw := testPKI(t)
	in := fmt.Sprintf(`bus:
  brokers: [k1:9094]
  tls:
    ca_file: %s
    cert_file: %s
    key_file: %s
    server_name: kafka.internal
  sasl:
    mechanism: scram-sha-512
    username: binlake
    password_file: %s
    password_env: BINLAKE_KAFKA_PASSWORD
coordinator:
  kind: zk
  servers: [z1:2181]
  auth:
    username: binlake
    password_file: %s
`, ca, cert, key, pw, pw)
	var c busConfig
	require.NoError(t, Decode(strings.NewReader(in), "judge.yaml", &c))
	require.Equal(t, &ClientTLS{CAFile: ca, CertFile: cert, KeyFile: key, ServerName: "kafka.internal"}, c.Bus.TLS)
	require.Equal(t, KafkaSASL{Mechanism: SASLScramSHA512, Username: "binlake", PasswordFile: pw, PasswordEnv: "BINLAKE_KAFKA_PASSWORD"}, c.Bus.SASL)
	require.Equal(t, CoordAuth{Username: "binlake", PasswordFile: pw}, c.Coordinator.Auth)

	// An empty tls mapping turns TLS on (the system's CAs); no tls key leaves it off.
	var on, off busConfig
	require.NoError(t, Decode(strings.NewReader("bus: {brokers: [k:1], tls: {}}\n"), "judge.yaml", &on))
	require.NotNil(t, on.Bus.TLS)
	require.NoError(t, Decode(strings.NewReader("bus: {brokers: [k:1]}\n"), "judge.yaml", &off))
	require.Nil(t, off.Bus.TLS)

	// Strict: a mistyped or inline password key is refused, naming it.
	for key, yamlText := range map[string]string{
		"bus.sasl.password":   "bus: {brokers: [k:1], sasl: {mechanism: plain, username: u, password: hunter2}}\n",
		"bus.tls.ca":          "bus: {brokers: [k:1], tls: {ca: /x}}\n",
		"coordinator.auth.pw": "bus: {brokers: [k:1]}\ncoordinator: {kind: zk, servers: [z:1], auth: {username: u, pw: x}}\n",
	} {
		var c busConfig
		err := Decode(strings.NewReader(yamlText), "judge.yaml", &c)
		require.Error(t, err, key)
		require.Contains(t, err.Error(), `unknown key "`+key+`"`, key)
		require.NotContains(t, err.Error(), "hunter2")
	}
}

// testPKI writes a self-signed certificate (its own CA) and its key as PEM files, and a
// password file.
func testPKI(t *testing.T) (ca, cert, key, password string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key, password = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	require.NoError(t, os.WriteFile(password, []byte("pw\n"), 0o600))
	return cert, cert, key, password
}

func TestKafkaSecurityValidate(t *testing.T) {
	ca, cert, key, pwFile := testPKI(t)
	missing := filepath.Join(t.TempDir(), "missing")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	base := func() Kafka { return Kafka{Brokers: []string{"k:1"}, Partitions: 1, Replication: 1} }
	for _, tc := range []struct {
		name string
		edit func(*Kafka)
		want []string // substrings; nil means valid
	}{
		{"plaintext", func(*Kafka) {}, nil},
		{"tls system CAs", func(k *Kafka) { k.TLS = &ClientTLS{} }, nil},
		{"tls full", func(k *Kafka) { k.TLS = &ClientTLS{CAFile: ca, CertFile: cert, KeyFile: key} }, nil},
		{"tls missing ca file", func(k *Kafka) { k.TLS = &ClientTLS{CAFile: missing} }, []string{`field "bus.tls.ca_file": open ` + missing}},
		{"tls key is not the cert's", func(k *Kafka) { k.TLS = &ClientTLS{CertFile: cert, KeyFile: cert} },
			[]string{`field "bus.tls.cert_file": "`, `" with key_file "`, `found a certificate rather than a key`}},
		{"cert without key", func(k *Kafka) { k.TLS = &ClientTLS{CertFile: "c"} }, []string{`field "bus.tls.key_file": required with cert_file`}},
		{"key without cert", func(k *Kafka) { k.TLS = &ClientTLS{KeyFile: "k"} }, []string{`field "bus.tls.cert_file": required with key_file`}},
		{"insecure with a CA", func(k *Kafka) { k.TLS = &ClientTLS{CAFile: "ca", InsecureSkipVerify: true} }, []string{`field "bus.tls.insecure_skip_verify"`}},
		{"sasl scram file", func(k *Kafka) {
			k.SASL = KafkaSASL{Mechanism: SASLScramSHA256, Username: "u", PasswordFile: pwFile}
		}, nil},
		{"sasl missing password file", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordFile: missing} },
			[]string{`field "bus.sasl.password_file": read secret: open ` + missing}},
		{"sasl empty password file", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordFile: empty} },
			[]string{`field "bus.sasl.password_file": read secret: file ` + empty + ` is empty`}},
		{"sasl plain env", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordEnv: "PW"} }, nil},
		{"sasl unknown mechanism", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: "gssapi", Username: "u", PasswordEnv: "PW"} },
			[]string{`field "bus.sasl.mechanism": "gssapi": want plain, scram-sha-256 or scram-sha-512`}},
		{"sasl upper case", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: "SCRAM-SHA-512", Username: "u", PasswordEnv: "PW"} },
			[]string{`field "bus.sasl.mechanism": "SCRAM-SHA-512"`, "lower case"}},
		{"sasl without mechanism", func(k *Kafka) { k.SASL = KafkaSASL{Username: "u"} }, []string{`field "bus.sasl.mechanism": required`}},
		{"sasl without user and password", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: SASLPlain} },
			[]string{`field "bus.sasl.username": required`, `field "bus.sasl.password_file": required`}},
		{"sasl bad env name", func(k *Kafka) { k.SASL = KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordEnv: "my pw"} },
			[]string{`field "bus.sasl.password_env": "my pw" is not an environment variable name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := base()
			tc.edit(&k)
			err := k.Validate("bus")
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestCoordinatorAuthValidate(t *testing.T) {
	_, _, _, pwFile := testPKI(t)
	missing := filepath.Join(t.TempDir(), "missing")
	zk := func(a CoordAuth) Coordinator { return Coordinator{Kind: CoordZK, Servers: []string{"z:1"}, Auth: a} }
	for _, tc := range []struct {
		name string
		in   Coordinator
		want []string
	}{
		{"none", zk(CoordAuth{}), nil},
		{"file", zk(CoordAuth{Username: "u", PasswordFile: pwFile}), nil},
		{"missing file", zk(CoordAuth{Username: "u", PasswordFile: missing}), []string{`field "coordinator.auth.password_file": read secret: open ` + missing}},
		{"env", zk(CoordAuth{Username: "u", PasswordEnv: "ZK_PW"}), nil},
		{"no password", zk(CoordAuth{Username: "u"}), []string{`field "coordinator.auth.password_file": required with a username`}},
		{"no username", zk(CoordAuth{PasswordFile: "f"}), []string{`field "coordinator.auth.username": required when a password is set`}},
		{"colon", zk(CoordAuth{Username: "a:b", PasswordFile: pwFile}), []string{`field "coordinator.auth.username": "a:b"`}},
		{"bad env", zk(CoordAuth{Username: "u", PasswordEnv: "1X"}), []string{`field "coordinator.auth.password_env"`}},
		{"single", Coordinator{Kind: CoordSingle, Auth: CoordAuth{Username: "u", PasswordFile: "f"}}, []string{`field "coordinator.auth": only for kind zk`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate("./c.json")
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestSecurityPasswords(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))

	p, err := KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordFile: file}.Password()
	require.NoError(t, err)
	require.Equal(t, "from-file", p.Reveal())

	t.Setenv("BINLAKE_TEST_SEC_PW", "from-env")
	p, err = KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordFile: file, PasswordEnv: "BINLAKE_TEST_SEC_PW"}.Password()
	require.NoError(t, err)
	require.Equal(t, "from-env", p.Reveal(), "the variable overrides the file")

	_, err = KafkaSASL{PasswordEnv: "BINLAKE_TEST_SEC_UNSET"}.Password()
	require.ErrorContains(t, err, "variable BINLAKE_TEST_SEC_UNSET is empty or unset")

	require.NoError(t, os.WriteFile(file, []byte("zk-secret"), 0o600))
	p, err = CoordAuth{Username: "u", PasswordFile: file}.Password()
	require.NoError(t, err)
	require.Equal(t, "zk-secret", p.Reveal())

	_, err = CoordAuth{Username: "u", PasswordFile: filepath.Join(dir, "missing")}.Password()
	require.ErrorContains(t, err, "read secret")
}

func TestClientTLSLoad(t *testing.T) {
	var none *ClientTLS
	c, err := none.Load("bus.tls")
	require.NoError(t, err)
	require.Nil(t, c)

	c, err = (&ClientTLS{ServerName: "k"}).Load("bus.tls")
	require.NoError(t, err)
	require.Nil(t, c.RootCAs, "no ca_file: the system's CAs")
	require.Equal(t, "k", c.ServerName)

	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	_, err = (&ClientTLS{CAFile: notPEM}).Load("bus.tls")
	require.ErrorContains(t, err, `field "bus.tls.ca_file": `+notPEM+` holds no PEM certificate`)
	_, err = (&ClientTLS{CAFile: filepath.Join(dir, "missing")}).Load("sink.kafka.tls")
	require.ErrorContains(t, err, `field "sink.kafka.tls.ca_file"`)
}

// TestDecodeKafkaSecurityFileErrors: --check (Load) reports an unreadable file under the
// key that names it.
func TestDecodeKafkaSecurityFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	var c busConfig
	err := Decode(strings.NewReader("bus:\n  brokers: [k:1]\n  tls:\n    ca_file: "+missing+"\n"), "judge.yaml", &c)
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), "bus.tls.ca_file")
	require.Contains(t, err.Error(), missing)
}
