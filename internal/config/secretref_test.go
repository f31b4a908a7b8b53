package config

import (
	"os"
	"path/filepath"
	"strings"
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

// A bearer token is one header word: a token file of two lines, or with a space inside,
// is refused naming the file, never the token; surrounding space is trimmed as before.
func TestResolveToken(t *testing.T) {
	dir := t.TempDir()
	for content, ok := range map[string]bool{
		"s3cret\n":                     true,
		"  s3cret-with.dots_and~+/=\n": true,
		"Sup3r secret\ttoken\nline2":   false,
		"two\nlines\n":                 false,
		"tab\there":                    false,
	} {
		f := filepath.Join(dir, "tok")
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		tok, err := SecretRef{File: f}.ResolveToken()
		if ok {
			if err != nil || tok.Reveal() != strings.TrimSpace(content) {
				t.Errorf("%q: %q, %v", content, tok.Reveal(), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "the token in file "+f+" has a space") {
			t.Errorf("%q: err %v", content, err)
		}
		if err != nil && strings.Contains(err.Error(), "Sup3r") {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}
