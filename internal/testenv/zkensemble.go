package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// ZooKeeperEnsemble is the three-member ensemble the HA tests stop and restart members of
// (deploy/testenv/zookeeper.sh). Member N (1..3) is the Nth address of the variable.
var ZooKeeperEnsemble = Service{"ZooKeeper ensemble", "BINLAKE_TEST_ZK_ENSEMBLE"}

// ensembleSize is the number of members zookeeper.sh runs; member N listens on 2181+N.
const ensembleSize = 3

// ZKEnsemble controls the test ensemble: it reads each member's role through the `srvr`
// four-letter word and stops or starts members through deploy/testenv/zookeeper.sh.
type ZKEnsemble struct {
	// Servers are the members' host:port, member N at index N-1; strings.Join(Servers, ",")
	// is a connect string.
	Servers []string
	script  string
	// dir holds member N's files in dir/N (zookeeper.sh's $SVC_DIR/ensemble).
	dir string
}

// RequireZKEnsemble is Require for the ensemble. It also takes an exclusive lock, held
// until the test ends, so tests in different packages that stop members never overlap,
// and waits until every member serves as leader or follower (an earlier test may have just
// restarted one).
func RequireZKEnsemble(t testing.TB) *ZKEnsemble {
	t.Helper()
	if os.Getenv(ZooKeeperEnsemble.Env) == "" {
		Require(t, ZooKeeperEnsemble) // skips, or fails under CI
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("%s: %v", ZooKeeperEnsemble.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Lock before checking the members: the lock's holder may have one stopped right now,
	// and restarts it before letting go.
	unlock, err := lockFile(ctx, filepath.Join(testenvDir(root), "zookeeper-ensemble.lock"))
	if err != nil {
		t.Fatalf("%s: take the ensemble lock: %v", ZooKeeperEnsemble.Name, err)
	}
	t.Cleanup(unlock)

	v := Require(t, ZooKeeperEnsemble)
	servers := HostPorts(v)
	if len(servers) != ensembleSize {
		t.Fatalf("%s=%q: want %d members, got %d", ZooKeeperEnsemble.Env, v, ensembleSize, len(servers))
	}
	e := &ZKEnsemble{Servers: servers, script: filepath.Join(root, "deploy", "testenv", "zookeeper.sh"),
		dir: filepath.Join(testenvDir(root), "zookeeper", "ensemble")}

	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	if err := e.WaitServing(wctx); err != nil {
		t.Fatalf("%s is not serving: %v (restart it with `bash deploy/testenv/zookeeper.sh up`)", ZooKeeperEnsemble.Name, err)
	}
	return e
}

// Mode returns the member's role from `srvr`: "leader", "follower" or "standalone", or an
// error when it is down or not serving (no quorum, election in progress).
func (e *ZKEnsemble) Mode(ctx context.Context, member int) (string, error) {
	if err := e.checkMember(member); err != nil {
		return "", err
	}
	addr := e.Servers[member-1]
	out, err := fourLetterWord(ctx, addr, "srvr")
	if err != nil {
		return "", fmt.Errorf("member %d (%s): %w", member, addr, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("member %d (%s) is not serving: %q", member, addr, strings.TrimSpace(out))
}

// Leader returns the number of the member that is leader now, or an error when none is
// (for example during an election).
func (e *ZKEnsemble) Leader(ctx context.Context) (int, error) {
	var errs []error
	for m := 1; m <= len(e.Servers); m++ {
		mode, err := e.Mode(ctx, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mode == "leader" {
			return m, nil
		}
	}
	return 0, fmt.Errorf("no member is leader: %w", errors.Join(errs...))
}

// WaitLeader polls until some member is leader and returns its number.
func (e *ZKEnsemble) WaitLeader(ctx context.Context) (int, error) {
	for {
		m, err := e.Leader(ctx)
		if err == nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for a leader: %w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitServing polls until every member is leader or follower.
func (e *ZKEnsemble) WaitServing(ctx context.Context) error {
	for {
		var errs []error
		for m := 1; m <= len(e.Servers); m++ {
			if _, err := e.Mode(ctx, m); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for all members to serve: %w (last: %w)", ctx.Err(), errors.Join(errs...))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KillMember kills member N with SIGKILL, a crash without goodbyes to clients or peers.
// It is restarted when the test ends, if the test has not done so, and the ensemble is
// waited for, so the next test finds all three serving.
func (e *ZKEnsemble) KillMember(t testing.TB, member int) {
	t.Helper()
	e.run(t, "member-kill", member)
	t.Cleanup(func() { e.restore(t, member) })
}

// StartMember starts member N and, when a majority is then running, waits until it serves.
func (e *ZKEnsemble) StartMember(t testing.TB, member int) {
	t.Helper()
	e.run(t, "member-start", member)
}

func (e *ZKEnsemble) restore(t testing.TB, member int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.Mode(ctx, member); err != nil {
		e.run(t, "member-start", member)
	}
	if err := e.WaitServing(ctx); err != nil {
		t.Errorf("%s: not all members serve again after the test: %v", ZooKeeperEnsemble.Name, err)
	}
}

// run calls zookeeper.sh SUBCOMMAND MEMBER and fails the test with its output on error.
func (e *ZKEnsemble) run(t testing.TB, sub string, member int) {
	t.Helper()
	if err := e.checkMember(member); err != nil {
		t.Fatalf("%s: %v", ZooKeeperEnsemble.Name, err)
	}
	// The script knows members by number and port; refuse to act on an ensemble it did not start.
	if want := net.JoinHostPort("127.0.0.1", strconv.Itoa(2181+member)); e.Servers[member-1] != want {
		t.Fatalf("%s: member %d is %s but zookeeper.sh controls %s; cannot %s it", ZooKeeperEnsemble.Name, member, e.Servers[member-1], want, sub)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", e.script, sub, strconv.Itoa(member))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: zookeeper.sh %s %d: %v\n%s", ZooKeeperEnsemble.Name, sub, member, err, out.String())
	}
	t.Logf("zookeeper.sh %s %d: %s", sub, member, strings.TrimSpace(out.String()))
}

func (e *ZKEnsemble) checkMember(member int) error {
	if member < 1 || member > len(e.Servers) {
		return fmt.Errorf("member %d out of range 1..%d", member, len(e.Servers))
	}
	return nil
}

// fourLetterWord sends a ZooKeeper four-letter word and returns the whole answer.
func fourLetterWord(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("send %s: %w", word, err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, 1<<20))
	if err != nil {
		return "", fmt.Errorf("read %s answer: %w", word, err)
	}
	return string(b), nil
}

// repoRoot walks up from the working directory (a test's package folder) to go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repo root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repo root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// testenvDir mirrors lib.sh: BINLAKE_TESTENV_DIR or <repo>/.testenv.
func testenvDir(root string) string {
	if d := os.Getenv("BINLAKE_TESTENV_DIR"); d != "" {
		return d
	}
	return filepath.Join(root, ".testenv")
}

// lockFile takes an exclusive flock on path, polling until ctx ends. The lock dies with
// the process, so a crashed test run never leaves it behind.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("flock %s: held by another test process: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
