package benchkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Time limits of a role's process.
const (
	startTimeout = 30 * time.Second
	// stopTimeout covers a role's own shutdown: HTTP shutdown (10 s) and writing or
	// delivering what is buffered (10 to 15 s).
	stopTimeout = 25 * time.Second
)

// Spec describes a role to start: `Binary Args…` in Dir, stderr and stdout into Log.
type Spec struct {
	// Role names the process in messages ("judge", "alarm").
	Role   string
	Binary string
	Args   []string
	Dir    string
	Log    string
	// ReadyPrefix starts the stdout line the role prints once its API serves; the
	// address after it (host:port) is the port the kernel picked.
	ReadyPrefix string
}

// Proc is a running role.
type Proc struct {
	// Addr is the host:port the role serves on, from its ready line.
	Addr string
	// Log is the file holding the role's stderr and stdout.
	Log string

	role    string
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error // of Wait, once exited is closed
	stopped bool  // Stop ran (it is idempotent)
}

// Start starts the role and returns once it printed its ready line. The command line and
// pid go to out.
func Start(ctx context.Context, s Spec, out io.Writer) (*Proc, error) {
	logf, err := os.Create(s.Log)
	if err != nil {
		return nil, fmt.Errorf("bench %s: %w", s.Role, err)
	}
	p := &Proc{Log: s.Log, role: s.Role, exited: make(chan struct{})}
	p.cmd = exec.Command(s.Binary, s.Args...)
	p.cmd.Dir = s.Dir
	p.cmd.Stderr = logf
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench %s: %w", s.Role, err)
	}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench %s: start %s: %w", s.Role, s.Binary, err)
	}
	fmt.Fprintf(out, "started %s %s (pid %d)\n", s.Binary, strings.Join(s.Args, " "), p.cmd.Process.Pid)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, s.ReadyPrefix); ok {
				select {
				case addr <- strings.Fields(rest + " ")[0]:
				default:
				}
			}
			fmt.Fprintln(logf, line)
		}
		io.Copy(logf, stdout)
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	fail := func(err error) (*Proc, error) { return nil, errors.Join(err, p.Stop()) }
	select {
	case p.Addr = <-addr:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("bench %s: the %s exited before serving: %v%s", s.Role, s.Role, p.err, p.LogTail())
	case <-time.After(startTimeout):
		return fail(fmt.Errorf("bench %s: the %s did not serve within %s%s", s.Role, s.Role, startTimeout, p.LogTail()))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// CPU is the process's CPU time so far (user + system).
func (p *Proc) CPU() (time.Duration, error) { return ProcessCPU(p.Pid()) }

// ExitNote explains a failed request when the role has exited; "" while it runs.
func (p *Proc) ExitNote() string {
	select {
	case <-p.exited:
		return fmt.Sprintf(" (the %s exited: %v%s)", p.role, p.err, p.LogTail())
	default:
		return ""
	}
}

// Stop sends SIGTERM and waits for the role to finish, killing it past stopTimeout. An
// exit other than the clean one after SIGTERM is an error.
func (p *Proc) Stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	select {
	case <-p.exited:
		return fmt.Errorf("bench %s: the %s exited during the run: %v%s", p.role, p.role, p.err, p.LogTail())
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("bench %s: the %s stopped with %v%s", p.role, p.role, p.err, p.LogTail())
		}
		return nil
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("bench %s: the %s did not stop within %s of SIGTERM and was killed%s", p.role, p.role, stopTimeout, p.LogTail())
	}
}

// LogTail is the end of the role's log, to explain a failure.
func (p *Proc) LogTail() string {
	data, err := os.ReadFile(p.Log)
	if err != nil || len(data) == 0 {
		return ""
	}
	const tail = 2000
	if len(data) > tail {
		data = data[len(data)-tail:]
	}
	return fmt.Sprintf("\nend of %s:\n%s", p.Log, strings.TrimSpace(string(data)))
}
