package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/httpload"
	"github.com/binlake/binlake/internal/metric"
)

// client talks to the judge's API over keep-alive connections of its own pool, so that
// the placement clients and the ingest senders do not share connections.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string, conns int) *client {
	return &client{base: base, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, DisableCompression: true,
		IdleConnTimeout: time.Minute,
	}}}
}

// statusError is an answer other than the expected status.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// errorKey names an error for the report's counts: the HTTP status, or its kind.
func errorKey(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		return fmt.Sprint(se.code)
	}
	if errors.Is(err, errNoNode) {
		return "200 without node"
	}
	return "transport"
}

func (c *client) post(ctx context.Context, path string, body []byte, want int, answer *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer.Reset()
	if _, err := answer.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != want {
		return &statusError{code: resp.StatusCode, body: string(bytes.TrimSpace(answer.Bytes()[:min(answer.Len(), 300)]))}
	}
	return nil
}

// sendBatch posts one metric batch to POST /v1/metrics, which answers 202.
func (c *client) sendBatch(ctx context.Context, b metric.Batch, scratch *bytes.Buffer) error {
	data, err := metric.Encode(b)
	if err != nil {
		return fmt.Errorf("bench judge: encode batch of %s: %w", b.Node, err)
	}
	return c.post(ctx, "/v1/metrics", data, http.StatusAccepted, scratch)
}

// errNoNode is a 200 answer to a placement without a node.
var errNoNode = errors.New(`placement answer without "node"`)

// placeConn is one placement client's keep-alive connection. The placement load goes
// through httpload rather than net/http's Client: the bench shares the machine with the
// judge, and the Client's transport took as much CPU per request as the judge's answer.
type placeConn struct {
	c      *httpload.Conn
	answer []byte
}

func dialPlacement(base string) (*placeConn, error) {
	c, err := httpload.Dial(strings.TrimPrefix(base, "http://"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	return &placeConn{c: c}, nil
}

// place posts one placement request and returns the answer's size. With check it
// decodes the answer and requires a node: only "node" is relied on, as the rest of
// the answer's shape is the judge's to change.
func (p *placeConn) place(body []byte, check bool) (int, error) {
	code, answer, err := p.c.Post("/v1/placement", body, p.answer[:0])
	p.answer = answer
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, &statusError{code: code, body: string(bytes.TrimSpace(answer[:min(len(answer), 300)]))}
	}
	if check {
		var a struct {
			Node string `json:"node"`
		}
		if err := json.Unmarshal(answer, &a); err != nil || a.Node == "" {
			return len(answer), fmt.Errorf("%w: %.200s", errNoNode, answer)
		}
	}
	return len(answer), nil
}

func (p *placeConn) close() { p.c.Close() }
