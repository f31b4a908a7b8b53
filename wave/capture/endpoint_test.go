package capture

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv/certtest"
	"github.com/binlake/binlake/wave/cluster"
)

// TLSHint says what TLS has to do with a refused connection, and only then; the
// server's error stays inside (errors.As), and ServerError keeps the hint.
func TestTLSHint(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("handleAuthResult: %w", err) }
	tests := []struct {
		name  string
		err   error
		tlsOn bool
		want  string // "" : returned as it is
	}{
		{"mysql require_secure_transport", wrapped(mysql.NewError(3159, "Connections using insecure transport are prohibited while --require_secure_transport=ON.")), false, "takes TLS connections only"},
		{"mariadb require_secure_transport", wrapped(mysql.NewError(4151, "Connections using insecure transport are prohibited")), false, "takes TLS connections only"},
		{"access denied in the clear", wrapped(mysql.NewError(mysql.ER_ACCESS_DENIED_ERROR, "Access denied")), false, "REQUIRE SSL"},
		{"access denied over TLS", wrapped(mysql.NewError(mysql.ER_ACCESS_DENIED_ERROR, "Access denied")), true, ""},
		{"unknown CA", wrapped(x509.UnknownAuthorityError{}), true, "ca_file"},
		{"wrong name", wrapped(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "db"}), true, "server_name"},
		{"expired", wrapped(x509.CertificateInvalidError{Reason: x509.Expired}), true, "its dates"},
		{"no TLS on the server", errors.New("the MySQL Server does not support TLS required by the client"), true, "offers no TLS"},
		{"unrelated", errors.New("dial tcp: connection refused"), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := TLSHint(tc.err, tc.tlsOn)
			if tc.want == "" {
				if got != tc.err || Hinted(got) {
					t.Fatalf("TLSHint = %v, want the error as it is", got)
				}
				return
			}
			if !strings.Contains(got.Error(), tc.want) || !Hinted(got) || ServerError(got) != got {
				t.Fatalf("TLSHint = %v, want %q in it, kept by ServerError", got, tc.want)
			}
			var me *mysql.MyError
			if errors.As(tc.err, &me) && !errors.As(got, &me) {
				t.Fatalf("the server's error is lost in %v", got)
			}
		})
	}
}

// EndpointOf reads source.tls's files here, and checks the certificate against the
// address's host unless server_name says another name.
func TestEndpointOf(t *testing.T) {
	src := cluster.Source{Addr: "db.internal:3306", User: "repl"}
	ep, err := EndpointOf(src, "pw")
	if err != nil || ep.TLS != nil || ep.String() != "db.internal:3306 as repl" {
		t.Fatalf("without tls: %+v, %v", ep, err)
	}
	ca := certtest.New(t, "ca")
	src.TLS = &config.ClientTLS{CAFile: ca.CertFile}
	ep, err = EndpointOf(src, "pw")
	if err != nil || ep.TLS == nil || ep.TLS.ServerName != "db.internal" || ep.TLS.RootCAs == nil || !strings.HasSuffix(ep.String(), "over TLS") {
		t.Fatalf("with a CA: %+v, %v", ep.TLS, err)
	}
	src.TLS.ServerName = "mysql.example"
	if ep, err = EndpointOf(src, "pw"); err != nil || ep.TLS.ServerName != "mysql.example" {
		t.Fatalf("with server_name: %v", err)
	}
	src.TLS = &config.ClientTLS{CAFile: "/nowhere/ca.pem"}
	if _, err := EndpointOf(src, "pw"); err == nil || !strings.Contains(err.Error(), "source.tls.ca_file") || !strings.Contains(err.Error(), "db.internal:3306") {
		t.Fatalf("an absent CA file: %v, want source.tls.ca_file and the source named", err)
	}
}
