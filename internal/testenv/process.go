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

// Exited returns an error, with the process's output, if it ended on its own.
func (p *Proc) Exited() error {
	select {
	case <-p.done:
		b, _ := os.ReadFile(p.log)
		return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, b)
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
		b, _ := os.ReadFile(p.log)
		for _, line := range strings.Split(string(b), "\n") {
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
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
