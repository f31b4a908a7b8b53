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
	"github.com/binlake/binlake/judge/remotewrite"
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

// judgeConn is one keep-alive connection to the judge's API, for one sender or
// placement client. The load goes through httpload rather than net/http's Client: the
// bench shares the machine with the judge, and the Client's transport took as much CPU
// per request as the judge's answer (a fifth of a core at the judge's ingest rate).
type judgeConn struct {
	c      *httpload.Conn
	answer []byte
}

func dialJudge(base string) (*judgeConn, error) {
	c, err := httpload.Dial(strings.TrimPrefix(base, "http://"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	return &judgeConn{c: c}, nil
}

// post sends body to path and returns the answer's body (valid until the next post),
// or a statusError when the status is not want.
func (jc *judgeConn) post(path string, body []byte, want int) ([]byte, error) {
	return jc.postAs(path, "Content-Type: application/json", body, want)
}

// postAs is post with the request's header lines (httpload.Conn.PostAs).
func (jc *judgeConn) postAs(path, headers string, body []byte, want int) ([]byte, error) {
	code, answer, err := jc.c.PostAs(path, headers, body, jc.answer[:0])
	jc.answer = answer
	if err != nil {
		return nil, err
	}
	if code != want {
		return nil, &statusError{code: code, body: string(bytes.TrimSpace(answer[:min(len(answer), 300)]))}
	}
	return answer, nil
}

func (jc *judgeConn) close() { jc.c.Close() }

// send posts a node's encoded batch to POST /v1/metrics, which answers 202. The
// connection's timeout bounds it rather than ctx: the judge answers a batch at once or
// refuses it.
func (jc *judgeConn) send(_ context.Context, _ string, body []byte, _ int) error {
	_, err := jc.post("/v1/metrics", body, http.StatusAccepted)
	return err
}

// rwConn posts batches as Prometheus remote-write requests.
type rwConn struct{ *judgeConn }

// send posts a snappy WriteRequest (encodeRemoteWrite) to POST /api/v1/write, which
// answers 204.
func (rc rwConn) send(_ context.Context, _ string, body []byte, _ int) error {
	_, err := rc.postAs("/api/v1/write", remoteWriteHeaders, body, http.StatusNoContent)
	return err
}

// remoteWriteHeaders are the header lines Prometheus sends with a 1.0 request.
const remoteWriteHeaders = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0"

// encodeRemoteWrite encodes a batch as Prometheus would remote-write it: a series per
// point, its name as __name__, the node as a node label beside the point's labels.
func encodeRemoteWrite(b metric.Batch) []byte {
	ms := b.TS.UnixMilli()
	series := make([]remotewrite.Series, len(b.Points))
	for i, p := range b.Points {
		ls := make([]remotewrite.Label, 0, 2+len(p.Labels))
		ls = append(ls, remotewrite.Label{Name: "__name__", Value: p.Name}, remotewrite.Label{Name: "node", Value: b.Node})
		for k, v := range p.Labels {
			ls = append(ls, remotewrite.Label{Name: k, Value: v})
		}
		series[i] = remotewrite.Series{Labels: ls, Samples: []remotewrite.Sample{{Value: p.Value, TimestampMs: ms}}}
	}
	return remotewrite.Encode(series)
}

// errNoNode is a 200 answer to a placement without a node.
var errNoNode = errors.New(`placement answer without "node"`)

// place posts one placement request and returns the answer's size. With check it
// decodes the answer and requires a node: only "node" is relied on, as the rest of
// the answer's shape is the judge's to change.
func (jc *judgeConn) place(body []byte, check bool) (int, error) {
	answer, err := jc.post("/v1/placement", body, http.StatusOK)
	if err != nil {
		return 0, err
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
