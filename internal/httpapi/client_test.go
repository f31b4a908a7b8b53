package httpapi_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/testenv/certtest"
)

// TestClientTrustsCAFile: a client given the CA of an API's private certificate reaches
// it; one without (the system's CAs) is refused; a bad CA file is an error naming it.
func TestClientTrustsCAFile(t *testing.T) {
	pair := certtest.New(t, "judge")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair.Cert}}
	srv.StartTLS()
	defer srv.Close()

	c, err := httpapi.Client(pair.CertFile, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("with the CA file: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("with the CA file: %s", res.Status)
	}
	plain, _ := httpapi.Client("", 5*time.Second)
	if _, err := plain.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA file: %v, want a certificate error", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	if _, err := httpapi.Client(junk, time.Second); err == nil || !strings.Contains(err.Error(), junk+" holds no PEM certificate") {
		t.Fatalf("bad CA file: %v", err)
	}
}
