// Package certtest makes self-signed certificates for tests of TLS endpoints.
package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pair is a self-signed server certificate (its own CA) for 127.0.0.1, ::1 and
// localhost, written as PEM files in a test's temporary folder.
type Pair struct {
	CertFile, KeyFile string
	// CertPEM is the certificate, which is also the CA to trust.
	CertPEM []byte
	// Pool trusts the certificate.
	Pool *x509.CertPool
	// Cert is the certificate with its key, for servers built in the test.
	Cert tls.Certificate
}

// New makes a Pair named name (the files are <name>.crt and <name>.key).
func New(t testing.TB, name string) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	dir := t.TempDir()
	p := Pair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"), CertPEM: certPEM, Pool: x509.NewCertPool()}
	if err := os.WriteFile(p.CertFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.KeyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	p.Pool.AppendCertsFromPEM(certPEM)
	if p.Cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

// Client is an HTTP client that trusts only pool.
func Client(pool *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// ServesHTTPSOnly checks that addr answers GET path over HTTPS with a certificate pool
// trusts (200), and answers a plain-HTTP request with 400 (Go's "client sent an HTTP
// request to an HTTPS server"). It returns the HTTPS answer's Content-Type.
func ServesHTTPSOnly(t testing.TB, pool *x509.CertPool, addr, path string) string {
	t.Helper()
	res, err := Client(pool).Get("https://" + addr + path)
	if err != nil {
		t.Fatalf("GET https://%s%s: %v", addr, path, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET https://%s%s: %s: %s", addr, path, res.Status, body)
	}
	plain, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET http://%s%s: %v", addr, path, err)
	}
	plain.Body.Close()
	if plain.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET http://%s%s over plain HTTP: %s, want 400", addr, path, plain.Status)
	}
	return res.Header.Get("Content-Type")
}
