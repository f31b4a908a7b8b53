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
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	c.Transport = t
	return c, nil
}
