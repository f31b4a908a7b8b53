package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is one running binlake process of a fault test: started with os/exec, killable
// with SIGKILL (no deferred function, no goodbye to the group or ZooKeeper, exactly as a
// crashed host).
type Proc struct {
	Name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// StartBinlake starts the binlake binary (BinlakeBinary) with args and env added to this
// process's environment. Its output goes to a file whose last lines are logged when the
// test fails; if it still runs when the test ends it gets SIGTERM, then SIGKILL after
// 15 s.
func StartBinlake(t *testing.T, name string, env []string, args ...string) *Proc {
	t.Helper()
	bin := BinlakeBinary(t)
	p := &Proc{Name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("last lines of %s's log:\n%s", name, p.tail(30))
		}
	})
	return p
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", p.Name, err)
	}
	<-p.done
}

// Stop sends SIGTERM (SIGKILL if it is still running 15 s later) and waits for the
// process to be gone; a process that already ended is left as it is.
func (p *Proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Signal sends sig to the process, for a test of how it reacts to one.
func (p *Proc) Signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.Name, err)
	}
}

// Wait waits up to d for the process to end and returns how it ended (nil for exit
// status 0); it fails the test if the process still runs after d.
func (p *Proc) Wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("%s still runs after %v\n%s", p.Name, d, p.tail(30))
		return nil
	}
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output is everything the process printed so far, standard output and error together.
func (p *Proc) Output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Exited returns an error, with the process's output, if it ended on its own.
func (p *Proc) Exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, p.Output())
	default:
		return nil
	}
}

// WaitOutput waits up to d for a line of the process's output that re matches and
// returns its submatches; it fails the test if the process ends or d passes first.
func (p *Proc) WaitOutput(t *testing.T, re *regexp.Regexp, d time.Duration) []string {
	t.Helper()
	deadline := time.After(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, line := range strings.Split(p.Output(), "\n") {
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before printing %q: %v\n%s", p.Name, re, p.err, p.tail(30))
		case <-deadline:
			t.Fatalf("%s printed no %q within %v\n%s", p.Name, re, d, p.tail(30))
		case <-tick.C:
		}
	}
}

func (p *Proc) tail(n int) string {
	lines := strings.Split(strings.TrimSpace(p.Output()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
