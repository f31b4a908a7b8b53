package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv/certtest"
)

// http.tls: a readable certificate and its key pass; a missing key file, a file that
// is not PEM and a key of another certificate are errors naming the key and the files.
func TestHTTPTLSValidate(t *testing.T) {
	pair := certtest.New(t, "api")
	other := certtest.New(t, "other")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not pem"), 0o600))

	h := config.HTTP{TLS: config.HTTPTLS{CertFile: pair.CertFile, KeyFile: pair.KeyFile}}
	require.NoError(t, h.Validate("127.0.0.1:1", ""))
	require.True(t, h.TLS.Enabled())

	for _, tc := range []struct {
		name string
		in   config.HTTPTLS
		want string
	}{
		{"missing key", config.HTTPTLS{CertFile: pair.CertFile, KeyFile: "/nonexistent/k.pem"}, `field "http.tls.key_file": "/nonexistent/k.pem": no such file or directory`},
		{"not pem", config.HTTPTLS{CertFile: junk, KeyFile: pair.KeyFile}, `field "http.tls.cert_file": "` + junk + `" with key_file "` + pair.KeyFile + `": tls: failed to find any PEM data in certificate input`},
		{"key of another", config.HTTPTLS{CertFile: pair.CertFile, KeyFile: other.KeyFile}, "private key does not match public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := config.HTTP{TLS: tc.in}
			require.ErrorContains(t, h.Validate("127.0.0.1:1", ""), tc.want)
		})
	}
}
