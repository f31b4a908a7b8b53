//go:build !agentonly

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/sink"
	"github.com/binlake/binlake/wave/tail"
)

const (
	readmeOneMachine = "### One machine: `make run`"
	readmeManyHosts  = "### Many machines"
	// readmeTestMySQL is where the README's examples find the test MariaDB of `make
	// services-up` (deploy/testenv/services.sh); the walk runs those lines against
	// $BINLAKE_TEST_MYSQL, wherever it is.
	readmeTestMySQL = "127.0.0.1:3307"
	// deployTail is deploy/README.md's section on binlake tail, which this walk covers.
	deployTail = "### What a wave published"
)

// TestReadmeWalk walks README.md's "Try it" path: every command of the sh blocks of
// "One machine: `make run`" and "Many machines", in order, by a rule; a command without
// one fails the test, naming it, so the README cannot grow a step nobody ran.
//
// One machine (all of it runs, in one temporary folder standing for the checkout, so
// `./data` is that folder's; port 0 instead of 8090/8092/8091 unless a line sets them):
//   - git clone … && cd DIR: not run; the test runs in a checkout (go.mod's module is
//     checked).
//   - make run [ARGS=…]: `make -n run ARGS=…` in the checkout must announce the build,
//     build bin/binlake with go and run `./bin/binlake up ARGS`; then that up runs for
//     real with this checkout's binary (the running one, if any, gets SIGINT first and
//     must exit 0).
//   - [VAR=… ]./bin/binlake up ARGS: the same up, run directly.
//   - Every up must print the README's banner (its ```-block after the make run lines)
//     with the real addresses, and list this host as a live node at /v1/nodes.
//   - --mysql DSN: the DSN must parse (ParseDSN). A DSN at 127.0.0.1:3307, the test
//     MariaDB, runs against $BINLAKE_TEST_MYSQL (its user and address in the line's form,
//     the password from $BINLAKE_MYSQL_PASSWORD): the wave must be running, and a row
//     inserted in a scratch table must appear in data/rows.jsonl. Any other DSN (the
//     README's repl@tcp(127.0.0.1:3306)/ with BINLAKE_MYSQL_PASSWORD=secret) names a
//     server that does not exist here: it is only parsed, and its variables must be ones
//     up reads; nothing connects.
//   - curl …: the same request (method, body and curl's form content type for -d) to the
//     running up, with the README's 8090 and 8092 mapped to the real addresses: 200, and
//     placement answers this host, nodes lists it live, alerts is {"alerts":[…]}.
//   - At the end the last up gets SIGINT and must exit 0.
//
// Many machines: the install, sudoedit, cp, --check and systemctl lines must be commands of
// deploy/README.md's Install section word for word, which deploy's TestGuideWalk runs
// on a staged install against the test services. The `binlake instance` lines need a
// ZooKeeper and a judge with waves (TestInstanceAddAsksJudgeWithToken,
// TestInstanceRebalanceDryRun and wave's TestSnapshotRequestIntegration run them): here each
// subcommand's -h must exit 0 and list the subcommand and every flag the line shows.
//
// The --mysql runs need $BINLAKE_TEST_MYSQL: without it they are skipped (the rest runs
// and the test then skips), unless CI=true, which fails.
func TestReadmeWalk(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	started := time.Now()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	bin := testenv.BinlakeBinary(t)
	haveMySQL := os.Getenv(testenv.MySQL.Env) != ""
	if !haveMySQL && testenv.InCI() {
		t.Fatalf("CI=true: the README's --mysql lines run against the test MariaDB; set %s", testenv.MySQL.Env)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	w := &readmeWalk{t: t, bin: bin, dir: t.TempDir(), host: host, banner: readmeBanner(t, readme)}
	t.Cleanup(w.kill)

	var skipped []string
	for _, line := range testenv.ShellCommands(t, readme, readmeOneMachine) {
		t.Logf("$ %s", line)
		words, err := shellWords(line)
		if err != nil {
			t.Fatalf("README.md: %q: %v", line, err)
		}
		env, words := assignments(words)
		switch {
		case len(words) > 2 && words[0] == "git" && words[1] == "clone":
			if !regexp.MustCompile(`&& cd \S+$`).MatchString(line) {
				t.Fatalf("%q: want git clone … && cd DIR", line)
			}
			mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
			if err != nil || !strings.HasPrefix(string(mod), "module github.com/binlake/binlake\n") {
				t.Fatalf("%q: %s is not a binlake checkout: %v", line, root, err)
			}
			t.Logf("not run: the test runs in a checkout (%s)", root)
		case len(words) >= 2 && words[0] == "make" && words[1] == "run" && len(env) == 0:
			args := makeRunArgs(t, root, line, words[2:])
			w.up(line, args, nil, &skipped, haveMySQL)
		case len(words) >= 2 && words[0] == "./bin/binlake" && words[1] == "up":
			w.up(line, words[2:], env, &skipped, haveMySQL)
		case words[0] == "curl" && len(env) == 0:
			w.curl(line, words[1:])
		case len(words) >= 2 && words[0] == "./bin/binlake" && words[1] == "tail" && len(env) == 0:
			w.tail(line, words[2:], &skipped, haveMySQL)
		default:
			t.Fatalf("README.md, %s: TestReadmeWalk has no rule for %q: add one", readmeOneMachine, line)
		}
	}
	walkPolicySection(t, w, root, readme) // beside the running up (readme_walk_policy_test.go)
	w.stop()
	if w.runs == 0 || w.curls == 0 {
		t.Fatalf("the section ran %d ups and %d curls: want both", w.runs, w.curls)
	}
	if haveMySQL && w.mysqlRuns == 0 {
		t.Fatalf("no --mysql line ran against the test MariaDB")
	}

	guide := map[string]bool{}
	for _, c := range testenv.ShellCommands(t, filepath.Join(root, "deploy", "README.md"), "## Install") {
		guide[c] = true
	}
	for _, line := range testenv.ShellCommands(t, readme, readmeManyHosts) {
		t.Logf("$ %s", line)
		words := strings.Fields(line)
		switch {
		case guide[line]:
			t.Logf("walked by deploy's TestGuideWalk (deploy/README.md, Install)")
		case len(words) >= 3 && words[0] == "binlake" && words[1] == "instance":
			instanceHelp(t, bin, line, words[2:])
		case len(words) >= 2 && words[0] == "binlake" && words[1] == "tail":
			tailHelp(t, bin, line, words[2:])
		default:
			t.Fatalf("README.md, %s: TestReadmeWalk has no rule for %q (a step of deploy/README.md's Install section, which TestGuideWalk walks, binlake instance or binlake tail): add one",
				readmeManyHosts, line)
		}
	}
	// deploy/README.md's tail lines need ZooKeeper, Kafka and a wave, as the README's do.
	tails := testenv.ShellCommands(t, filepath.Join(root, "deploy", "README.md"), deployTail)
	for _, line := range tails {
		t.Logf("$ %s (deploy/README.md)", line)
		words, err := shellWords(line)
		if err != nil || len(words) < 2 || words[0] != "binlake" || words[1] != "tail" {
			t.Fatalf("deploy/README.md, %s: TestReadmeWalk has no rule for %q (%v): add one", deployTail, line, err)
		}
		tailHelp(t, bin, line, words[2:])
	}
	if len(tails) == 0 {
		t.Fatalf("deploy/README.md has no commands under %q", deployTail)
	}
	t.Logf("walked in %s", time.Since(started).Round(time.Millisecond))
	if len(skipped) > 0 {
		t.Skipf("without %s these lines were only parsed: %s", testenv.MySQL.Env, strings.Join(skipped, "; "))
	}
}

// readmeBanner returns the README's banner (the bare ``` block of the One machine section
// that starts with "binlake is up:") as one pattern per line, the addresses captured.
func readmeBanner(t *testing.T, readme string) []*regexp.Regexp {
	t.Helper()
	addr := regexp.MustCompile(`http://127\\\.0\\\.0\\\.1:(\d+)`)
	for _, b := range testenv.FencedBlocks(t, readme, readmeOneMachine, "") {
		if !strings.HasPrefix(b, "binlake is up:\n") {
			continue
		}
		var res []*regexp.Regexp
		for _, l := range strings.Split(strings.TrimRight(b, "\n"), "\n") {
			q := addr.ReplaceAllString(regexp.QuoteMeta(l), `(http://127\.0\.0\.1:\d+)`)
			res = append(res, regexp.MustCompile(`(?m)^`+q+`$`))
		}
		for _, want := range []string{"binlake is up:", "status page", "judge API", "alarm API"} {
			if !strings.Contains(b, want) {
				t.Fatalf("README.md's banner lacks %q:\n%s", want, b)
			}
		}
		return res
	}
	t.Fatalf("README.md, %s: no ``` block with the banner (binlake is up:)", readmeOneMachine)
	return nil
}

// makeRunArgs checks what `make run ARGS=…` does with `make -n` and returns the flags it
// passes to up.
func makeRunArgs(t *testing.T, root, line string, vars []string) []string {
	t.Helper()
	argv := []string{"-n", "run"}
	for _, v := range vars {
		if !strings.HasPrefix(v, "ARGS=") {
			t.Fatalf("%q: make run takes ARGS=… only, not %q", line, v)
		}
		argv = append(argv, v)
	}
	cmd := exec.Command("make", argv...)
	cmd.Dir = root
	cmd.Env = makeEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%q: make %s: %v\n%s", line, strings.Join(argv, " "), err, out)
	}
	var lines []string
	dirLine := regexp.MustCompile(`^make(\[\d+\])?: (Entering|Leaving) directory`)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !dirLine.MatchString(l) {
			lines = append(lines, l)
		}
	}
	announce, build := -1, -1
	for i, l := range lines {
		if announce < 0 && strings.Contains(l, "make run: building bin/binlake") {
			announce = i
		}
		if build < 0 && regexp.MustCompile(`^go build .*-o bin/binlake \./cmd/binlake$`).MatchString(l) {
			build = i
		}
	}
	last := lines[len(lines)-1]
	if announce < 0 || build < announce || !strings.HasPrefix(last, "./bin/binlake up") {
		t.Fatalf("%q: make -n run says it builds (announced, then go build -o bin/binlake), then runs ./bin/binlake up; it prints:\n%s", line, out)
	}
	words, err := shellWords(last)
	if err != nil {
		t.Fatalf("%q: make runs %q: %v", line, last, err)
	}
	t.Logf("make -n: %s", last)
	return words[2:]
}

// makeEnv is the environment for a make of the test's own (go test run by make test),
// without the caller's make flags or GO.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "GO" {
			env = append(env, kv)
		}
	}
	return env
}

// instanceHelp checks `binlake instance SUB [flags]` against `binlake instance SUB -h`.
func instanceHelp(t *testing.T, bin, line string, words []string) {
	t.Helper()
	sub := words[0]
	out, err := exec.Command(bin, "instance", sub, "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("%q: binlake instance %s -h: %v\n%s", line, sub, err, out)
	}
	if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(sub) + `\s`).Match(out) {
		t.Fatalf("%q: binlake instance -h lists no subcommand %s:\n%s", line, sub, out)
	}
	for _, w := range words[1:] {
		if f := strings.Trim(w, "[]"); strings.HasPrefix(f, "-") && !regexp.MustCompile(`(?m)^\s+`+regexp.QuoteMeta(f)+`\b`).Match(out) {
			t.Fatalf("%q: binlake instance %s -h lists no flag %s:\n%s", line, sub, f, out)
		}
	}
	proof := map[string]string{
		"add":       "TestInstanceAddAsksJudgeWithToken",
		"snapshot":  "wave's TestSnapshotRequestIntegration",
		"rebalance": "TestInstanceRebalanceDryRun",
	}[sub]
	if sub == "add" && slices.Contains(words, "-config") {
		proof = "TestInstanceAddConfigUsesBalancerJudge"
	}
	if proof == "" {
		t.Fatalf("%q: TestReadmeWalk knows no test that runs binlake instance %s on a cluster: add one", line, sub)
	}
	t.Logf("binlake instance %s -h lists it; %s runs it on a cluster", sub, proof)
}

// tailHelp checks `binlake tail [flags]` against `binlake tail -h`: the lines that need
// ZooKeeper, Kafka and a wave publishing, which TestTailIntegration runs.
func tailHelp(t *testing.T, bin, line string, words []string) {
	t.Helper()
	out, err := exec.Command(bin, "tail", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("%q: binlake tail -h: %v\n%s", line, err, out)
	}
	for i, w := range words {
		if !strings.HasPrefix(w, "-") {
			if i > 0 && strings.HasPrefix(words[i-1], "-") || i == 0 {
				continue // a flag's value, or the instance
			}
			t.Fatalf("%q: %q is neither a flag nor the instance", line, w)
		}
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(w) + `\b`).Match(out) {
			t.Fatalf("%q: binlake tail -h lists no flag %s:\n%s", line, w, out)
		}
	}
	// The values of -from and -o must be ones tail takes.
	for i := 0; i+1 < len(words); i++ {
		var err error
		switch words[i] {
		case "-from":
			_, err = tail.ParseFrom(words[i+1])
		case "-o":
			err = tail.CheckMode(words[i+1])
		}
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	t.Logf("binlake tail -h lists its flags; TestTailIntegration runs them on ZooKeeper and Kafka")
}

// tail runs the README's `./bin/binlake tail` in the checkout while up runs: it must show
// the row the last --mysql run inserted.
func (w *readmeWalk) tail(line string, args []string, skipped *[]string, haveMySQL bool) {
	t := w.t
	t.Helper()
	if !haveMySQL {
		*skipped = append(*skipped, line)
		t.Logf("not run: no --mysql line ran (%s is not set), so there are no rows", testenv.MySQL.Env)
		return
	}
	if w.mysqlRuns == 0 {
		t.Fatalf("%q: no --mysql line ran before it: there are no rows to show", line)
	}
	for _, a := range args {
		if a == "-follow" || a == "-f" {
			t.Fatalf("%q: a README line that follows does not end: TestReadmeWalk runs lines that do", line)
		}
	}
	run := func(args []string) (string, string, error) {
		cmd := exec.Command(w.bin, append([]string{"tail"}, args...)...)
		cmd.Dir = w.dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}
	out, stderr, err := run(args)
	want := fmt.Sprintf("readme-%d", w.mysqlRuns)
	if err != nil || stderr != "" || out == "" || strings.Contains(out, "not a row message") {
		t.Fatalf("%q: %v; want exit 0, nothing on stderr and rows:\n%s%s", line, err, out, stderr)
	}
	t.Logf("binlake tail printed:\n%s", out)
	if strings.Contains(out, want) {
		return
	}
	// The README's up captures the whole server, and other tests write to the same test
	// MariaDB: their rows may have pushed the README's row out of the last ten. It must
	// still be in the file, read from the start.
	all, stderr, err := run(append(args, "-from", "start"))
	if err != nil || stderr != "" || !strings.Contains(all, want) {
		t.Fatalf("%q -from start: %v; want the row %q:\n%s", line, err, want, stderr)
	}
}

// readmeWalk is the state of the One machine walk: the up that runs now, if any.
type readmeWalk struct {
	t      *testing.T
	bin    string
	dir    string // the checkout the README's commands run in (./data is here)
	host   string
	banner []*regexp.Regexp

	cmd     *exec.Cmd
	out     *syncWriter
	outBuf  *bytes.Buffer
	done    chan error
	line    string
	started time.Time
	judge   string // base URL, for the README's :8090
	alarm   string // base URL, for the README's :8092

	runs, curls, mysqlRuns int
	db                     string // the scratch database, made on the first --mysql run
	exec                   func(string)
}

func (w *readmeWalk) output() string {
	w.out.mu.Lock()
	defer w.out.mu.Unlock()
	return w.outBuf.String()
}

// up runs `binlake up args` with the line's variables, after stopping the running one.
func (w *readmeWalk) up(line string, args, env []string, skipped *[]string, haveMySQL bool) {
	t := w.t
	t.Helper()
	var dsn string
	for i, a := range args {
		if (a == "--mysql" || a == "-mysql") && i+1 < len(args) {
			dsn = args[i+1]
		} else if strings.HasPrefix(a, "--mysql=") || strings.HasPrefix(a, "-mysql=") {
			_, dsn, _ = strings.Cut(a, "=")
		}
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != MySQLPasswordEnv {
			t.Fatalf("%q: up reads no variable %s", line, k)
		}
	}
	if dsn != "" {
		m, err := ParseDSN(dsn)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if m.Addr != readmeTestMySQL {
			// Not the test MariaDB: a server of the reader's (repl@…:3306 with its password
			// in the environment) that is not here. The line is checked without connecting.
			var vars []string
			for _, kv := range env {
				k, _, _ := strings.Cut(kv, "=")
				vars = append(vars, "$"+k)
			}
			t.Logf("parses: user %s at %s, password from %v; not run: no such server here", m.User, m.Addr, vars)
			return
		}
		if !haveMySQL {
			*skipped = append(*skipped, line)
			t.Logf("parses; not run: %s is not set", testenv.MySQL.Env)
			return
		}
		a := testenv.RequireMySQL(t)
		local := a.User + "@tcp(" + a.Addr + ")/"
		if strings.Contains(dsn, "://") {
			local = "mysql://" + url.PathEscape(a.User) + "@" + a.Addr + "/"
		}
		args = append([]string(nil), args...)
		for i := range args {
			args[i] = strings.Replace(args[i], dsn, local, 1)
		}
		env = append(env, MySQLPasswordEnv+"="+a.Password)
		if w.db == "" {
			w.db, w.exec, _ = testenv.ScratchDatabase(t, "readme")
			w.exec("CREATE TABLE " + w.db + ".t (id INT PRIMARY KEY, v VARCHAR(40))")
		}
	}
	w.stop()

	for _, f := range []string{"judge-http", "alarm-http", "wave-http"} {
		set := false
		for _, a := range args {
			set = set || a == "-"+f || a == "--"+f || strings.HasPrefix(a, "-"+f+"=") || strings.HasPrefix(a, "--"+f+"=")
		}
		if !set {
			args = append(args, "--"+f, "127.0.0.1:0")
		}
	}
	w.outBuf = &bytes.Buffer{}
	w.out = &syncWriter{w: w.outBuf}
	w.cmd = exec.Command(w.bin, append([]string{"up"}, args...)...)
	w.cmd.Dir = w.dir
	w.cmd.Env = env
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BINLAKE_") {
			w.cmd.Env = append(w.cmd.Env, kv)
		}
	}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.done = make(chan error, 1)
	go func(c *exec.Cmd, done chan error) { done <- c.Wait() }(w.cmd, w.done)
	w.line, w.started = line, time.Now()
	w.runs++
	t.Logf("running: binlake up %s", strings.Join(args, " "))

	// The README's banner, with the real addresses.
	var addrs []string
	poll(t, "the README's banner", 60*time.Second, func() (bool, string) {
		w.exited()
		out := w.output()
		addrs = addrs[:0]
		for _, re := range w.banner {
			m := re.FindStringSubmatch(out)
			if m == nil {
				return false, fmt.Sprintf("no line %q in:\n%s", re, out)
			}
			addrs = append(addrs, m[1:]...)
		}
		return true, ""
	})
	if len(addrs) != 3 || addrs[0] != addrs[1] {
		t.Fatalf("%q: the banner's addresses %v: want the status page, the judge API (the same) and the alarm API", line, addrs)
	}
	w.judge, w.alarm = addrs[1], addrs[2]
	t.Logf("banner: status page and judge API %s, alarm API %s", w.judge, w.alarm)
	w.waitNode("GET /v1/nodes lists this host")

	if dsn != "" {
		wave := regexp.MustCompile(`(?m)^  wave +(http://\S+)/status +\(rows to (\S+)\)$`).FindStringSubmatch(w.output())
		if wave == nil {
			t.Fatalf("%q: the banner has no wave line:\n%s", line, w.output())
		}
		if want := filepath.Join(w.dir, "data", RowsFile); wave[2] != want {
			t.Fatalf("%q: rows go to %s, want %s (the README's data/rows.jsonl)", line, wave[2], want)
		}
		waitRunning(t, wave[1])
		w.mysqlRuns++
		v := fmt.Sprintf("readme-%d", w.mysqlRuns)
		w.exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d, '%s')", w.db, w.mysqlRuns, v))
		poll(t, "the inserted row in data/rows.jsonl", 30*time.Second, func() (bool, string) {
			w.exited()
			return readmeRowArrived(t, wave[2], w.db, v), w.output()
		})
		t.Logf("row %s.t (%q) is a line of data/rows.jsonl", w.db, v)
	}
}

// readmeRowArrived reports whether the rows file holds the insert of v into db.t, on the
// default topic.
func readmeRowArrived(t *testing.T, path, db, v string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	// Whole lines only: the wave may be writing the last one as it is read.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l sink.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		var msg struct {
			Database, Table, Type string
			Data                  map[string]any
		}
		if json.Unmarshal(l.Message, &msg) == nil && msg.Database == db && msg.Table == "t" &&
			msg.Type == "insert" && msg.Data["v"] == v {
			if l.Topic != DefaultRowsTopic {
				t.Fatalf("row %s on topic %s, want %s", l.Message, l.Topic, DefaultRowsTopic)
			}
			return true
		}
	}
	return false
}

// waitNode polls /v1/nodes until this host is a live node.
func (w *readmeWalk) waitNode(what string) {
	w.t.Helper()
	poll(w.t, what, 30*time.Second, func() (bool, string) {
		w.exited()
		code, body, err := call("GET", w.judge+"/v1/nodes", "")
		var ns struct {
			Nodes []struct {
				Node string
				Live bool
			}
		}
		if err == nil && code == 200 && json.Unmarshal(body, &ns) == nil {
			for _, n := range ns.Nodes {
				if n.Node == w.host && n.Live {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d %s %v", code, body, err)
	})
	w.t.Logf("%s %s after the start", w.host, time.Since(w.started).Round(time.Millisecond))
}

// curl makes the README's curl request to the running up.
func (w *readmeWalk) curl(line string, args []string) {
	t := w.t
	t.Helper()
	if w.cmd == nil {
		t.Fatalf("%q: no binlake up runs", line)
	}
	method, body, target := "GET", "", ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s":
		case strings.HasPrefix(a, "-X") && len(a) > 2:
			method = a[2:]
		case (a == "-X" || a == "-d") && i+1 < len(args):
			if a == "-X" {
				method = args[i+1]
			} else {
				body = args[i+1]
				if method == "GET" {
					method = "POST"
				}
			}
			i++
		case !strings.HasPrefix(a, "-") && target == "":
			target = a
		default:
			t.Fatalf("%q: TestReadmeWalk knows curl -s, -X and -d, not %q", line, a)
		}
	}
	u, err := url.Parse("http://" + strings.TrimPrefix(target, "http://"))
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	base := map[string]string{"8090": w.judge, "8092": w.alarm}[u.Port()]
	if base == "" || (u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1") {
		t.Fatalf("%q: %s is neither the judge (8090) nor the alarm (8092) of the README's banner", line, u.Host)
	}
	w.curls++
	do := func() (int, []byte, error) {
		req, err := http.NewRequest(method, base+u.RequestURI(), strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl -d sends
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	switch method + " " + u.Path {
	case "POST /v1/placement":
		var in struct{ Instance string }
		if err := json.Unmarshal([]byte(body), &in); err != nil || in.Instance == "" {
			t.Fatalf("%q: the body is no {\"instance\":…}: %v", line, err)
		}
		poll(t, line, 30*time.Second, func() (bool, string) {
			w.exited()
			code, b, err := do()
			var d struct {
				Node        string
				Reservation struct{ Instance, Node string }
			}
			ok := err == nil && code == 200 && json.Unmarshal(b, &d) == nil && d.Node == w.host &&
				d.Reservation.Instance == in.Instance && d.Reservation.Node == w.host
			return ok, fmt.Sprintf("%d %s %v", code, b, err)
		})
		t.Logf("placement: %s for %s", w.host, in.Instance)
	case "GET /v1/nodes":
		w.waitNode(line)
	case "GET /v1/alerts":
		code, b, err := do()
		var d struct{ Alerts []map[string]any }
		var raw map[string]json.RawMessage
		if err != nil || code != 200 || json.Unmarshal(b, &raw) != nil || raw["alerts"] == nil || json.Unmarshal(b, &d) != nil {
			t.Fatalf("%q: %d %s %v: want 200 and {\"alerts\":[…]}", line, code, b, err)
		}
		t.Logf("alerts: %d", len(d.Alerts))
	default:
		t.Fatalf("%q: TestReadmeWalk has no rule for %s %s: add one", line, method, u.Path)
	}
}

// exited fails the test when the running up ended on its own.
func (w *readmeWalk) exited() {
	w.t.Helper()
	select {
	case err := <-w.done:
		w.cmd = nil
		w.t.Fatalf("%q: up exited (%v):\n%s", w.line, err, w.output())
	default:
	}
}

// stop sends SIGINT to the running up, if any: it must exit 0 within its shutdown timeout.
func (w *readmeWalk) stop() {
	t := w.t
	t.Helper()
	if w.cmd == nil {
		return
	}
	c := w.cmd
	w.cmd = nil
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Fatalf("%q: up after SIGINT: %v (want exit 0)\n%s", w.line, err, w.output())
		}
	case <-time.After(45 * time.Second):
		c.Process.Kill()
		<-w.done
		t.Fatalf("%q: up did not stop within 45 s of SIGINT\n%s", w.line, w.output())
	}
	if out := w.output(); strings.Contains(out, "level=ERROR") {
		t.Fatalf("%q: up logged errors:\n%s", w.line, out)
	}
	t.Logf("SIGINT: exit 0 (%q)", w.line)
}

// kill ends a up the test left running (it failed).
func (w *readmeWalk) kill() {
	if w.cmd != nil {
		w.cmd.Process.Kill()
		<-w.done
		w.cmd = nil
	}
}

// assignments splits leading NAME=value words (a command's environment) from the command.
func assignments(words []string) (env, rest []string) {
	name := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	for len(words) > 0 && name.MatchString(words[0]) {
		env, words = append(env, words[0]), words[1:]
	}
	return env, words
}

// shellWords splits a command line as sh does for the README's lines: blanks separate
// words, single quotes keep everything, double quotes keep all but \ before " \ $ `,
// and a backslash outside quotes keeps the next character. "&&", ";" and "|" end the
// first command: the rest is dropped (the git clone line's cd). Expansions are errors.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed '")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(line) {
					return nil, errors.New(`unclosed "`)
				}
				if line[i] == '"' {
					break
				}
				if line[i] == '$' || line[i] == '`' {
					return nil, fmt.Errorf("expansion in %q", line)
				}
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '&' || c == ';' || c == '|':
			if inWord {
				words = append(words, cur.String())
			}
			return words, nil
		case c == '$' || c == '`' || c == '<' || c == '>':
			if c == '<' && !inWord {
				// "<this repository>": a placeholder, one word.
				j := strings.IndexByte(line[i:], '>')
				if j < 0 {
					return nil, fmt.Errorf("redirection in %q", line)
				}
				cur.WriteString(line[i : i+j+1])
				i, inWord = i+j, true
				continue
			}
			return nil, fmt.Errorf("expansion or redirection in %q", line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	for line, want := range map[string][]string{
		`make run ARGS='--mysql mysql://root@127.0.0.1:3307/'`:                  {"make", "run", "ARGS=--mysql mysql://root@127.0.0.1:3307/"},
		`curl -s -XPOST localhost:8090/v1/placement -d '{"instance":"orders"}'`: {"curl", "-s", "-XPOST", "localhost:8090/v1/placement", "-d", `{"instance":"orders"}`},
		`A=1 ./bin/binlake up --mysql "a\"b" c\ d`:                              {"A=1", "./bin/binlake", "up", "--mysql", `a"b`, "c d"},
		`git clone <this repository> binlake && cd binlake`:                     {"git", "clone", "<this repository>", "binlake"},
	} {
		got, err := shellWords(line)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	for _, bad := range []string{`echo 'open`, `echo "$HOME"`, "echo $x", "echo > f"} {
		if _, err := shellWords(bad); err == nil {
			t.Errorf("shellWords(%q): no error", bad)
		}
	}
}
