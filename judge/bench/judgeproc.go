package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readyPrefix starts the line `binlake judge` prints on stdout once its API serves
// (cmd/binlake/judge.go); the address after it is the port the kernel picked.
const readyPrefix = "judge serving on http://"

// Time limits of the judge process.
const (
	startTimeout = 30 * time.Second
	// stopTimeout covers the judge's own shutdown: HTTP shutdown (10 s) and writing
	// what is buffered (store.buffer.close_timeout, 10 s).
	stopTimeout = 25 * time.Second
)

// judgeProc is the running judge.
type judgeProc struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port
	log     string
	hc      *http.Client
	exited  chan struct{}
	err     error // of Wait, once exited is closed
	stopped bool  // stop ran (it is idempotent)
}

// startJudge starts `binlake judge --config …` and returns once it answers GET /healthz.
func startJudge(ctx context.Context, e *env, out io.Writer) (*judgeProc, error) {
	logf, err := os.Create(e.log)
	if err != nil {
		return nil, fmt.Errorf("bench judge: %w", err)
	}
	j := &judgeProc{log: e.log, exited: make(chan struct{}), hc: &http.Client{Timeout: 10 * time.Second}}
	j.cmd = exec.Command(e.binary, "judge", "--config", e.config)
	j.cmd.Dir = e.dir
	j.cmd.Stderr = logf
	stdout, err := j.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench judge: %w", err)
	}
	if err := j.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench judge: start %s: %w", e.binary, err)
	}
	fmt.Fprintf(out, "started %s judge --config %s (pid %d)\n", e.binary, e.config, j.cmd.Process.Pid)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, readyPrefix); ok {
				select {
				case addr <- strings.Fields(rest + " ")[0]:
				default:
				}
			}
			fmt.Fprintln(logf, line)
		}
		io.Copy(logf, stdout)
		j.err = j.cmd.Wait()
		logf.Close()
		close(j.exited)
	}()
	fail := func(err error) (*judgeProc, error) { return nil, errors.Join(err, j.stop()) }
	select {
	case a := <-addr:
		j.base = "http://" + a
	case <-j.exited:
		return nil, fmt.Errorf("bench judge: the judge exited before serving: %v%s", j.err, j.logTail())
	case <-time.After(startTimeout):
		return fail(fmt.Errorf("bench judge: the judge did not serve within %s%s", startTimeout, j.logTail()))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if _, err := j.health(ctx); err != nil {
		return fail(err)
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
		return h, fmt.Errorf("bench judge: GET /healthz: %w%s", err, j.exitNote())
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

// cpu is the judge's CPU time so far (user + system), from /proc/<pid>/stat.
func (j *judgeProc) cpu() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", j.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(data)
}

// clockTick is USER_HZ, the unit of utime and stime: 100 on every Linux ABI Go runs on.
const clockTick = 10 * time.Millisecond

// parseProcStat reads utime + stime (fields 14 and 15) from a /proc/<pid>/stat line.
// The command name (field 2) is in parentheses and may hold spaces and ')', so fields
// are counted from the last ')'.
func parseProcStat(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no ')' closing the command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("proc stat: utime/stime %q is not a tick count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// benchCPU is this process's CPU time so far (user + system).
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// exitNote explains a failed request when the judge has exited.
func (j *judgeProc) exitNote() string {
	select {
	case <-j.exited:
		return fmt.Sprintf(" (the judge exited: %v%s)", j.err, j.logTail())
	default:
		return ""
	}
}

// stop sends SIGTERM and waits for the judge to finish writing, killing it past
// stopTimeout. An exit other than the clean one after SIGTERM is an error.
func (j *judgeProc) stop() error {
	if j.stopped {
		return nil
	}
	j.stopped = true
	select {
	case <-j.exited:
		return fmt.Errorf("bench judge: the judge exited during the run: %v%s", j.err, j.logTail())
	default:
	}
	j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.exited:
		if j.err != nil {
			return fmt.Errorf("bench judge: the judge stopped with %v%s", j.err, j.logTail())
		}
		return nil
	case <-time.After(stopTimeout):
		j.cmd.Process.Kill()
		<-j.exited
		return fmt.Errorf("bench judge: the judge did not stop within %s of SIGTERM and was killed%s", stopTimeout, j.logTail())
	}
}

// logTail is the end of the judge's log, to explain a failure.
func (j *judgeProc) logTail() string {
	data, err := os.ReadFile(j.log)
	if err != nil || len(data) == 0 {
		return ""
	}
	const tail = 2000
	if len(data) > tail {
		data = data[len(data)-tail:]
	}
	return fmt.Sprintf("\nend of %s:\n%s", j.log, bytes.TrimSpace(data))
}
