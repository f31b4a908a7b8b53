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
)

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

// batchConn posts metric batches over one keep-alive connection of its own: the senders
// share the machine with the judge, and net/http's client plus a fresh encoding per
// batch took a fifth of a core at the judge's ingest rate.
type batchConn struct {
	c      *httpload.Conn
	answer []byte
}

func dialBatches(base string) (*batchConn, error) {
	c, err := httpload.Dial(strings.TrimPrefix(base, "http://"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	return &batchConn{c: c}, nil
}

// send posts a node's encoded batch to POST /v1/metrics, which answers 202. The
// connection's timeout bounds it rather than ctx: the judge answers a batch at once or
// refuses it.
func (bc *batchConn) send(_ context.Context, _ string, body []byte, _ int) error {
	code, answer, err := bc.c.Post("/v1/metrics", body, bc.answer[:0])
	bc.answer = answer
	if err != nil {
		return err
	}
	if code != http.StatusAccepted {
		return &statusError{code: code, body: string(bytes.TrimSpace(answer[:min(len(answer), 300)]))}
	}
	return nil
}

func (bc *batchConn) close() { bc.c.Close() }

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
