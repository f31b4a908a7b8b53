package config

import (
	"crypto/tls"
	"errors"
	"io/fs"
	"os"
)

// HTTPTLS is the http.tls: section of a role that serves an API: the server's
// certificate (PEM, the chain in leaf-first order) and its private key (PEM). Both empty
// serves plain HTTP; both set serves HTTPS only (TLS 1.2 or later).
type HTTPTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Enabled reports whether the section asks for TLS.
func (t HTTPTLS) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// Validate checks the section under prefix (e.g. "http.tls"): both files or neither,
// each readable (both reported), and together a certificate with its key. Errors name
// the key, never the key file's content.
func (t HTTPTLS) Validate(prefix string) error {
	if !t.Enabled() {
		return nil
	}
	switch {
	case t.CertFile == "":
		return Bad(prefix+".cert_file", "required with %s.key_file", prefix)
	case t.KeyFile == "":
		return Bad(prefix+".key_file", "required with %s.cert_file", prefix)
	}
	var errs []error
	for _, f := range []struct{ key, path string }{{"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if _, err := os.ReadFile(f.path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			errs = append(errs, Bad(prefix+"."+f.key, "%q: %w", f.path, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := t.Load(); err != nil {
		return Bad(prefix+".cert_file", "%q with key_file %q: %w", t.CertFile, t.KeyFile, err)
	}
	return nil
}

// Load reads the certificate and its key.
func (t HTTPTLS) Load() (tls.Certificate, error) {
	return tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
}
