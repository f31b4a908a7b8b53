//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// runBinary runs the built binlake with args and returns its stdout, stderr and exit
// status: the exit status is what a shell sees, which run's error alone does not show.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.BinlakeBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		status = ee.ExitCode()
	default:
		t.Fatalf("binlake %v: %v", args, err)
	}
	return out.String(), errOut.String(), status
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestVersionFlags: --version and -v print what `binlake version` prints, exit 0.
func TestVersionFlags(t *testing.T) {
	want, _, status := runBinary(t, "version")
	if status != 0 || !strings.HasPrefix(want, "binlake ") {
		t.Fatalf("binlake version: status %d, output %q", status, want)
	}
	for _, flag := range []string{"--version", "-v", "-version"} {
		out, errOut, status := runBinary(t, flag)
		if status != 0 || out != want || errOut != "" {
			t.Fatalf("binlake %s: status %d, stdout %q, stderr %q; want status 0 and %q", flag, status, out, errOut, want)
		}
	}
}

// TestHelpExitsZero: -h and --help print the usage on stderr, nothing on stdout, and
// succeed, for the top level and every subcommand and sub-subcommand.
func TestHelpExitsZero(t *testing.T) {
	cases := [][]string{{"-h"}, {"--help"}, {"help"}}
	for name := range commands {
		cases = append(cases, []string{name, "-h"}, []string{name, "--help"})
	}
	for _, sub := range []string{"add", "list", "show", "remove", "move", "snapshot", "rebalance"} {
		cases = append(cases, []string{"instance", sub, "-h"})
	}
	for _, b := range []string{"wave", "judge", "alarm", "fleet"} {
		cases = append(cases, []string{"bench", b, "-h"}, []string{"bench", b, "--help"})
	}
	cases = append(cases, []string{"alarm", "test", "-h"}, []string{"alarm", "test", "--help"})
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), args, &out, &errOut)
			if code := exitCode(err, &errOut); code != 0 {
				t.Fatalf("exit status %d (err %v), want 0; stderr:\n%s", code, err, errOut.String())
			}
			if out.Len() != 0 {
				t.Fatalf("usage on stdout: %q; it goes to stderr", out.String())
			}
			if !strings.Contains(errOut.String(), "Usage: binlake") {
				t.Fatalf("stderr has no usage:\n%s", errOut.String())
			}
		})
	}
	// The process itself, once: status 0.
	if _, errOut, status := runBinary(t, "up", "-h"); status != 0 || !strings.Contains(errOut, "-mysql") {
		t.Fatalf("binlake up -h: status %d, stderr %q", status, errOut)
	}
}

// TestBadFlagErrorLast: an unknown flag or command prints a short usage, then the error
// as the last line, and exits 2.
func TestBadFlagErrorLast(t *testing.T) {
	for _, tc := range []struct {
		args []string
		last string
	}{
		{[]string{"up", "-nope"}, "binlake up: flag provided but not defined: -nope"},
		{[]string{"up", "-interval", "soon"}, `binlake up: invalid value "soon" for flag -interval`},
		{[]string{"wave", "-nope"}, "binlake wave: flag provided but not defined: -nope"},
		{[]string{"agent", "-nope"}, "binlake agent: flag provided but not defined: -nope"},
		{[]string{"alarm", "-nope"}, "binlake alarm: flag provided but not defined: -nope"},
		{[]string{"judge", "-nope"}, "binlake judge: flag provided but not defined: -nope"},
		{[]string{"instance", "list", "-nope"}, "binlake instance list: flag provided but not defined: -nope"},
		{[]string{"instance", "frob"}, `binlake instance: unknown subcommand "frob"`},
		{[]string{"bench", "judge", "-nope"}, "binlake bench judge: flag provided but not defined: -nope"},
		{[]string{"bench", "judge", "now"}, `binlake bench judge: unexpected argument "now"`},
		{[]string{"bench", "fleet", "-nope"}, "binlake bench fleet: flag provided but not defined: -nope"},
		{[]string{"bench", "kafka"}, `binlake bench: unknown benchmark "kafka"`},
		{[]string{"version", "-nope"}, "binlake version: flag provided but not defined: -nope"},
		{[]string{"-nope"}, "binlake: unknown flag -nope: flags go after the command"},
		{[]string{"frobnicate"}, `binlake: unknown command "frobnicate"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errOut)
			if code := exitCode(err, &errOut); code != 2 {
				t.Fatalf("exit status %d (err %v), want 2", code, err)
			}
			got := errOut.String()
			if l := lastLine(got); !strings.HasPrefix(l, tc.last) {
				t.Fatalf("last line %q, want it to start with %q; stderr:\n%s", l, tc.last, got)
			}
			if !strings.HasPrefix(got, "Usage: binlake") {
				t.Fatalf("stderr does not start with a usage line:\n%s", got)
			}
			// Short: not the page of flags the flag package prints by itself.
			if strings.Contains(got, "-log-level") || strings.Count(got, "\n") > 25 {
				t.Fatalf("usage is the full one, want a short one:\n%s", got)
			}
		})
	}
	_, errOut, status := runBinary(t, "up", "-nope")
	if status != 2 || lastLine(errOut) != "binlake up: flag provided but not defined: -nope" || strings.Count(errOut, "-nope") != 1 {
		t.Fatalf("binlake up -nope: status %d, stderr:\n%s", status, errOut)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestConnectionErrorsNameAddressAndCause: a ZooKeeper or MySQL that refuses the
// connection is reported at once with its address and the refusal, and nothing else.
func TestConnectionErrorsNameAddressAndCause(t *testing.T) {
	addr := closedPort(t)
	start := time.Now()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"instance", "list", "-zk", addr}, &out, &errOut)
	if err == nil || err.Error() != "instance list: zookeeper "+addr+": dial tcp "+addr+": connect: connection refused" {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s: an unreachable ZooKeeper should fail at once, not after the session timeout", d)
	}

	_, err = detectFlavor(context.Background(), MySQL{Addr: addr, User: "repl", Password: config.Secret("hunter2")})
	if err == nil || !strings.HasPrefix(err.Error(), "mysql repl@tcp("+addr+")/: ") || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "is it running, and reachable from here?") || strings.Contains(err.Error(), "password") ||
		strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v: want the source, the refusal, the hint for a server that does not answer (not the login's), no password", err)
	}
}

// TestPortInUseNamesTheFlag: up names its flag, a role its config key.
func TestPortInUseNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()

	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"up", "-data", t.TempDir(), "-judge-http", busy, "-alarm-http", "127.0.0.1:0"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-judge-http "+busy+" is in use by another process: pick another with -judge-http") {
		t.Fatalf("up: err = %v", err)
	}
	err = run(context.Background(), []string{"up", "-data", t.TempDir(), "-judge-http", "127.0.0.1:0", "-alarm-http", busy}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-alarm-http "+busy+" is in use by another process: pick another with -alarm-http") {
		t.Fatalf("up: err = %v", err)
	}
	// Every clash at once, not one per start; two flags on one address are named too.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	busy2 := ln2.Addr().String()
	err = run(context.Background(), []string{"up", "-data", t.TempDir(), "-judge-http", busy, "-alarm-http", busy2}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-judge-http "+busy+" is in use") || !strings.Contains(err.Error(), "-alarm-http "+busy2+" is in use") {
		t.Fatalf("up with both ports taken: err = %v", err)
	}
	probe, err := net.Listen("tcp", "127.0.0.1:0") // a port no one holds once closed
	if err != nil {
		t.Fatal(err)
	}
	free := probe.Addr().String()
	probe.Close()
	err = run(context.Background(), []string{"up", "-data", t.TempDir(), "-judge-http", free, "-alarm-http", free}, &out, &errOut)
	if err == nil || err.Error() != "-alarm-http "+free+" is -judge-http's too: give each its own port" {
		t.Fatalf("up with one port for two flags: err = %v", err)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "judge.yaml")
	writeFile(t, cfg, fmt.Sprintf("http:\n  listen: %s\nbus:\n  kind: none\nstore:\n  kind: sqlite\n  sqlite:\n    path: %s\n", busy, filepath.Join(dir, "judge.db")))
	err = run(context.Background(), []string{"judge", "-config", cfg}, &out, &errOut)
	if err == nil || err.Error() != "judge: "+busy+" is in use by another process: pick another with http.listen in the config (or -http)" {
		t.Fatalf("judge: err = %v", err)
	}

	// The other roles fail the same way (wave and agent need a broker or a source to get
	// that far): their errors as they return them.
	inUse := &net.OpError{Op: "listen", Net: "tcp", Addr: ln.Addr(), Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	for role, want := range map[string]string{
		"wave":  "wave: " + busy + " is in use by another process: pick another with http.listen in the config (or -http)",
		"agent": "agent: " + busy + " is in use by another process: pick another with http.listen in the config (or off)",
		"alarm": "alarm: " + busy + " is in use by another process: pick another with http.listen in the config (or -http)",
	} {
		if got := explainAddrInUse(role, fmt.Errorf("%s: listen on %s: %w", role, busy, inUse)); got == nil || got.Error() != want {
			t.Errorf("%s: %v, want %s", role, got, want)
		}
	}
	other := errors.New("judge: store: disk full")
	// Another failure to listen names the setting to look at: here an address this host
	// does not have (TEST-NET-1); a host name that does not resolve fails alike.
	ln2, lerr := net.Listen("tcp", "192.0.2.1:18090")
	if lerr == nil {
		ln2.Close()
		t.Fatal("listened on 192.0.2.1, an address for documentation")
	}
	if got := explainAddrInUse("judge", fmt.Errorf("judge: listen on 192.0.2.1:18090: %w", lerr)); got == nil ||
		!strings.HasSuffix(got.Error(), ": check http.listen in the config (or -http)") {
		t.Errorf("an address this host does not have: %v", got)
	}
	if got := explainAddrInUse("judge", other); got != other {
		t.Fatalf("other errors must pass unchanged: %v", got)
	}
}

// TestParseDSNURLForm: mysql:// DSNs parse, with the port defaulting to 3306, and a bad
// one is an error that never shows the password.
func TestParseDSNURLForm(t *testing.T) {
	for _, tc := range []struct{ dsn, user, pw, addr string }{
		{"mysql://repl:s%40cret@db.example:3307/", "repl", "s@cret", "db.example:3307"},
		{"mysql://root@127.0.0.1/", "root", "", "127.0.0.1:3306"},
		{"mysql://root@127.0.0.1:3307", "root", "", "127.0.0.1:3307"},
		{"mariadb://u:p+q@[::1]:3307/", "u", "p+q", "[::1]:3307"},
		{"mysql://u:pa@ss@h:1/", "u", "pa@ss", "h:1"},
	} {
		m, err := ParseDSN(tc.dsn)
		if err != nil || m.User != tc.user || m.Password.Reveal() != tc.pw || m.Addr != tc.addr {
			t.Errorf("ParseDSN(%q) = %s@%s pw %q, %v; want %s@%s pw %q", tc.dsn, m.User, m.Addr, m.Password.Reveal(), err, tc.user, tc.addr, tc.pw)
		}
	}
	for _, tc := range []struct{ dsn, want string }{
		{"mysql://:hunter2@h:1/", "empty user"},
		{"mysql://u:hunter2@h:99999/", `port "99999"`},
		{"mysql://u:hunter2@h:1/orders", "nothing may follow the address"},
		{"mysql://u:hunter2@h:1/?charset=utf8mb4", "parameter charset is not taken"},
		{"mysql://u:hunter2@h:1?tls=preferred", "tls=preferred: want true, skip-verify or false"},
		{"u:hunter2@tcp(h:1)/?tls=true&tls=false", "tls (true, skip-verify or false) once"},
		{"mysql://u:hunter2%zz@h/", "the password has a bad %-escape"},
		{"mysql://u:hunter2@/", "no host"},
		{"mysql://hunter2.example:3306/", "no user"},
		{"postgres://u:hunter2@h/", `scheme "postgres"`},
		{"u:hunter2@tcp(h:0)/", `port "0"`},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDSN(%q) = %v, want an error saying %q", tc.dsn, err, tc.want)
		} else if strings.Contains(err.Error(), "hunter2") && !strings.Contains(tc.dsn, "hunter2.example") {
			t.Errorf("ParseDSN(%q): the error shows the password: %v", tc.dsn, err)
		}
	}
	// go-sql-driver's tls parameter: TLS to the source with the system's CAs, or any
	// certificate, or none.
	for _, tc := range []struct {
		dsn       string
		tls, skip bool
	}{
		{"mysql://u@h:1/?tls=true", true, false},
		{"u@tcp(h:1)/?tls=skip-verify", true, true},
		{"u@tcp(h:1)/?tls=false", false, false},
	} {
		m, err := ParseDSN(tc.dsn)
		if err != nil || (m.TLS != nil) != tc.tls || tc.tls && m.TLS.InsecureSkipVerify != tc.skip {
			t.Errorf("ParseDSN(%q) = TLS %+v, %v; want TLS %v, skip-verify %v", tc.dsn, m.TLS, err, tc.tls, tc.skip)
		}
		if inst := m.instance(t.TempDir()); inst.Source.TLS != m.TLS {
			t.Errorf("ParseDSN(%q): the instance's source.tls is %+v, want the DSN's", tc.dsn, inst.Source.TLS)
		}
	}
	// Through the command: the error is up's, the password still hidden.
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"up", "-data", t.TempDir(), "-mysql", "mysql://u:hunter2@h:1/db"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `mysql DSN "mysql://u:***@h:1/db"`) || strings.Contains(err.Error()+errOut.String(), "hunter2") {
		t.Fatalf("err = %v; stderr %s", err, errOut.String())
	}
}

// upFolder is a data folder as up leaves it after a run with --mysql: its coordinator
// holds the capture instance, assigned to db-host. The coordinator is returned open.
func upFolder(t *testing.T) (string, *single.Coordinator) {
	t.Helper()
	dir := t.TempDir()
	c, err := single.New(single.Options{Path: filepath.Join(dir, CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	m := MySQL{Addr: "127.0.0.1:3307", User: "root", Flavor: "mariadb"}
	if err := defineInstance(context.Background(), c, m.instance(dir), "db-host", nil, quietLogger()); err != nil {
		t.Fatal(err)
	}
	return dir, c
}

// TestInstanceOnUpDataFolder: `binlake instance -data DIR` reads and changes the
// coordinator of a stopped up, and says plainly when up runs on the folder.
func TestInstanceOnUpDataFolder(t *testing.T) {
	dir, c := upFolder(t)
	c.Close()

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"instance", "list", "-data", dir}, &out, &errOut); err != nil {
		t.Fatalf("instance list: %v; %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), InstanceID) || !strings.Contains(out.String(), "db-host") {
		t.Fatalf("instance list:\n%s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"instance", "show", InstanceID, "-data", dir, "-sample", "0"}, &out, &errOut); err != nil {
		t.Fatalf("instance show: %v", err)
	}
	if !strings.Contains(out.String(), "source    root@127.0.0.1:3307 (mariadb") {
		t.Fatalf("instance show:\n%s", out.String())
	}
	// A change is saved for up's next start. No wave is live while up is stopped: a
	// -node is refused, saying so, unless -force.
	out.Reset()
	err := run(context.Background(), []string{"instance", "move", InstanceID, "-node", "other-host", "-data", dir}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "wave other-host is not live (live waves: none)") {
		t.Fatalf("instance move -node other-host on a stopped up: %v, want it refused", err)
	}
	if err := run(context.Background(), []string{"instance", "move", InstanceID, "-node", "other-host", "-force", "-data", dir}, &out, &errOut); err != nil {
		t.Fatalf("instance move -force: %v", err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"instance", "list", "-data", dir}, &out, &errOut); err != nil || !strings.Contains(out.String(), "other-host") {
		t.Fatalf("instance list after move: %v\n%s", err, out.String())
	}
	// Without -node or -judge, what needs a live wave or a judge says what to give.
	orders, err := filepath.Abs("../../deploy/instance.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"instance", "move", InstanceID, "-data", dir},
			"instance move: no live wave to place " + InstanceID + " on while up is stopped: give -node with up's node"},
		{[]string{"instance", "add", "-data", dir, "-f", orders},
			"instance add: no live wave to place orders on while up is stopped: give -node with up's node"},
		{[]string{"instance", "rebalance", "-data", dir},
			"instance rebalance: rebalancing needs a judge: it knows what each instance costs; give -judge URL"},
		// Arguments nothing reads, and durations below zero, are refused, not dropped.
		{[]string{"instance", "rebalance", InstanceID, "-data", dir}, `instance rebalance takes no instance id, got "` + InstanceID + `"`},
		{[]string{"instance", "show", InstanceID, "-data", dir, "other"}, `instance show: unexpected argument "other" after the instance id`},
		{[]string{"instance", "show", InstanceID, "-data", dir, "-sample", "-3s"}, "instance show: -sample and -wait take a duration of 0 or more"},
		{[]string{"instance", "show", "-data", dir, InstanceID, "-sample", "-3s"}, "instance show: -sample and -wait take a duration of 0 or more"},
	} {
		err := run(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: err = %v\nwant it to start with %s", tc.args[1:], err, tc.want)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"instance", "snapshot", InstanceID, "-data", dir}, &out, &errOut); err != nil {
		t.Fatalf("instance snapshot: %v", err)
	}
	if want := "no wave is live while up is stopped: the request is recorded, and the snapshot starts when a wave runs the instance"; !strings.Contains(out.String(), want) {
		t.Fatalf("instance snapshot on a stopped up:\n%s\nwant it to say %q", out.String(), want)
	}

	// While up runs on the folder.
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runSuite(ctx, upOptions{DataDir: dir, Node: "db-host", JudgeListen: "127.0.0.1:0", AlarmListen: "127.0.0.1:0",
			Logger: quietLogger(), Ready: func(upURLs) { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("up: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("up not ready after 30s")
	}
	err = run(context.Background(), []string{"instance", "list", "-data", dir}, &out, &errOut)
	want := fmt.Sprintf("instance list: %s is in use by a binlake up (pid %d), which holds its coordinator while it runs: stop it", dir, os.Getpid())
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("while up runs: err = %v\nwant it to start with %s", err, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("up: %v", err)
	}
	// Up released it: instance works again.
	if err := run(context.Background(), []string{"instance", "list", "-data", dir}, &out, &errOut); err != nil {
		t.Fatalf("after up stopped: %v", err)
	}

	// Not up's folder, or two coordinators at once.
	empty := t.TempDir()
	err = run(context.Background(), []string{"instance", "list", "-data", empty}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), empty+" has no "+CoordFile) {
		t.Fatalf("empty folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, CoordFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("instance created %s in a folder that was not up's: %v", CoordFile, err)
	}
	err = run(context.Background(), []string{"instance", "list", "-data", dir, "-zk", "127.0.0.1:2181"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "give one of -data, -zk and -config") {
		t.Fatalf("-data with -zk: %v", err)
	}
}

// A command stopped by Ctrl-C before it was done says it was interrupted, with the
// shell's status for SIGINT, not "context canceled".
func TestInterruptedCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	args := []string{"bench", "fleet", "-instances", "40", "-cores", "2:4"}
	err := interrupted(ctx, args, run(ctx, args, &out, &errOut), &errOut)
	if code := exitCode(err, &errOut); code != 130 {
		t.Fatalf("exit status %d (err %v), want 130", code, err)
	}
	if l := lastLine(errOut.String()); l != "binlake: interrupted before it was done" {
		t.Fatalf("last line %q", l)
	}
	if err := interrupted(context.Background(), args, context.Canceled, &errOut); !errors.Is(err, context.Canceled) {
		t.Fatalf("not interrupted: %v", err)
	}
}

// A service stopped while it starts (SIGTERM while the wave waits for its ZooKeeper)
// did what it was asked: status 0, so that systemd leaves no failed unit, and it says so.
func TestServiceStoppedWhileStarting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var errOut bytes.Buffer
	err := interrupted(ctx, []string{"wave", "-config", "w.yaml"}, fmt.Errorf("zk: connect: %w", context.Canceled), &errOut)
	if code := exitCode(err, &errOut); code != 0 {
		t.Fatalf("exit status %d (err %v), want 0", code, err)
	}
	if l := lastLine(errOut.String()); l != "binlake wave: stopped while it was starting" {
		t.Fatalf("last line %q", l)
	}
}

// An empty listing says where it looked.
func TestInstanceListEmptySaysWhere(t *testing.T) {
	// An up folder whose one instance was removed: the file is there, empty of instances.
	dir, c := upFolder(t)
	if err := cluster.RemoveInstance(context.Background(), c, InstanceID); err != nil {
		t.Fatal(err)
	}
	c.Close()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"instance", "list", "-data", dir}, &out, &errOut); err != nil {
		t.Fatalf("instance list: %v; %s", err, errOut.String())
	}
	if want := "no instance in single " + filepath.Join(dir, CoordFile); !strings.HasPrefix(out.String(), want) {
		t.Fatalf("instance list on an empty folder:\n%s\nwant it to start with %q", out.String(), want)
	}
}

// A role given an argument after its flags refuses it: "judge --check bad.yaml" checked
// the default config and said it was valid, never reading bad.yaml.
func TestRolesTakeNoArguments(t *testing.T) {
	for _, role := range []string{"wave", "agent", "alarm", "judge", "version"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{role, "-check", "bad.yaml"}, &out, &errOut)
		if role == "version" {
			err = run(context.Background(), []string{role, "bad.yaml"}, &out, &errOut)
		}
		if code := exitCode(err, &bytes.Buffer{}); code != 2 {
			t.Errorf("%s: exit status %d (err %v), want 2", role, code, err)
		}
		if !strings.Contains(errOut.String(), `binlake `+role+`: takes no arguments, got ["bad.yaml"]`) {
			t.Errorf("%s: stderr %q", role, errOut.String())
		}
	}
}

// TestInstanceSetOnUpDataFolder: `binlake instance set` changes on_unreadable in place
// (the offset kept), and up's next start keeps it: up's flags do not say it, and a
// definition that differed was started again from the source's end, past every row
// written meanwhile. Bad values and a set without a change are said plainly.
func TestInstanceSetOnUpDataFolder(t *testing.T) {
	dir, c := upFolder(t)
	off := []byte(`{"file":"bin.000007","pos":1293}`)
	if _, err := c.Put(context.Background(), cluster.OffsetKey(InstanceID), off, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	c.Close()

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"instance", "set", InstanceID, "-data", dir, "-on-unreadable", "skip"}, &out, &errOut); err != nil {
		t.Fatalf("instance set: %v; %s", err, errOut.String())
	}
	if want := "instance " + InstanceID + " changed; binlake up on " + dir + " starts it from the committed offset"; !strings.Contains(out.String(), want) {
		t.Fatalf("instance set said %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := run(context.Background(), []string{"instance", "set", InstanceID, "-data", dir, "-on-unreadable", "skip"}, &out, &errOut); err != nil || !strings.Contains(out.String(), "nothing changed") {
		t.Fatalf("the same again: %v; %s", err, out.String())
	}
	err := run(context.Background(), []string{"instance", "set", InstanceID, "-data", dir, "-on-too-large", "drop"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `"on_too_large": "drop": want stop or skip`) {
		t.Fatalf("a bad value: %v", err)
	}
	if err := run(context.Background(), []string{"instance", "set", InstanceID, "-data", dir}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "give -f instance.yaml (the whole definition) or -on-unreadable or -on-too-large") {
		t.Fatalf("nothing to set: %v", err)
	}

	// up starts again on the folder.
	c, err = single.New(single.Options{Path: filepath.Join(dir, CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := MySQL{Addr: "127.0.0.1:3307", User: "root", Flavor: "mariadb"}
	if err := defineInstance(context.Background(), c, m.instance(dir), "db-host", nil, quietLogger()); err != nil {
		t.Fatal(err)
	}
	inst, err := cluster.GetInstance(context.Background(), c, InstanceID)
	if err != nil || inst.OnUnreadable != cluster.UnreadableSkip {
		t.Fatalf("after up's start: %+v, %v; want on_unreadable skip kept", inst, err)
	}
	if v, err := c.Get(context.Background(), cluster.OffsetKey(InstanceID)); err != nil || string(v.Data) != string(off) {
		t.Fatalf("offset after up's start: %q, %v; want %s kept", v.Data, err, off)
	}
}

// TestUpRedefinesInPlace: up started again with other subscriptions, user or server_id
// redefines its instance in place, the committed offset kept (it removed the instance and
// added it again at the source's end: rows written while up was stopped were lost);
// started on another server, it starts again there (the offset means nothing there).
func TestUpRedefinesInPlace(t *testing.T) {
	dir, c := upFolder(t)
	defer c.Close()
	ctx := context.Background()
	off := []byte(`{"file":"mysql-bin.000002","pos":1234}`)
	if _, err := c.Put(ctx, cluster.OffsetKey(InstanceID), off, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	m := MySQL{Addr: "127.0.0.1:3307", User: "binlake", Flavor: "mariadb", ServerID: 4321,
		Subscriptions: []cluster.Subscription{{Name: "shop", Topic: "shop.rows", Include: []string{`shop\..*`}}}}
	var log bytes.Buffer
	// The redefinition is checked as the instance reads the source (its warnings: a
	// subscription that takes no table was said for a new data folder only).
	var reads []bool
	sight := func(_ context.Context, _ *cluster.Instance, reading bool) error {
		reads = append(reads, reading)
		return nil
	}
	if err := defineInstance(ctx, c, m.instance(dir), "db-host", sight, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reads, []bool{false}) {
		t.Errorf("source checks of the redefinition under a new server_id %v, want one, its server_id checked", reads)
	}
	reads = nil
	m.Subscriptions = append(m.Subscriptions, cluster.Subscription{Name: "typo", Topic: "shop.typo", Include: []string{`shpo\..*`}})
	if err := defineInstance(ctx, c, m.instance(dir), "db-host", sight, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reads, []bool{true}) {
		t.Errorf("source checks of a redefinition of the subscriptions alone %v, want one as the instance reads it", reads)
	}
	m.Subscriptions = m.Subscriptions[:1]
	if err := defineInstance(ctx, c, m.instance(dir), "db-host", nil, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	inst, err := cluster.GetInstance(ctx, c, InstanceID)
	if err != nil || inst.Source.User != "binlake" || inst.Source.ServerID != 4321 || len(inst.Subscriptions) != 1 || inst.Subscriptions[0].Topic != "shop.rows" {
		t.Fatalf("after up with other flags: %+v, %v; want the new user, server_id and subscription", inst, err)
	}
	if v, err := c.Get(ctx, cluster.OffsetKey(InstanceID)); err != nil || string(v.Data) != string(off) {
		t.Fatalf("offset after up with other subscriptions: %q, %v; want %s kept", v.Data, err, off)
	}
	if !strings.Contains(log.String(), "redefined in place") {
		t.Errorf("up's log does not say the instance was redefined in place:\n%s", log.String())
	}

	// The same server under another name is the same source (it was "changed", and the
	// rows written while up was stopped were lost); a server_id is checked when new only
	// (the last run's connection may still hold the stored one), and a refusal stops up.
	var checked []uint32
	check := func(_ context.Context, inst *cluster.Instance, reading bool) error {
		if reading {
			return nil // a redefinition's warnings: no server_id checked
		}
		checked = append(checked, inst.Source.ServerID)
		if inst.Source.ServerID == 22 {
			return errors.New("server_id 22 is already used by a replica of the source")
		}
		return nil
	}
	m.Addr = "localhost:3307"
	if err := defineInstance(ctx, c, m.instance(dir), "db-host", check, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, cluster.OffsetKey(InstanceID)); err != nil || string(v.Data) != string(off) {
		t.Fatalf("offset after up on localhost:3307: %q, %v; want %s kept (the same server)", v.Data, err, off)
	}
	if len(checked) != 0 {
		t.Errorf("server_ids checked %v, want none (unchanged)", checked)
	}
	if !strings.Contains(log.String(), "kept as stored") || !strings.Contains(log.String(), "stored=127.0.0.1:3307") {
		t.Errorf("up's log does not say the address is kept as stored:\n%s", log.String())
	}
	m.ServerID = 22
	err = defineInstance(ctx, c, m.instance(dir), "db-host", check, slog.New(slog.NewTextHandler(&log, nil)))
	if err == nil || !strings.Contains(err.Error(), "server_id 22 is already used") {
		t.Fatalf("up with a server_id a replica has: %v, want refused", err)
	}
	if inst, _ := cluster.GetInstance(ctx, c, InstanceID); inst == nil || inst.Source.ServerID != 4321 {
		t.Errorf("after the refusal: %+v, want server_id 4321 kept", inst)
	}
	m.ServerID = 4321

	m.Addr = "127.0.0.1:3308"
	log.Reset()
	if err := defineInstance(ctx, c, m.instance(dir), "db-host", nil, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, cluster.OffsetKey(InstanceID)); !errors.Is(err, coord.ErrNotFound) {
		t.Errorf("offset after up on another server: %v; want it gone (capture starts at that server's end)", err)
	}
	if inst, err := cluster.GetInstance(ctx, c, InstanceID); err != nil || inst.Source.Addr != "127.0.0.1:3308" {
		t.Errorf("after up on another server: %+v, %v", inst, err)
	}
	if !strings.Contains(log.String(), "the source changed") {
		t.Errorf("up's log does not say the source changed:\n%s", log.String())
	}
}

// TestInstanceSetFile: `binlake instance set <id> -f FILE` redefines the instance in place
// from the file (a subscription added here), the offset kept; a file of another instance,
// one of another source, and -f beside -on-… flags are refused, each saying why.
func TestInstanceSetFile(t *testing.T) {
	dir, c := upFolder(t)
	ctx := context.Background()
	off := []byte(`{"file":"mysql-bin.000002","pos":1234}`)
	if _, err := c.Put(ctx, cluster.OffsetKey(InstanceID), off, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	c.Close()
	define := func(id, addr string) string {
		f := filepath.Join(t.TempDir(), "local.yaml")
		writeFile(t, f, "id: "+id+"\nsource:\n  addr: "+addr+"\n  user: root\n  flavor: mariadb\n  server_id: 4321\n"+
			"subscriptions:\n  - name: all\n    topic: binlake.rows\n  - name: shop\n    topic: shop.rows\n    include: ['shop\\..*']\n")
		return f
	}
	set := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"instance", "set", InstanceID, "-data", dir}, args...), &out, &errOut)
		return out.String(), err
	}
	out, err := set("-f", define(InstanceID, "127.0.0.1:3307"))
	if err != nil || !strings.Contains(out, "instance local changed; binlake up on "+dir+" starts it from the committed offset") {
		t.Fatalf("set -f: %v\n%s", err, out)
	}
	// The same server under another name: kept as stored, and said.
	if out, err := set("-f", define(InstanceID, "localhost:3307")); err != nil || !strings.Contains(out, "source.addr localhost:3307 is kept as stored, 127.0.0.1:3307") {
		t.Fatalf("set -f with localhost: %v\n%s", err, out)
	}
	for _, tc := range []struct{ name, file, flag, want string }{
		{"another instance's file", define("orders", "127.0.0.1:3307"), "", `defines instance "orders"`},
		{"another source", define(InstanceID, "127.0.0.1:3399"), "", "a redefinition keeps the source"},
		{"a flag beside", define(InstanceID, "127.0.0.1:3307"), "-on-unreadable=skip", "give -f or the -on-… flags, not both"},
	} {
		args := []string{"-f", tc.file}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		if out, err := set(args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n%s\nwant refused: %q", tc.name, err, out, tc.want)
		}
	}
	c, err = single.New(single.Options{Path: filepath.Join(dir, CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inst, err := cluster.GetInstance(ctx, c, InstanceID)
	if err != nil || len(inst.Subscriptions) != 2 || inst.Subscriptions[1].Topic != "shop.rows" || inst.Source.ServerID != 4321 {
		t.Fatalf("after set -f: %+v, %v; want the file's subscriptions and server_id", inst, err)
	}
	if v, err := c.Get(ctx, cluster.OffsetKey(InstanceID)); err != nil || string(v.Data) != string(off) {
		t.Fatalf("offset after set -f: %q, %v; want %s kept", v.Data, err, off)
	}
}

// TestInstanceOnUpFolderWithoutInstance: `instance list -data` on the folder of an up
// that kept no instance (started without -mysql, or its -mysql refused) says so; it said
// the folder was not an up's. A folder up never ran in is still named as such.
func TestInstanceOnUpFolderWithoutInstance(t *testing.T) {
	up, other := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(up, StoreFile), "")
	for _, tc := range []struct{ dir, want string }{
		{up, up + " is the data folder of a binlake up that has no instance: up defines one when it runs with -mysql"},
		{other, other + " has no " + CoordFile + ", so it is not the data folder of a binlake up"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"instance", "list", "-data", tc.dir}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("instance list -data %s: %v, want %q", tc.dir, err, tc.want)
		}
	}
}
