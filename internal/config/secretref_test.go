package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretRef: the variable wins over the file when set and non-empty; the file is
// read otherwise; Check names the key it is about, and accepts an unset variable.
func TestSecretRef(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))
	t.Setenv("SECRETREF_TEST", "")

	r := SecretRef{File: file, Env: "SECRETREF_TEST"}
	s, err := r.Resolve()
	require.NoError(t, err)
	require.Equal(t, "from-file", s.Reveal(), "an empty variable does not win")
	t.Setenv("SECRETREF_TEST", "from-env")
	s, err = r.Resolve()
	require.NoError(t, err)
	require.Equal(t, "from-env", s.Reveal())

	s, err = SecretRef{}.Resolve()
	require.NoError(t, err)
	require.Empty(t, s.Reveal())
	require.False(t, SecretRef{}.IsSet())

	require.NoError(t, SecretRef{Env: "UNSET_SECRETREF_VAR"}.Check("http.token"))
	require.EqualError(t, SecretRef{Env: "1X"}.Check("http.token"), `field "http.token_env": "1X" is not an environment variable name`)
	missing := filepath.Join(dir, "missing")
	require.ErrorContains(t, SecretRef{File: missing}.Check("store.elastic.password"), `field "store.elastic.password_file": read secret: open `+missing)
	require.NoError(t, SecretRef{File: missing, Env: "SECRETREF_TEST"}.Check("x"), "the variable is set: the file is not read")
}

// TestClientTLSCheckHTTPS: an HTTP client's tls block is refused for a plain http URL,
// and checked (files read) for an https one.
func TestClientTLSCheckHTTPS(t *testing.T) {
	var none *ClientTLS
	require.NoError(t, none.CheckHTTPS("sink.http.tls", false))
	require.EqualError(t, (&ClientTLS{}).CheckHTTPS("sink.http.tls", false), `field "sink.http.tls": set, but the URL is not https://`)
	require.NoError(t, (&ClientTLS{}).CheckHTTPS("sink.http.tls", true))
	missing := filepath.Join(t.TempDir(), "ca.pem")
	require.ErrorContains(t, (&ClientTLS{CAFile: missing}).CheckHTTPS("status.tls", true), `field "status.tls.ca_file": open `+missing)
	require.EqualError(t, (&ClientTLS{CertFile: "c"}).CheckHTTPS("status.tls", true), `field "status.tls.key_file": required with cert_file`)
}
