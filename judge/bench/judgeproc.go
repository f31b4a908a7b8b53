package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
)

// readyPrefix starts the line `binlake judge` prints on stdout once its API serves
// (cmd/binlake/judge.go); the address after it is the port the kernel picked.
const readyPrefix = "judge serving on http://"

// judgeProc is the running judge.
type judgeProc struct {
	*benchkit.Proc
	base string // http://127.0.0.1:port
	hc   *http.Client
}

// startJudge starts `binlake judge --config …` and returns once it answers GET /healthz.
func startJudge(ctx context.Context, e *env, out io.Writer) (*judgeProc, error) {
	p, err := benchkit.Start(ctx, benchkit.Spec{Role: "judge", Binary: e.binary, Args: []string{"judge", "--config", e.config},
		Dir: e.dir, Log: e.log, ReadyPrefix: readyPrefix}, out)
	if err != nil {
		return nil, err
	}
	j := &judgeProc{Proc: p, base: "http://" + p.Addr, hc: &http.Client{Timeout: 10 * time.Second}}
	if _, err := j.health(ctx); err != nil {
		return nil, errors.Join(err, j.Stop())
	}
	fmt.Fprintf(out, "judge API %s: POST /v1/metrics, POST /v1/placement, GET /healthz\n", j.base)
	return j, nil
}

// health is GET /healthz: the node count and the store buffer's counters.
type health struct {
	Nodes int `json:"nodes"`
	Store struct {
		Buffered    int64 `json:"buffered"`
		Dropped     int64 `json:"dropped"`
		Written     int64 `json:"written"`
		WriteErrors int64 `json:"write_errors"`
	} `json:"store"`
}

func (j *judgeProc) health(ctx context.Context) (health, error) {
	var h health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.base+"/healthz", nil)
	if err != nil {
		return h, err
	}
	resp, err := j.hc.Do(req)
	if err != nil {
		return h, fmt.Errorf("bench judge: GET /healthz: %w%s", err, j.ExitNote())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return h, fmt.Errorf("bench judge: GET /healthz: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("bench judge: GET /healthz: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("bench judge: GET /healthz: %w", err)
	}
	return h, nil
}
