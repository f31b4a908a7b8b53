package config

import (
	"crypto/tls"
	"errors"
)

// ClientTLS is the tls: block of every section in which the suite is a client: Kafka
// (bus, sink.kafka), Elasticsearch (store.elastic), the judge (the agent's sink.http,
// the wave's balancer) and the alarm (the judge's status). The same four keys, checked
// the same way, wherever a role connects out. For Kafka the block's presence turns TLS
// on (`tls: {}` trusts the system's CAs); over HTTP the URL's scheme does, and the block
// says whom to trust and what to present.
type ClientTLS struct {
	// CAFile is a PEM file of the CAs that sign the server's certificate; the system's
	// CAs when empty.
	CAFile string `json:"ca_file,omitempty" yaml:"ca_file"`
	// CertFile and KeyFile are the client's PEM certificate and key, for a server that
	// requires a client certificate; both or neither.
	CertFile string `json:"cert_file,omitempty" yaml:"cert_file"`
	KeyFile  string `json:"key_file,omitempty" yaml:"key_file"`
	// ServerName is the name checked in the server's certificate; by default the host
	// of the address dialled.
	ServerName string `json:"server_name,omitempty" yaml:"server_name"`
	// InsecureSkipVerify accepts any server certificate. For tests only: it allows a
	// man in the middle.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty" yaml:"insecure_skip_verify"`
}

// Check checks the block at the key prefix ("bus.tls", "store.elastic.tls") as the role
// will use it at start: the keys, then the files read (so that --check finds a wrong
// path). A nil block (no tls key) is fine. Every problem is reported, joined.
func (t *ClientTLS) Check(prefix string) error {
	if t == nil {
		return nil
	}
	errs := []error{t.CheckKeys(prefix)}
	files := *t
	if (t.CertFile == "") != (t.KeyFile == "") {
		files.CertFile, files.KeyFile = "", "" // half a pair: only the CA file is read
	}
	if _, err := files.Load(prefix); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckKeys is Check without reading the files, for a block used on other hosts than the
// one checking it (a wave instance's source.tls, stored in the coordinator: each wave
// reads the files on its own host).
func (t *ClientTLS) CheckKeys(prefix string) error {
	if t == nil {
		return nil
	}
	var errs []error
	if (t.CertFile == "") != (t.KeyFile == "") {
		if t.CertFile == "" {
			errs = append(errs, Bad(prefix+".cert_file", "required with key_file"))
		} else {
			errs = append(errs, Bad(prefix+".key_file", "required with cert_file"))
		}
	}
	if t.InsecureSkipVerify && t.CAFile != "" {
		errs = append(errs, Bad(prefix+".insecure_skip_verify", "set with ca_file: the CA would not be checked; set one of them"))
	}
	return errors.Join(errs...)
}

// Load builds the client TLS configuration: it reads the CA file and the client's
// certificate and key, both problems reported, joined. prefix is the tls key's path, for
// the errors ("bus.tls"). A nil t (no tls key) gives nil: plaintext for Kafka, the
// system's CAs over https.
func (t *ClientTLS) Load(prefix string) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	var errs []error
	if t.CAFile != "" {
		pool, _, err := LoadCAPool(t.CAFile)
		if err != nil {
			errs = append(errs, Bad(prefix+".ca_file", "%w", err))
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			// tls.LoadX509KeyPair's errors name the problem, never the key's bytes.
			errs = append(errs, Bad(prefix+".cert_file", "%q with key_file %q: %w", t.CertFile, t.KeyFile, err))
		}
		c.Certificates = []tls.Certificate{cert}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// CheckHTTPS checks the block of an HTTP client at prefix whose URLs are https when
// https is true: a block for plain http URLs would be silently unused.
func (t *ClientTLS) CheckHTTPS(prefix string, https bool) error {
	if t == nil {
		return nil
	}
	if !https {
		return Bad(prefix, "set, but the URL is not https://")
	}
	return t.Check(prefix)
}
