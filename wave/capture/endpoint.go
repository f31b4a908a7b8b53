package capture

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// Endpoint is how the wave reaches a source and logs in: its address, user and password,
// and the TLS every connection uses when the instance's source.tls asks for it. One
// value for the binlog stream, the snapshot, the schema reads and the checks, so that
// none of them goes out in the clear where the others do not.
type Endpoint struct {
	Addr     string // host:port
	User     string
	Password string
	TLS      *tls.Config // nil: plain TCP
}

// EndpointOf is the endpoint of src with its password resolved: the TLS files src.TLS
// names are read here, on this wave's host. Without a server_name the certificate is
// checked against the address's host.
func EndpointOf(src cluster.Source, password string) (Endpoint, error) {
	ep := Endpoint{Addr: src.Addr, User: src.User, Password: password}
	if src.TLS == nil {
		return ep, nil
	}
	c, err := src.TLS.Load("source.tls")
	if err != nil {
		return Endpoint{}, fmt.Errorf("TLS to the source %s: %w", src.Addr, err)
	}
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(src.Addr); err == nil {
			c.ServerName = host
		}
	}
	ep.TLS = c
	return ep, nil
}

// connect opens a client connection within timeout, over TLS when the endpoint has it.
// A failure that TLS explains says so (TLSHint).
func (e Endpoint) connect(ctx context.Context, timeout time.Duration) (*client.Conn, error) {
	var opts []client.Option
	if e.TLS != nil {
		opts = append(opts, func(c *client.Conn) error { c.SetTLSConfig(e.TLS); return nil })
	}
	conn, err := client.ConnectWithContext(ctx, e.Addr, e.User, e.Password, "", timeout, opts...)
	if err != nil {
		return nil, TLSHint(err, e.TLS != nil)
	}
	return conn, nil
}

// SourceVersion is the version the source announces (SELECT VERSION()'s), read over
// the endpoint src and password make.
func SourceVersion(ctx context.Context, src cluster.Source, password string) (string, error) {
	ep, err := EndpointOf(src, password)
	if err != nil {
		return "", err
	}
	conn, err := ep.connect(ctx, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.GetServerVersion(), nil
}

// hintError is a failed connection with what explains it (TLSHint). ServerError keeps
// it whole: the hint would be lost with go-mysql's wrapping.
type hintError struct {
	err  error // ServerError's
	hint string
}

func (h *hintError) Error() string { return h.err.Error() + " (" + h.hint + ")" }
func (h *hintError) Unwrap() error { return h.err }

func hinted(err error, hint string) error { return &hintError{err: ServerError(err), hint: hint} }

// Hinted reports whether err says already what TLS has to do with it (TLSHint).
func Hinted(err error) bool {
	var h *hintError
	return errors.As(err, &h)
}

// Codes of the refusal of a plain connection by a server with require_secure_transport:
// MySQL's, and MariaDB's (10.5.2 and later).
const (
	erSecureTransportMySQL   = 3159
	erSecureTransportMariaDB = 4151
)

// TLSHint adds to a failed connection to a source what TLS has to do with it, when it
// does: a server that takes TLS connections only while tlsOn is false, a certificate
// the wave does not trust, a server that offers no TLS while tlsOn is true. Other errors
// are returned as they are. The error wrapped is kept (errors.As finds the server's).
func TLSHint(err error, tlsOn bool) error {
	var (
		me      *mysql.MyError
		unknown x509.UnknownAuthorityError
		name    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case err == nil:
		return nil
	case !tlsOn && errors.As(err, &me) && (me.Code == erSecureTransportMySQL || me.Code == erSecureTransportMariaDB ||
		strings.Contains(me.Message, "insecure transport")):
		return hinted(err, "the source takes TLS connections only: set the instance's source.tls, `tls: {ca_file: …}` or `tls: {}` for the system's CAs; binlake up: ?tls=true in the DSN, or -mysql-tls-ca")
	case errors.As(err, &unknown):
		return hinted(err, "source.tls.ca_file (binlake up: -mysql-tls-ca) must name the CA that signs the source's certificate")
	case errors.As(err, &name):
		return hinted(err, "the name in the source's certificate is not the address's host: set source.tls.server_name to it")
	case errors.As(err, &invalid):
		return hinted(err, "the source's certificate is not valid here: its dates, or its use")
	case tlsOn && strings.Contains(err.Error(), "does not support TLS"):
		return hinted(err, "source.tls is set, but the source offers no TLS: configure its ssl_cert and ssl_key, or remove source.tls")
	case !tlsOn && isAccessDenied(err):
		return hinted(err, "a user created REQUIRE SSL, X509 or ISSUER is refused this way without TLS: then set source.tls")
	}
	return err
}

// String names the endpoint for logs and errors, without its password: "host:port as
// user", and "over TLS" when it is.
func (e Endpoint) String() string {
	if e.TLS != nil {
		return e.Addr + " as " + e.User + " over TLS"
	}
	return e.Addr + " as " + e.User
}
