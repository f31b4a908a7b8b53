package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv/certtest"
)

func loadYAML(t *testing.T, yaml string) (Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "judge.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
	return Load(p)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// The judge's API over HTTPS (http.tls), through Run as the binary starts it: a client
// trusting the certificate gets 200, a plain-HTTP one a 400 from the TLS server.
func TestRunServesHTTPS(t *testing.T) {
	pair := certtest.New(t, "judge")
	c, err := loadYAML(t, fmt.Sprintf("bus: {kind: none}\nhttp:\n  listen: 127.0.0.1:0\n  tls: {cert_file: %q, key_file: %q}\n", pair.CertFile, pair.KeyFile))
	require.NoError(t, err)
	addrc := make(chan string, 1)
	j, err := New(Options{Store: openStore(t), Logger: quiet, Listen: c.HTTP.Listen, TLS: c.HTTP.TLS, Ready: func(a string) { addrc <- a }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("judge stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("judge did not start")
	}

	require.Equal(t, "application/json", certtest.ServesHTTPSOnly(t, pair.Pool, addr, "/v1/nodes"))
}

// A certificate path that does not exist fails the config, naming the key.
func TestConfigHTTPTLSErrors(t *testing.T) {
	pair := certtest.New(t, "judge")
	_, err := loadYAML(t, fmt.Sprintf("bus: {kind: none}\nhttp:\n  tls: {cert_file: /nonexistent/judge.crt, key_file: %q}\n", pair.KeyFile))
	require.ErrorContains(t, err, `judge.yaml:3: field "http.tls.cert_file": "/nonexistent/judge.crt": no such file or directory`)
	_, err = loadYAML(t, fmt.Sprintf("bus: {kind: none}\nhttp:\n  tls: {cert_file: %q}\n", pair.CertFile))
	require.ErrorContains(t, err, `judge.yaml:3: field "http.tls.key_file": required with http.tls.cert_file`)
	_, err = loadYAML(t, "bus: {kind: none}\nhttp:\n  tls: {cert: x}\n")
	require.ErrorContains(t, err, `unknown key "http.tls.cert"`)
}

func TestConfigElasticSecurity(t *testing.T) {
	pair := certtest.New(t, "es")
	junk := writeFile(t, "junk.pem", "not a certificate")
	pwFile := writeFile(t, "es.pw", "s3cret-pw\n")
	keyFile := writeFile(t, "es.key", "id1:k3y-secret\n")
	const es = "bus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"ca over http", es + "    addresses: [http://127.0.0.1:9200]\n    tls: {ca_file: " + pair.CertFile + "}\n", `judge.yaml:6: field "store.elastic.tls": set, but the URL is not https://`},
		{"missing ca", es + "    addresses: [https://127.0.0.1:9200]\n    tls: {ca_file: /nonexistent/ca.pem}\n", `judge.yaml:6: field "store.elastic.tls.ca_file": open /nonexistent/ca.pem: no such file or directory`},
		{"ca not pem", es + "    addresses: [https://127.0.0.1:9200]\n    tls: {ca_file: " + junk + "}\n", `judge.yaml:6: field "store.elastic.tls.ca_file": ` + junk + " holds no PEM certificate"},
		{"bad address", es + "    addresses: [127.0.0.1:9200]\n", `judge.yaml:5: field "store.elastic.addresses[0]": "127.0.0.1:9200": want http://host:port or https://host:port`},
		{"credentials in url", es + "    addresses: [\"https://u:p@127.0.0.1:9200\"]\n", `judge.yaml:5: field "store.elastic.addresses[0]": credentials in the URL would be logged`},
		{"query in url", es + "    addresses: [\"https://127.0.0.1:9200/?pretty\"]\n", `judge.yaml:5: field "store.elastic.addresses[0]": "https://127.0.0.1:9200/?pretty" has a query or a fragment`},
		{"password without username", es + "    addresses: [https://h:9200]\n    password_file: " + pwFile + "\n", `judge.yaml:4: field "store.elastic.username": required with password_file`},
		{"bad password variable", es + "    addresses: [https://h:9200]\n    username: u\n    password_env: BAD-NAME\n", `judge.yaml:7: field "store.elastic.password_env": "BAD-NAME" is not an environment variable name`},
		{"missing key file", es + "    addresses: [https://h:9200]\n    api_key_file: /nonexistent/key\n", `judge.yaml:6: field "store.elastic.api_key_file": read secret: open /nonexistent/key: no such file or directory`},
		{"basic and api key", es + "    addresses: [https://h:9200]\n    username: u\n    api_key_file: " + keyFile + "\n", `judge.yaml:6: field "store.elastic.username": set username (basic auth) or api_key_file, not both`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml)
			require.ErrorContains(t, err, tc.want)
		})
	}

	t.Run("basic auth from file", func(t *testing.T) {
		t.Setenv(ElasticPasswordEnv, "")
		c, err := loadYAML(t, es+"    addresses: [https://h:9200]\n    tls: {ca_file: "+pair.CertFile+"}\n    username: binlake\n    password_file: "+pwFile+"\n")
		require.NoError(t, err)
		pw, key, err := c.ElasticCredentials()
		require.NoError(t, err)
		require.Equal(t, "s3cret-pw", pw.Reveal())
		require.Empty(t, key)
	})
	t.Run("api key from env over file", func(t *testing.T) {
		t.Setenv(ElasticAPIKeyEnv, "from-env")
		c, err := loadYAML(t, es+"    addresses: [https://h:9200]\n    api_key_file: "+keyFile+"\n")
		require.NoError(t, err)
		_, key, err := c.ElasticCredentials()
		require.NoError(t, err)
		require.Equal(t, "from-env", key.Reveal())
	})
	t.Run("api key from file", func(t *testing.T) {
		t.Setenv(ElasticAPIKeyEnv, "")
		c, err := loadYAML(t, es+"    addresses: [https://h:9200]\n    api_key_file: "+keyFile+"\n")
		require.NoError(t, err)
		_, key, err := c.ElasticCredentials()
		require.NoError(t, err)
		require.Equal(t, "id1:k3y-secret", key.Reveal())
		require.NotContains(t, fmt.Sprintf("%v %+v", c, c), "k3y-secret")
	})
	t.Run("username without password", func(t *testing.T) {
		t.Setenv(ElasticPasswordEnv, "")
		c, err := loadYAML(t, es+"    addresses: [https://h:9200]\n    username: binlake\n")
		require.NoError(t, err)
		_, _, err = c.ElasticCredentials()
		require.EqualError(t, err, `field "store.elastic.username": "binlake": no password: set password_file or $`+ElasticPasswordEnv)
	})
	_ = config.Redacted
}

// No password in a value is echoed in an error (docs/design.md, "Transport security"): a
// broker or an address pasted with its credentials is refused, naming its key and line,
// with the password as *** and the host:port still shown.
func TestConfigErrorsHidePasswords(t *testing.T) {
	const es = "bus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"broker", "bus:\n  kind: kafka\n  brokers: [kafka:S3cretKafka@127.0.0.1:9092]\n",
			`judge.yaml:3: field "bus.brokers[0]": "kafka:***@127.0.0.1:9092": want host:port, without a user or password`},
		{"broker without port", "bus:\n  kind: kafka\n  brokers: [\"kafka:S3cretKafka@127.0.0.1\"]\n",
			`judge.yaml:3: field "bus.brokers[0]": "kafka:***@127.0.0.1": want host:port, without a user or password`},
		{"brokers as a string", "bus:\n  kind: kafka\n  brokers: kafka:S3cretKafka@127.0.0.1:9092\n",
			`judge.yaml:3: field "bus.brokers": string "kafka:..." where a list belongs`},
		{"malformed es url", es + "    addresses: [\"https://u:S3cretKafka/x@127.0.0.1:9200\"]\n",
			`judge.yaml:5: field "store.elastic.addresses[0]": credentials in the URL would be logged`},
		{"malformed alarm url", "bus: {kind: none}\nstatus: {alarm_url: \"http://u:S3cretKafka/x@alarm:8092\"}\n",
			`judge.yaml:2: field "status.alarm_url": credentials in the URL are refused`},
		{"alarm url without scheme", "bus: {kind: none}\nstatus: {alarm_url: \"u:S3cretKafka@alarm:8092\"}\n",
			`judge.yaml:2: field "status.alarm_url": "u:***@alarm:8092": want the alarm's base URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "S3cretKafka")
		})
	}
}
