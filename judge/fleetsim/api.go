package fleetsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
)

// judgeAPI is the judge's public HTTP API, the only way the simulator reaches it: the
// agents' POST /v1/metrics, the balancer's POST /v1/rebalance and GET /healthz.
type judgeAPI struct {
	base  string
	token config.Secret
	hc    *http.Client

	batches, points, retries atomic.Int64
}

// retryFor bounds how long a batch the judge refuses for now (its store buffer is full:
// 503) is retried, as an agent keeps and resends it.
const retryFor = 2 * time.Minute

func newJudgeAPI(base string, token config.Secret, caFile string, conns int) (*judgeAPI, error) {
	hc, err := httpapi.Client(caFile, time.Minute)
	if err != nil {
		return nil, err
	}
	// Keep a connection per sender: net/http keeps 2 per host by default.
	if hc.Transport == nil {
		hc.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if t, ok := hc.Transport.(*http.Transport); ok {
		t.MaxIdleConnsPerHost = conns
	}
	return &judgeAPI{base: strings.TrimRight(base, "/"), token: token, hc: hc}, nil
}

// do sends a request and returns the answer's status and body, and how long its
// Retry-After asks to wait (0: none).
func (j *judgeAPI) do(ctx context.Context, method, path string, body []byte) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, j.base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if j.token != "" {
		req.Header.Set("Authorization", "Bearer "+j.token.Reveal())
	}
	resp, err := j.hc.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	wait, _ := httpapi.RetryAfter(resp.Header, time.Now())
	return resp.StatusCode, data, wait, err
}

// send posts one batch, resending it while the judge answers 503 or cannot be reached,
// for up to retryFor, after the answer's Retry-After when it is longer than the
// back-off (the judge's store buffer is full: resending sooner only adds to its load).
func (j *judgeAPI) send(ctx context.Context, b metric.Batch) error {
	body, err := metric.Encode(b)
	if err != nil {
		return fmt.Errorf("encode the batch of %s: %w", b.Node, err)
	}
	bo := backoff.New(10*time.Millisecond, time.Second)
	deadline := time.Now().Add(retryFor)
	for {
		code, answer, wait, err := j.do(ctx, http.MethodPost, "/v1/metrics", body)
		switch {
		case err == nil && code == http.StatusAccepted:
			j.batches.Add(1)
			j.points.Add(int64(len(b.Points)))
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && code != http.StatusServiceUnavailable:
			return fmt.Errorf("POST /v1/metrics of %s: HTTP %d: %s", b.Node, code, short(answer))
		case time.Now().After(deadline):
			if err == nil {
				err = fmt.Errorf("HTTP %d: %s", code, short(answer))
			}
			return fmt.Errorf("POST /v1/metrics of %s: still refused after %s: %w", b.Node, retryFor, err)
		}
		j.retries.Add(1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(bo.NextBackOff(), min(wait, time.Until(deadline)))):
		}
	}
}

// rebalance posts the balancer's request and returns the answer's body.
func (j *judgeAPI) rebalance(ctx context.Context, req api.RebalanceRequest) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	code, answer, _, err := j.do(ctx, http.MethodPost, "/v1/rebalance", body)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/rebalance: %w", err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("POST /v1/rebalance: HTTP %d: %s", code, short(answer))
	}
	return answer, nil
}

// historicalAsOf is GET /healthz's historical_as_of: when the judge's last historical
// refresh ran, by its clock (zero before the first).
func (j *judgeAPI) historicalAsOf(ctx context.Context) (time.Time, error) {
	code, answer, _, err := j.do(ctx, http.MethodGet, "/healthz", nil)
	if err != nil {
		return time.Time{}, err
	}
	if code != http.StatusOK {
		return time.Time{}, fmt.Errorf("GET /healthz: HTTP %d: %s", code, short(answer))
	}
	var h struct {
		AsOf time.Time `json:"historical_as_of"`
	}
	if err := json.Unmarshal(answer, &h); err != nil {
		return time.Time{}, fmt.Errorf("GET /healthz: %w", err)
	}
	return h.AsOf, nil
}

// errHistoryWait is the historical refresh not covering the history in time.
var errHistoryWait = errors.New("no historical refresh covered the history in time")

// awaitHistorical waits, up to wait, until the judge's historical refresh ran at or
// after asOf (by its clock).
func (j *judgeAPI) awaitHistorical(ctx context.Context, asOf time.Time, wait time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		got, err := j.historicalAsOf(ctx)
		if err == nil && !got.Before(asOf) {
			return got, nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return got, fmt.Errorf("%w: %w", errHistoryWait, err)
			}
			return got, errHistoryWait
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func short(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}
