package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
)

// built holds binlake and binlake-agent (-tags agentonly), built once per test process
// from this checkout.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binaries returns the paths of binlake and binlake-agent built from this checkout.
func binaries(t *testing.T) (full, agent string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds binlake; skipped with -short")
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "binlake-deploy-test-")
		if built.err != nil {
			return
		}
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		for _, b := range []struct {
			name string
			tags []string
		}{{"binlake", nil}, {"binlake-agent", []string{"-tags", "agentonly"}}} {
			args := append(append([]string{"build"}, b.tags...), "-o", filepath.Join(built.dir, b.name), "../cmd/binlake")
			if out, err := exec.Command(gobin, args...).CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go build %s: %v\n%s", b.name, err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "binlake"), filepath.Join(built.dir, "binlake-agent")
}

// binlakeEnv is the environment without BINLAKE_* variables: a token or password in the
// test's environment would stand in for the files a config names.
func binlakeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BINLAKE_") {
			env = append(env, kv)
		}
	}
	return env
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// runIn runs argv in dir (a fresh temporary folder when empty) and returns its output.
func runIn(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = binlakeEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return r
}

// execStart returns the ExecStart of an installed unit, split into words.
func execStart(t *testing.T, unit string) []string {
	t.Helper()
	v := unitKeys(t, unit)["Service.ExecStart"]
	if len(v) != 1 {
		t.Fatalf("%s: ExecStart %q, want one", unit, v)
	}
	return strings.Fields(v[0])
}

// staged rewrites the absolute paths of argv that exist under dest to their staged copies.
func staged(dest string, argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if strings.HasPrefix(a, "/") {
			if _, err := os.Stat(dest + a); err == nil {
				out[i] = dest + a
			}
		}
	}
	return out
}

// TestInstalledConfigsCheck stages an install (DESTDIR) and runs each unit's ExecStart,
// with its staged binary and configs, plus --check, in an empty working directory as the
// unit's state directory: every installed config must be valid as installed, the check
// must create nothing, and every installed config must be read by a unit.
func TestInstalledConfigsCheck(t *testing.T) {
	full, agent := binaries(t)
	path, _ := fakeTools(t)
	dest := t.TempDir()
	if out, err := install(t, path, []string{"DESTDIR=" + dest}, "--binary", full, "--agent-binary", agent); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	read := map[string]bool{}
	for _, r := range roles {
		argv := execStart(t, dest+"/etc/systemd/system/binlake-"+r+".service")
		for i, a := range argv {
			if (a == "--config" || a == "--policies") && i+1 < len(argv) {
				read[argv[i+1]] = true
			}
		}
		argv = append(staged(dest, argv), "--check")
		if !strings.HasPrefix(argv[0], dest) {
			t.Fatalf("binlake-%s: ExecStart binary %s is not installed", r, argv[0])
		}
		state := t.TempDir()
		res := runIn(t, state, argv...)
		if res.code != 0 || !strings.Contains(res.stdout, "valid") || res.stderr != "" {
			t.Errorf("binlake-%s: %s --check:\n%s", r, strings.Join(argv, " "), res)
		} else {
			t.Logf("binlake-%s: %s", r, strings.TrimSpace(res.stdout))
		}
		if left, _ := os.ReadDir(state); len(left) != 0 {
			t.Errorf("binlake-%s --check created %v in its working directory", r, left)
		}
	}
	installed, _ := filepath.Glob(dest + "/etc/binlake/*.yaml")
	for _, f := range installed {
		if rel := strings.TrimPrefix(f, dest); !read[rel] {
			t.Errorf("%s is installed but no unit reads it, so nothing checks it", rel)
		}
	}
	if len(read) != len(installed) {
		t.Errorf("the units read %v; installed: %v", read, installed)
	}
}

// TestExamplesCheck runs --check on the configs in deploy/. The role examples and the
// alarm's starters pass as they are. alarm.example.yaml names secret files under
// /etc/binlake (robot URLs, the SMTP password) that only an operator can write: as
// shipped it must fail naming the missing file; with those files present it must pass,
// and no secret may appear in the output.
func TestExamplesCheck(t *testing.T) {
	full, _ := binaries(t)
	abs := func(f string) string {
		p, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, r := range []string{"wave", "agent", "judge"} {
		res := runIn(t, "", full, r, "--check", "--config", abs(r+".example.yaml"))
		if res.code != 0 || !strings.Contains(res.stdout, r+".example.yaml is valid") {
			t.Errorf("%s.example.yaml:\n%s", r, res)
		}
	}
	res := runIn(t, "", full, "alarm", "--check", "--config", abs("alarm.yaml"), "--policies", abs("policies.yaml"))
	if res.code != 0 || !strings.Contains(res.stdout, "channels log=log") {
		t.Errorf("the starter alarm.yaml and policies.yaml:\n%s", res)
	}

	exb, err := os.ReadFile("alarm.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ex := string(exb)
	if _, err := os.Stat("/etc/binlake"); err == nil {
		t.Log("/etc/binlake exists here: not asserting that the example's secret files are missing")
	} else {
		// Every missing file at once, in the file's order, the same on every run (the
		// channels are a map: one at a time, a different one each run, was the old way).
		var want []string
		for _, m := range regexp.MustCompile(`(?m)^ +([a-z_]+_file): (/etc/binlake/[a-z.]+)`).FindAllStringSubmatch(ex, -1) {
			want = append(want, fmt.Sprintf(`%s:%d: field "channels.`, abs("alarm.example.yaml"), lineNumber(ex, m[0])))
			want[len(want)-1] += `[a-z-]+(\.smtp)?\.` + m[1] + `": read secret: open ` + regexp.QuoteMeta(m[2]) + `: no such file or directory`
		}
		if len(want) < 5 {
			t.Fatalf("alarm.example.yaml names %d secret files, want at least 5", len(want))
		}
		re := regexp.MustCompile(`^binlake: ` + strings.Join(want, "\n") + "\n$")
		first := ""
		for range 3 {
			res = runIn(t, "", full, "alarm", "--check", "--config", abs("alarm.example.yaml"), "--policies", abs("policies.example.yaml"))
			if res.code != 1 || res.stdout != "" || !re.MatchString(res.stderr) {
				t.Fatalf("alarm.example.yaml without its secret files: want exit 1 naming each channel's missing file at its line, in the file's order\n%s\nwant %s", res, re)
			}
			if first == "" {
				first = res.stderr
			} else if res.stderr != first {
				t.Fatalf("the report changed from one run to the next:\n%s\n%s", first, res.stderr)
			}
		}
	}

	// The same example with its secret files in a folder of the test's.
	dir := t.TempDir()
	cfg := strings.ReplaceAll(ex, "/etc/binlake/", dir+"/")
	const sentinel = "s3cret-do-not-log"
	secrets := map[string]string{
		"dingtalk.url":    "https://oapi.dingtalk.com/robot/send?access_token=" + sentinel,
		"dingtalk.secret": "SEC" + sentinel,
		"wecom.url":       "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + sentinel,
		"slack.url":       "https://hooks.slack.com/services/T0/B0/" + sentinel,
		"smtp.password":   sentinel,
	}
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(dir)+`/([a-z.-]+)`).FindAllStringSubmatch(cfg, -1) {
		if _, ok := secrets[m[1]]; !ok && !strings.HasPrefix(strings.TrimSpace(lineOf(cfg, m[0])), "#") {
			t.Fatalf("alarm.example.yaml names %s, which this test does not know: add a value", m[1])
		}
	}
	for name, v := range secrets {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "alarm.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	res = runIn(t, "", full, "alarm", "--check", "--config", cfgPath, "--policies", abs("policies.example.yaml"))
	if res.code != 0 || !strings.Contains(res.stdout, "9 policies") {
		t.Errorf("alarm.example.yaml with its secret files:\n%s", res)
	}
	if strings.Contains(res.stdout+res.stderr, sentinel) {
		t.Errorf("--check printed a secret:\n%s", res)
	}
}

// lineNumber returns the number (from 1) of the line of s that holds sub.
func lineNumber(s, sub string) int {
	return strings.Count(s[:strings.Index(s, sub)], "\n") + 1
}

// lineOf returns the line of s that holds sub.
func lineOf(s, sub string) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}

// TestCheckReportsErrors: --check of a broken config exits 1, prints nothing on stdout
// and names the file, the line and the key at fault (and the secret file, if one is
// missing). The last cases are ones --check passed while start refused them.
func TestCheckReportsErrors(t *testing.T) {
	full, agent := binaries(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name, role, config string
		want               []string
	}{
		{"wave unknown key", "wave", "node: w1\ncoordinator:\n  kind: zk\n  servrs: [127.0.0.1:2181]\n",
			[]string{"wave.yaml:4: unknown key \"coordinator.servrs\"", "servers"}},
		{"wave judge token file", "wave", "node: w1\ncoordinator: {kind: single, path: ./coord.json}\nsink: {kind: stdout}\nbalancer:\n  judge: http://127.0.0.1:8090\n  judge_token_file: " + missing + "\n",
			[]string{"wave.yaml:6: field \"balancer.judge_token_file\": read secret: open " + missing}},
		{"agent bad value", "agent", "interval: -1s\n", []string{"agent.yaml", "interval"}},
		{"agent token file", "agent", "sink:\n  kind: http\n  http:\n    url: http://127.0.0.1:8090/v1/metrics\n    token_file: " + missing + "\n",
			[]string{"agent.yaml:5: field \"sink.http.token_file\": read secret: open " + missing}},
		{"judge store kind", "judge", "bus: {kind: none}\nstore:\n  kind: mongo\n", []string{"judge.yaml:3: field \"store.kind\": \"mongo\": want sqlite or elastic"}},
		{"judge token file", "judge", "bus: {kind: none}\nhttp:\n  token_file: " + missing + "\n", []string{"judge.yaml:3: field \"http.token_file\": read secret: open " + missing}},
		{"judge elastic password file", "judge", "bus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n    addresses: [http://127.0.0.1:9200]\n    username: binlake\n    password_file: " + missing + "\n",
			[]string{"judge.yaml:7: field \"store.elastic.password_file\": read secret: open " + missing}},
		{"alarm channel secret", "alarm", "bus: {kind: none}\nchannels:\n  page:\n    kind: slack\n    url_file: " + missing + "\n",
			[]string{"alarm.yaml:5: field \"channels.page.url_file\": read secret: open " + missing}},
		// What start refuses, --check refuses too, at the key's line (issue 33).
		{"judge elastic prefix without its final separator", "judge", "bus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n    addresses: [http://127.0.0.1:9200]\n    prefix: nc-prod-metrics\n",
			[]string{`judge.yaml:6: field "store.elastic.prefix": "nc-prod-metrics": must end in '-' or '.' (the daily indices`, `e.g. "nc-prod-metrics-"`}},
		{"judge listen port out of range", "judge", "bus: {kind: none}\nhttp:\n  listen: 127.0.0.1:80911\n",
			[]string{`judge.yaml:3: field "http.listen": "127.0.0.1:80911": port "80911": want a number from 0 to 65535`}},
		{"wave zookeeper root without its slash", "wave", "node: w1\ncoordinator:\n  kind: zk\n  servers: [127.0.0.1:2181]\n  root: binlake\nsink: {kind: stdout}\n",
			[]string{`wave.yaml:5: field "coordinator.root": "binlake": must start with a slash, e.g. "/binlake"`}},
		{"agent listen port out of range", "agent", "http:\n  listen: 127.0.0.1:80911\n",
			[]string{`agent.yaml:2: field "http.listen": "127.0.0.1:80911": port "80911": want a number from 0 to 65535`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), tc.role+".yaml")
			if err := os.WriteFile(cfg, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			bins := []string{full}
			if tc.role == "agent" {
				bins = append(bins, agent) // the binary binlake-agent.service runs
			}
			for _, bin := range bins {
				argv := []string{bin, tc.role, "--check", "--config", cfg}
				if tc.role == "alarm" {
					pol := filepath.Join(t.TempDir(), "policies.yaml")
					os.WriteFile(pol, []byte("policies:\n  - {name: dead, nodata: 3, severity: P1, channels: [page]}\n"), 0o600)
					argv = append(argv, "--policies", pol)
				}
				res := runIn(t, "", argv...)
				if res.code != 1 || res.stdout != "" {
					t.Errorf("%s: want exit 1 and no stdout\n%s", filepath.Base(bin), res)
				}
				for _, w := range tc.want {
					if !strings.Contains(res.stderr, w) {
						t.Errorf("%s: stderr does not name %q:\n%s", filepath.Base(bin), w, res.stderr)
					}
				}
			}
		})
	}
}

// TestCheckConnectsToNothing points every address of every role's config (Kafka,
// ZooKeeper, Elasticsearch, the judge, the wave's /metrics) at a listener of the test's:
// --check must pass without a single connection to it.
func TestCheckConnectsToNothing(t *testing.T) {
	full, agent := binaries(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	a := ln.Addr().String()
	configs := map[string]string{
		"wave": "node: w1\ncoordinator: {kind: zk, servers: [" + a + "]}\nsink: {kind: kafka, kafka: {brokers: [" + a + "]}}\n" +
			"balancer: {judge: http://" + a + "}\n",
		"agent": "node: w1\nsink: {kind: kafka, kafka: {brokers: [" + a + "]}}\ncollectors: {host: {}, wave: {url: http://" + a + "/metrics}}\n",
		"judge": "bus: {kind: kafka, brokers: [" + a + "]}\nstore: {kind: elastic, elastic: {addresses: [http://" + a + "]}}\n",
		"alarm": "bus: {kind: kafka, brokers: [" + a + "]}\ncoordinator: {kind: zk, servers: [" + a + "]}\n" +
			"channels: {hook: {kind: webhook, url: http://" + a + "/alerts}}\n",
	}
	for role, cfg := range configs {
		path := filepath.Join(t.TempDir(), role+".yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		bin := full
		if role == "agent" {
			bin = agent
		}
		argv := []string{bin, role, "--check", "--config", path}
		if role == "alarm" {
			pol := filepath.Join(t.TempDir(), "policies.yaml")
			os.WriteFile(pol, []byte("policies:\n  - {name: dead, nodata: 3, severity: P1, channels: [hook]}\n"), 0o600)
			argv = append(argv, "--policies", pol)
		}
		if res := runIn(t, "", argv...); res.code != 0 {
			t.Errorf("%s --check:\n%s", role, res)
		}
	}
	time.Sleep(100 * time.Millisecond) // a connection made by an exited process is queued by now
	if n := accepted.Load(); n != 0 {
		t.Errorf("--check made %d connections to the addresses in the configs", n)
	}
}

// portRow is a row of deploy/README.md's "Ports" table.
var portRow = regexp.MustCompile("(?m)^\\| (wave|agent|judge|alarm|`binlake up`) \\|([^|]*)\\|([^|]*)\\|([^|]*)\\|")

// TestPortsTable holds deploy/README.md's "Ports" table to the binary: every flag it names
// exists in that role's -h, each role's default address is what the installed config
// sets, and binlake up's defaults are the ones -h shows.
func TestPortsTable(t *testing.T) {
	full, _ := binaries(t)
	guide, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := portRow.FindAllStringSubmatch(string(guide), -1)
	if len(rows) != 5 {
		t.Fatalf("the ports table has %d rows for the roles and binlake up, want 5", len(rows))
	}
	flagName := regexp.MustCompile("`--([a-z-]+)`")
	addr := regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	for _, row := range rows {
		role := strings.Trim(row[1], "`")
		role = strings.TrimPrefix(role, "binlake ")
		help := runIn(t, "", full, role, "-h")
		usage := help.stdout + help.stderr
		for _, f := range flagName.FindAllStringSubmatch(row[4], -1) {
			if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(f[1]) + `\b`).MatchString(usage) {
				t.Errorf("ports table: %s has no flag --%s; binlake %s -h:\n%s", role, f[1], role, usage)
			}
		}
		for _, a := range addr.FindAllString(row[2], -1) {
			if role == "up" {
				if !strings.Contains(usage, `(default "`+a+`")`) {
					t.Errorf("ports table: binlake up's default %s is not in its -h:\n%s", a, usage)
				}
				continue
			}
			src := role + ".example.yaml"
			if _, err := os.Stat(role + ".yaml"); err == nil {
				src = role + ".yaml"
			}
			b, _ := os.ReadFile(src)
			if !regexp.MustCompile(`(?m)^\s+listen: ` + regexp.QuoteMeta(a) + `\b`).Match(b) {
				t.Errorf("ports table: %s listens on %s by default, but the installed %s does not", role, a, src)
			}
		}
	}
}

// TestAgentBinaryNamesItself: binlake-agent's help and errors say binlake-agent, the
// command the operator has on an agent-only host, not binlake.
func TestAgentBinaryNamesItself(t *testing.T) {
	_, agent := binaries(t)
	for _, tc := range []struct {
		args []string
		code int
		want string // the start of stderr
	}{
		{[]string{"--help"}, 0, "Usage: binlake-agent <command> [flags]\n\nCommands:\n  agent "},
		{[]string{"agent", "-h"}, 0, "Usage: binlake-agent agent [flags]\n"},
		{[]string{"agent", "-nope"}, 2, "Usage: binlake-agent agent [flags]  (binlake-agent agent -h lists them)\nbinlake-agent agent: flag provided but not defined: -nope\n"},
		{[]string{"wave"}, 2, "Usage: binlake-agent <command> [flags]  (binlake-agent -h lists the commands)\nbinlake-agent: unknown command \"wave\"\n"},
		{[]string{"agent", "--config", "/nonexistent/agent.yaml"}, 1, "binlake-agent: "},
	} {
		res := runIn(t, "", append([]string{agent}, tc.args...)...)
		if res.code != tc.code || !strings.HasPrefix(res.stderr, tc.want) {
			t.Errorf("binlake-agent %s: want exit %d and stderr starting %q\n%s", strings.Join(tc.args, " "), tc.code, tc.want, res)
		}
		if strings.Contains(strings.ReplaceAll(res.stderr, "binlake-agent", ""), "binlake ") {
			t.Errorf("binlake-agent %s names binlake:\n%s", strings.Join(tc.args, " "), res.stderr)
		}
	}
}

// TestGuideCheckSample: the --check output the guide shows (deploy/README.md, Install) is
// what --check prints for the installed judge.yaml with those two values broken, line
// numbers included (it said 147 for placement.algorithm, at 151 in the file).
func TestGuideCheckSample(t *testing.T) {
	full, _ := binaries(t)
	var sample string
	for _, b := range testenv.FencedBlocks(t, "README.md", "## Install", "text") {
		if strings.HasPrefix(b, "binlake: /etc/binlake/judge.yaml:") {
			sample = b
		}
	}
	if sample == "" {
		t.Fatal("README.md, Install: no text block of judge --check output")
	}
	src, err := os.ReadFile(installedFrom("judge"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, e := range []guideEdit{{"\n  retention: 720h ", "\n  retention: -720h "}, {"\n  algorithm: utilisation\n", "\n  algorithm: roundrobin\n"}} {
		if strings.Count(s, e.old) != 1 {
			t.Fatalf("judge.yaml holds %q %d times, want once", e.old, strings.Count(s, e.old))
		}
		s = strings.Replace(s, e.old, e.new, 1)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "judge.yaml")
	if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runIn(t, dir, full, "judge", "--check", "--config", cfg)
	if got := strings.ReplaceAll(res.stderr, cfg, "/etc/binlake/judge.yaml"); res.code != 1 || got != sample {
		t.Errorf("--check prints (exit %d):\n%s\nthe guide shows:\n%s", res.code, got, sample)
	}
}
