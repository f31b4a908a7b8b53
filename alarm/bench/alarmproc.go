package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
)

// readyPrefix starts the line `binlake alarm` prints on stdout once its API serves
// (cmd/binlake/alarm.go); the address after it is the port the kernel picked.
const readyPrefix = "alarm serving on http://"

// alarmProc is the running alarm.
type alarmProc struct {
	*benchkit.Proc
	metricsURL string
	hc         *http.Client
}

// startAlarm starts `binlake alarm --config … --policies … [--cpuprofile …]` and returns once its
// /metrics answers.
func startAlarm(ctx context.Context, e *env, cpuProfile string, out io.Writer) (*alarmProc, error) {
	args := []string{"alarm", "--config", e.config, "--policies", e.policies}
	if cpuProfile != "" {
		args = append(args, "--cpuprofile", cpuProfile)
	}
	p, err := benchkit.Start(ctx, benchkit.Spec{Role: "alarm", Binary: e.binary, Args: args, Dir: e.dir, Log: e.log, ReadyPrefix: readyPrefix}, out)
	if err != nil {
		return nil, err
	}
	a := &alarmProc{Proc: p, metricsURL: "http://" + p.Addr + "/metrics", hc: &http.Client{Timeout: 10 * time.Second}}
	if _, err := a.counters(ctx); err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	fmt.Fprintf(out, "alarm API http://%s, counters at %s\n", p.Addr, a.metricsURL)
	return a, nil
}

// counters scrapes the alarm's /metrics.
func (a *alarmProc) counters(ctx context.Context) (counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.metricsURL, nil)
	if err != nil {
		return counters{}, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return counters{}, fmt.Errorf("bench alarm: GET /metrics: %w%s", err, a.ExitNote())
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return counters{}, fmt.Errorf("bench alarm: GET /metrics: %s", resp.Status)
	}
	c, err := parseCounters(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return counters{}, fmt.Errorf("bench alarm: GET /metrics: %w", err)
	}
	return c, nil
}
