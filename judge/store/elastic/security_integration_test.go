package elastic_test

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/certtest"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

const (
	proxyUser     = "binlake"
	proxyPassword = "pw-Zq81-secret"
	proxyKeyID    = "key-id-1"
	proxyKey      = "apikey-Xv42-secret"
)

// secureEngine is the test engine behind a TLS-terminating reverse proxy that requires
// basic auth (proxyUser, proxyPassword) or an API key (proxyKeyID:proxyKey), as an
// engine with security on does, and answers 401 with the engine's error body otherwise.
// It returns the proxy's URL and a CA file that trusts it.
func secureEngine(t *testing.T) (addr, caFile string) {
	t.Helper()
	target, err := url.Parse(strings.Split(testenv.Require(t, testenv.Elasticsearch), ",")[0])
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	wantKey := base64.StdEncoding.EncodeToString([]byte(proxyKeyID + ":" + proxyKey))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, basic := r.BasicAuth()
		// The engine reads the scheme case-insensitively (the client sends "APIKey").
		scheme, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		ok := basic && user == proxyUser && subtle.ConstantTimeCompare([]byte(pw), []byte(proxyPassword)) == 1 ||
			strings.EqualFold(scheme, "ApiKey") && subtle.ConstantTimeCompare([]byte(key), []byte(wantKey)) == 1
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="security" charset="UTF-8"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			reason := "missing authentication credentials for REST request [" + r.URL.Path + "]"
			if basic {
				reason = "unable to authenticate user [" + user + "] for REST request [" + r.URL.Path + "]"
			}
			w.Write([]byte(`{"error":{"root_cause":[{"type":"security_exception","reason":"` + reason + `"}],"type":"security_exception","reason":"` + reason + `"},"status":401}`))
			return
		}
		r.Header.Del("Authorization") // the engine behind runs without security
		proxy.ServeHTTP(w, r)
	}))
	// The handshakes the wrong-CA cases break are expected: not logged.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, caFile
}

// trust is the client TLS configuration trusting the CAs in caFile, as store.elastic.tls
// gives it.
func trust(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	c, err := (&config.ClientTLS{CAFile: caFile}).Load("store.elastic.tls")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// secureStore opens a store on conn with few, quick retries.
func secureStore(t *testing.T, conn elastic.Conn, prefix string) *elastic.Store {
	t.Helper()
	cfg, err := conn.ClientConfig()
	if err != nil {
		t.Fatalf("client config: %v", err)
	}
	s, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, MaxRetries: 1,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The store talks TLS (trusting ca_file) and basic auth or an API key to the engine:
// points written come back; a wrong CA, a wrong password and a wrong key fail with
// errors that say why and never hold the secret.
func TestElasticTLSAuthIntegration(t *testing.T) {
	addr, caFile := secureEngine(t)
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	ts := time.Date(2017, 6, 6, 6, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	roundTrip := func(t *testing.T, s *elastic.Store, node string) {
		t.Helper()
		if err := s.Write(ctx, []store.Point{{Node: node, Name: "cpu.util", TS: ts, Value: 42}}); err != nil {
			t.Fatalf("write: %v", err)
		}
		if err := s.Refresh(ctx); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		got, err := s.Stats(ctx, store.Query{Node: node, Name: "cpu.util", From: ts, To: ts.Add(time.Hour)})
		if err != nil || got.Count != 1 || got.Avg != 42 {
			t.Fatalf("stats: %+v, %v; want the point written", got, err)
		}
	}
	t.Run("basic auth", func(t *testing.T) {
		s := secureStore(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, caFile), Username: proxyUser, Password: proxyPassword}, prefix)
		roundTrip(t, s, "w-basic")
	})
	t.Run("api key id:key", func(t *testing.T) {
		s := secureStore(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, caFile), APIKey: proxyKeyID + ":" + proxyKey}, prefix)
		roundTrip(t, s, "w-key")
	})
	t.Run("api key encoded", func(t *testing.T) {
		enc := config.Secret(base64.StdEncoding.EncodeToString([]byte(proxyKeyID + ":" + proxyKey)))
		s := secureStore(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, caFile), APIKey: enc}, prefix)
		roundTrip(t, s, "w-key-enc")
	})

	fails := func(t *testing.T, conn elastic.Conn, want ...string) {
		t.Helper()
		s := secureStore(t, conn, prefix)
		err := s.Write(ctx, []store.Point{{Node: "w-fail", Name: "cpu.util", TS: ts, Value: 1}})
		if err == nil {
			t.Fatal("write succeeded")
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		for _, secret := range []string{proxyPassword, proxyKey, "wrong-pw-secret", "wrong-key-secret",
			base64.StdEncoding.EncodeToString([]byte(proxyKeyID + ":wrong-key-secret"))} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds a secret", err)
			}
		}
		t.Logf("as expected: %v", err)
	}
	t.Run("system CAs", func(t *testing.T) {
		fails(t, elastic.Conn{Addresses: []string{addr}, Username: proxyUser, Password: proxyPassword},
			"certificate signed by unknown authority")
	})
	t.Run("wrong CA", func(t *testing.T) {
		other := certtest.New(t, "other")
		fails(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, other.CertFile), Username: proxyUser, Password: proxyPassword},
			"certificate signed by unknown authority")
	})
	t.Run("wrong password", func(t *testing.T) {
		fails(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, caFile), Username: proxyUser, Password: "wrong-pw-secret"},
			"401", "security_exception", "unable to authenticate user [binlake]")
	})
	t.Run("wrong api key", func(t *testing.T) {
		fails(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, caFile), APIKey: proxyKeyID + ":wrong-key-secret"},
			"401", "security_exception")
	})
	t.Run("no credentials", func(t *testing.T) {
		fails(t, elastic.Conn{Addresses: []string{addr}, TLS: trust(t, caFile)}, "401", "missing authentication credentials")
	})
}

// ClientConfig checks its credentials and sets its TLS without contacting the engine
// (store.elastic.tls's files are the config's to check: config.ClientTLS).
func TestConnClientConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		conn elastic.Conn
		want string
	}{
		{"both auths", elastic.Conn{Username: "u", Password: "p", APIKey: "k"}, "elastic store: set username/password or an API key, not both"},
		{"password alone", elastic.Conn{Password: "p"}, "elastic store: a password without username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.conn.ClientConfig()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ClientConfig: %v, want %q", err, tc.want)
			}
		})
	}
	pair := certtest.New(t, "es")
	cfg, err := elastic.Conn{Addresses: []string{"https://h:9200"}, TLS: trust(t, pair.CertFile), APIKey: "id:key"}.ClientConfig()
	tr, _ := cfg.Transport.(*http.Transport)
	if err != nil || cfg.APIKey != base64.StdEncoding.EncodeToString([]byte("id:key")) || tr == nil || tr.TLSClientConfig.RootCAs == nil || cfg.Username != "" {
		t.Fatalf("ClientConfig: %+v, %v", cfg, err)
	}
}
