package testenv

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KafkaBroker is a single-node Kafka broker of one test alone, run by
// `deploy/testenv/kafka.sh private-run` with the shared broker's jars and JVM flags but its
// own ports and data folder. Fault tests stop and restart it; the shared broker
// (BINLAKE_TEST_KAFKA) is never stopped, since the other packages' tests use it at the same
// time. The broker runs as a child of the test process and dies with it.
type KafkaBroker struct {
	script         string
	dir            string
	port, ctrlPort int
	proc           *brokerProc // nil while stopped
}

// brokerProc is one run of the broker's JVM.
type brokerProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // of Wait, once done is closed
}

// Stop timeouts: a controlled shutdown takes ~5 s on the loaded test machine; the script's
// own `down` allows 60 s for the shared broker, whose shutdown may include a class dump.
const (
	brokerStopTimeout  = 60 * time.Second
	brokerStartTimeout = 3 * time.Minute // the script waits up to 120 s + 60 s
)

// StartKafkaBroker starts a private broker and waits until it serves. It needs what `make
// services-up` installs for the shared broker (Java, the Kafka jars), so it is skipped or
// required exactly as the shared broker is (Require). The broker is killed when the test
// ends; its data folder is the test's.
func StartKafkaBroker(t testing.TB) *KafkaBroker {
	t.Helper()
	Require(t, Kafka)
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("private Kafka broker: %v", err)
	}
	port, ctrl, err := freePortPair()
	if err != nil {
		t.Fatalf("private Kafka broker: %v", err)
	}
	k := &KafkaBroker{script: filepath.Join(root, "deploy", "testenv", "kafka.sh"),
		dir: filepath.Join(t.TempDir(), "kafka"), port: port, ctrlPort: ctrl}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("private Kafka broker %s, last lines of its server.log:\n%s", k.Addr(), k.logTail(30))
		}
		// Its data is thrown away: no need for a controlled shutdown.
		if p := k.proc; p != nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	d := k.Start(t)
	t.Logf("private Kafka broker on %s ready in %s", k.Addr(), d.Round(100*time.Millisecond))
	return k
}

// Addr is the broker's host:port, for a client's bootstrap list.
func (k *KafkaBroker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(k.port)) }

// Start starts the broker on its ports and data folder (again, after Stop) and returns
// once it serves metadata and its group coordinator, with the time that took.
func (k *KafkaBroker) Start(t testing.TB) time.Duration {
	t.Helper()
	if k.proc != nil {
		t.Fatalf("private Kafka broker %s: already running", k.Addr())
	}
	t0 := time.Now()
	cmd := exec.Command("bash", k.script, "private-run", k.dir, strconv.Itoa(k.port), strconv.Itoa(k.ctrlPort))
	// The script execs the JVM, so this kills the broker itself if the test process dies
	// without its cleanup (a -timeout panic): no JVM outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer // the script's own messages before the exec; the JVM logs to files
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("private Kafka broker: start %s: %v", k.script, err)
	}
	p := &brokerProc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	k.proc = p

	// private-wait follows the broker through the pid file, which the script writes first
	// thing: wait for it, or for the script's end.
	pidFile := filepath.Join(k.dir, "pid")
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		select {
		case <-p.done:
			k.proc = nil
			t.Fatalf("private Kafka broker %s: %s private-run exited: %v\n%s", k.Addr(), k.script, p.err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer cancel()
	wait := exec.CommandContext(ctx, "bash", k.script, "private-wait", k.dir, strconv.Itoa(k.port))
	if msg, err := wait.CombinedOutput(); err != nil {
		select {
		case <-p.done:
			k.proc = nil
			t.Fatalf("private Kafka broker %s exited during its start: %v\n%s%s", k.Addr(), p.err, out.String(), msg)
		default:
		}
		t.Fatalf("private Kafka broker %s did not start: %v\n%s", k.Addr(), err, msg)
	}
	return time.Since(t0)
}

// Stop sends sig to the broker (SIGTERM: a controlled shutdown; SIGKILL: a crash, after
// which the next Start recovers its logs) and waits until the process is gone, killing it
// after a minute. It returns the time the broker took to go.
func (k *KafkaBroker) Stop(t testing.TB, sig syscall.Signal) time.Duration {
	t.Helper()
	p := k.proc
	if p == nil {
		t.Fatalf("private Kafka broker %s: not running", k.Addr())
	}
	t0 := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("private Kafka broker %s: send %v: %v", k.Addr(), sig, err)
	}
	select {
	case <-p.done:
	case <-time.After(brokerStopTimeout):
		t.Errorf("private Kafka broker %s did not stop within %s of %v; killing it", k.Addr(), brokerStopTimeout, sig)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	k.proc = nil
	// The pid file names a process that is gone: leave nothing that says it runs.
	_ = os.Remove(filepath.Join(k.dir, "pid"))
	var exit *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exit) {
		t.Fatalf("private Kafka broker %s: wait: %v", k.Addr(), p.err)
	}
	return time.Since(t0)
}

// logTail is the end of the broker's server.log, for a failing test's output.
func (k *KafkaBroker) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(k.dir, "log", "server.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freePortPair picks two free ports for the broker and its controller, below the
// kernel's ephemeral range (32768 and up by default): while the broker is stopped, an
// outgoing connection could otherwise take one of its ports and keep it from starting again.
func freePortPair() (port, ctrl int, err error) {
	for range 100 {
		p := 20000 + 2*rand.IntN(6000)
		if portFree(p) && portFree(p+1) {
			return p, p + 1, nil
		}
	}
	return 0, 0, errors.New("no two free ports between 20000 and 32000")
}

func portFree(p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
