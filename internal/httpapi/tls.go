package httpapi

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/binlake/binlake/internal/config"
)

// ServerTLS returns the TLS configuration of a server with the certificate and key of
// t (TLS 1.2 at least, HTTP/1.1), or nil when t sets no files.
func ServerTLS(t config.HTTPTLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := t.Load()
	if err != nil {
		return nil, fmt.Errorf("http.tls: cert_file %q and key_file %q: %w", t.CertFile, t.KeyFile, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"},
	}, nil
}

// tlsListener is a listener whose connections speak TLS; Serve tells HTTPS from HTTP by it.
type tlsListener struct{ net.Listener }

// TLSListener wraps ln so that its connections speak TLS with cfg; a nil cfg returns ln.
func TLSListener(ln net.Listener, cfg *tls.Config) net.Listener {
	if cfg == nil {
		return ln
	}
	return tlsListener{tls.NewListener(ln, cfg)}
}

// Listen listens on the TCP address addr, over TLS when t sets its files; the error
// names addr (a port in use) or the files (a certificate that does not load).
func Listen(addr string, t config.HTTPTLS) (net.Listener, error) {
	cfg, err := ServerTLS(t)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return TLSListener(ln, cfg), nil
}

// Scheme is "https" for a listener from TLSListener (or Listen with TLS), else "http".
func Scheme(ln net.Listener) string {
	if _, ok := ln.(tlsListener); ok {
		return "https"
	}
	return "http"
}
