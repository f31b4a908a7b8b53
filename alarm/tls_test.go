package alarm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/testenv/certtest"
)

// The alarm's API over HTTPS (http.tls from alarm.yaml): a client trusting the
// certificate gets 200, a plain-HTTP client a 400; a missing certificate fails the
// config naming the key.
func TestRunServesHTTPS(t *testing.T) {
	pair := certtest.New(t, "alarm")
	p := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("bus: {kind: none}\nchannels: {l: {kind: log}}\nhttp:\n  listen: 127.0.0.1:0\n  tls: {cert_file: %q, key_file: %q}\n",
		pair.CertFile, pair.KeyFile)), 0o600))
	cfg, err := Load(p)
	require.NoError(t, err)

	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	addrc := make(chan string, 1)
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c, Logger: quiet, Listen: cfg.HTTP.Listen, TLS: cfg.HTTP.TLS, Ready: func(addr string) { addrc <- addr }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("alarm stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("alarm did not start")
	}

	certtest.ServesHTTPSOnly(t, pair.Pool, addr, "/v1/alerts")

	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("bus: {kind: none}\nchannels: {l: {kind: log}}\nhttp:\n  tls: {cert_file: /nonexistent/alarm.crt, key_file: %q}\n",
		pair.KeyFile)), 0o600))
	_, err = Load(p)
	require.ErrorContains(t, err, `alarm.yaml:4: field "http.tls.cert_file": "/nonexistent/alarm.crt": no such file or directory`)
}
