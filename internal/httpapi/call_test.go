package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Call sends the method, the JSON body with its content type and the bearer token, reads
// at most Limit bytes (saying when there was more), and leaves the status to the caller;
// ErrorMessage reads an API error body, or gives the text as it is.
func TestCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/echo":
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "bad request shape", http.StatusBadRequest)
				return
			}
			w.Write(body)
		case r.URL.Path == "/bare":
			if r.Header.Get("Content-Type") != "" || r.Header.Get("Authorization") != "" || len(body) != 0 {
				http.Error(w, "sent what it should not", http.StatusBadRequest)
				return
			}
			w.Write([]byte("0123456789"))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"not_found","message":"unknown node \"x\""}}`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	a, err := Call(ctx, nil, Request{Method: http.MethodPost, URL: srv.URL + "/echo", Token: "s3cret", Body: []byte(`{"a":1}`), Limit: 100})
	if err != nil || !a.OK() || string(a.Body) != `{"a":1}` || a.Truncated {
		t.Fatalf("echo: %+v %v", a, err)
	}
	a, err = Call(ctx, srv.Client(), Request{Method: http.MethodGet, URL: srv.URL + "/bare", Limit: 4})
	if err != nil || !a.OK() || string(a.Body) != "0123" || !a.Truncated {
		t.Fatalf("bare, limit 4: %+v %v", a, err)
	}
	a, err = Call(ctx, nil, Request{Method: http.MethodGet, URL: srv.URL + "/nodes/x", Limit: 100})
	if err != nil || a.OK() || a.Status != http.StatusNotFound || a.StatusText != "404 Not Found" || ErrorMessage(a.Body) != `not_found: unknown node "x"` {
		t.Fatalf("404: %+v %v (%s)", a, err, ErrorMessage(a.Body))
	}
	if got := ErrorMessage([]byte("  plain text\n")); got != "plain text" {
		t.Fatalf("ErrorMessage of plain text: %q", got)
	}
	if _, err := Call(ctx, nil, Request{Method: http.MethodGet, URL: "http://127.0.0.1:1/x", Limit: 1}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("a refused connection: %v, want an error naming the URL", err)
	}
}

// TestRetryAfter reads both forms of the header (RFC 9110, 10.2.3), and nothing from a
// missing, malformed or negative one.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"2", 2 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true}, // a date past: at once
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		got, ok := RetryAfter(h, now)
		require.Equal(t, tc.ok, ok, "%q", tc.header)
		require.Equal(t, tc.want, got, "%q", tc.header)
	}
}
