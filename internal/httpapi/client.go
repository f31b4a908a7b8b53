package httpapi

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// Client is an HTTP client for another role's API (the judge's, the alarm's): with
// caFile it trusts the CAs in that PEM file instead of the system's, for an API served
// with a private certificate (http.tls); without, the system's.
func Client(caFile string, timeout time.Duration) (*http.Client, error) {
	c := &http.Client{Timeout: timeout}
	if caFile == "" {
		return c, nil
	}
	pool, _, err := config.LoadCAPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	return TLSClient(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, timeout), nil
}

// TLSClient is an HTTP client for another role's API with the TLS configuration tc, a
// section's tls block as config.ClientTLS loads it; nil keeps the system's CAs.
func TLSClient(tc *tls.Config, timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout}
	if tc != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tc
		c.Transport = t
	}
	return c
}
