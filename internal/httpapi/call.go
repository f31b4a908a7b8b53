package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// Request is one call to another role's API: the method, the URL, the bearer token
// (none when empty), the JSON body (none when nil) and how much of the answer to read.
type Request struct {
	Method, URL string
	Token       config.Secret
	Body        []byte
	Limit       int64
}

// Answer is what the API answered: the status, and at most the request's Limit bytes of
// the body; Truncated says the body was longer.
type Answer struct {
	Status     int
	StatusText string // "404 Not Found"
	Body       []byte
	Truncated  bool
	Header     http.Header // the answer's headers (Retry-After of a 503: RetryAfter)
}

// OK reports a 2xx status.
func (a Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

// Call sends r with hc (http.DefaultClient when nil). A request that fails, or an answer
// that cannot be read, is an error; the status is the caller's to judge, with the API's
// own message (ErrorMessage) when it is not what the caller wanted.
func Call(ctx context.Context, hc *http.Client, r Request) (Answer, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return Answer{}, err
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token.Reveal())
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, err // *url.Error: names the method and the URL
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, r.Limit+1))
	if err != nil {
		return Answer{}, fmt.Errorf("%s %s: read the answer: %w", r.Method, req.URL.Redacted(), err)
	}
	a := Answer{Status: resp.StatusCode, StatusText: resp.Status, Body: data, Header: resp.Header}
	if int64(len(data)) > r.Limit {
		a.Body, a.Truncated = data[:r.Limit], true
	}
	return a, nil
}

// ErrorMessage is the message of an API error body ({"error":{"code","message"}}, as
// Errors writes them), or the body itself, trimmed.
func ErrorMessage(body []byte) string {
	var e struct {
		Error struct {
			Code, Message string
		}
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	return string(bytes.TrimSpace(body))
}

// RetryAfter is how long h's Retry-After asks a client to wait from now: a number of
// seconds, or an HTTP date (0 when it is past); ok is false when h has none or one that
// is neither (a negative or fractional number of seconds too).
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
