package httpload

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo answers every POST with its body in upper case and counts the connections.
func echo(t *testing.T, conns *atomic.Int32) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST, got "+r.Method+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server: read body: %v", err)
		}
		if r.URL.Path == "/teapot" {
			w.WriteHeader(http.StatusTeapot)
		}
		w.Write([]byte(strings.ToUpper(string(b))))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// dial connects to srv, closing the connection when the test ends.
func dial(t *testing.T, srv *httptest.Server, timeout time.Duration) *Conn {
	t.Helper()
	c, err := Dial(srv.Listener.Addr().String(), timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPostKeepsTheConnection(t *testing.T) {
	var conns atomic.Int32
	srv := echo(t, &conns)
	c := dial(t, srv, 5*time.Second)
	var answer []byte
	for i := range 100 {
		body := strings.Repeat("ab", i*50) // up to 9,900 bytes: answers larger than one read
		code, got, err := c.Post("/echo", []byte(body), answer[:0])
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if code != http.StatusOK || string(got) != strings.ToUpper(body) {
			t.Fatalf("request %d: %d %.40q, want 200 %.40q", i, code, got, strings.ToUpper(body))
		}
		answer = got
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("100 requests took %d connections, want 1 (keep-alive)", n)
	}
	code, got, err := c.Post("/teapot", []byte("x"), nil)
	if err != nil || code != http.StatusTeapot || string(got) != "X" {
		t.Errorf("teapot: %d %q %v, want 418 \"X\"", code, got, err)
	}
}

func TestPostRedialsAClosedConnection(t *testing.T) {
	var conns atomic.Int32
	srv := echo(t, &conns)
	c := dial(t, srv, 5*time.Second)
	if _, _, err := c.Post("/echo", []byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections() // as an idle timeout would
	time.Sleep(50 * time.Millisecond)
	code, got, err := c.Post("/echo", []byte("b"), nil)
	if err != nil || code != http.StatusOK || string(got) != "B" {
		t.Fatalf("after the server closed the connection: %d %q %v, want 200 \"B\"", code, got, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}

	// A server that says Connection: close gets a new connection for the next request.
	srv.Config.SetKeepAlivesEnabled(false)
	for _, b := range []string{"c", "d"} {
		if code, got, err := c.Post("/echo", []byte(b), nil); err != nil || string(got) != strings.ToUpper(b) {
			t.Fatalf("without keep-alive: %d %q %v", code, got, err)
		}
	}
	if n := conns.Load(); n != 4 {
		t.Errorf("%d connections, want 4", n)
	}
}

func TestPostFailsOnAGoneServer(t *testing.T) {
	var conns atomic.Int32
	srv := echo(t, &conns)
	c := dial(t, srv, time.Second)
	srv.Close()
	if code, _, err := c.Post("/echo", []byte("a"), nil); err == nil {
		t.Fatalf("a closed server answered %d", code)
	}
}
