package httpapi_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/testenv/certtest"
)

// serveTLS serves h over HTTPS with pair through Listen and Serve; it returns the address
// and the URL Serve logged.
func serveTLS(t *testing.T, pair certtest.Pair, h http.Handler) (addr string, logged string) {
	t.Helper()
	ln, err := httpapi.Listen("127.0.0.1:0", config.HTTPTLS{CertFile: pair.CertFile, KeyFile: pair.KeyFile})
	require.NoError(t, err)
	require.Equal(t, "https", httpapi.Scheme(ln))
	var logs strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- httpapi.Serve(ctx, ln, h, "test API", slog.New(slog.NewTextHandler(&logs, nil)), func(a string) { ready <- a })
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	addr = <-ready
	return addr, logs.String()
}

func ok() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
}

// An API served with http.tls answers HTTPS to a client that trusts its certificate,
// and nothing useful to a plain-HTTP client or one that does not trust it.
func TestServeTLS(t *testing.T) {
	pair := certtest.New(t, "api")
	addr, logged := serveTLS(t, pair, ok())
	require.Contains(t, logged, "addr=https://"+addr)

	res, err := certtest.Client(pair.Pool).Get("https://" + addr + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "ok", string(body))
	require.Equal(t, "HTTP/1.1", res.Proto)
	require.GreaterOrEqual(t, res.TLS.Version, uint16(tls.VersionTLS12))

	// Plain HTTP: the server answers 400 ("Client sent an HTTP request to an HTTPS
	// server") and never the handler.
	plain := &http.Client{Timeout: 10 * time.Second}
	res, err = plain.Get("http://" + addr + "/")
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, string(body), "HTTP request to an HTTPS server")

	// A client trusting other authorities refuses the certificate.
	other := certtest.New(t, "other")
	_, err = certtest.Client(other.Pool).Get("https://" + addr + "/")
	require.ErrorContains(t, err, "certificate signed by unknown authority")

	// TLS 1.1 and older are refused.
	old := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pair.Pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
	_, err = old.Get("https://" + addr + "/")
	require.Error(t, err)
}

// Without TLS files Listen serves plain HTTP, as before.
func TestListenPlain(t *testing.T) {
	ln, err := httpapi.Listen("127.0.0.1:0", config.HTTPTLS{})
	require.NoError(t, err)
	defer ln.Close()
	require.Equal(t, "http", httpapi.Scheme(ln))
}

// A certificate that does not load is an error naming the files, before listening.
func TestListenBadCert(t *testing.T) {
	pair := certtest.New(t, "api")
	_, err := httpapi.Listen("127.0.0.1:0", config.HTTPTLS{CertFile: pair.CertFile, KeyFile: "/nonexistent/api.key"})
	require.ErrorContains(t, err, `http.tls: cert_file "`+pair.CertFile+`" and key_file "/nonexistent/api.key": open /nonexistent/api.key: no such file or directory`)
	// The key of another certificate.
	other := certtest.New(t, "other")
	_, err = httpapi.Listen("127.0.0.1:0", config.HTTPTLS{CertFile: pair.CertFile, KeyFile: other.KeyFile})
	require.ErrorContains(t, err, "private key does not match public key")
}
