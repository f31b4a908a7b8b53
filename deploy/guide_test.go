package deploy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
)

// guideCommands returns the commands of the ```sh blocks of README.md's section
// heading, one per line (continuations joined, comments dropped).
func guideCommands(t *testing.T, heading string) []string {
	t.Helper()
	return testenv.ShellCommands(t, "README.md", heading)
}

// words splits a command line into words, removing double quotes and expanding $pkgdir.
func words(line string, vars map[string]string) []string {
	var out []string
	for _, w := range strings.Fields(line) {
		w = strings.Trim(w, `"`)
		for k, v := range vars {
			w = strings.ReplaceAll(w, "$"+k, v)
		}
		out = append(out, w)
	}
	return out
}

// guideEdit is an edit the Install section's table asks for: old, which the installed
// file must hold exactly once, becomes new.
type guideEdit struct{ old, new string }

// unitProc is a unit's ExecStart started by TestGuideWalk.
type unitProc struct {
	name   string
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	health string
	done   chan error
	exited bool // done was received
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestGuideWalk walks the sh blocks of deploy/README.md's "Install" section, in order, on a
// staging tree that stands for the machine's /: each command has a rule here, and a
// command without one fails the test, so the guide cannot grow a step nobody ran.
//
//   - deploy/install.sh: runs with DESTDIR (the staging tree) and the binaries built from
//     this checkout (install.sh building them itself is TestInstallBuilds); a command that
//     sets --destdir itself (the packager's) gets its own tree and is checked as well.
//   - sudoedit FILES: each file must be installed; the test makes the edits the section's
//     table names (ZooKeeper, Kafka, the Elasticsearch store, a node name, topics, groups
//     and free ports of its own, so that it shares the test services with other tests).
//   - cp /FILE NAME: the installed file is copied into the folder the commands run in.
//   - binlake ROLE --check …, binlake instance add --check -f NAME: runs, as written, on
//     the staged files (NAME in that folder): exit 0, "… is valid"; in a sh -c 'cd DIR &&
//     …', in the staged DIR (the unit's working folder, which install.sh makes).
//   - systemctl enable --now UNITS: each unit must be installed; with the test services
//     (ZooKeeper, Kafka, Elasticsearch) each unit's ExecStart runs, on the staged files, in
//     a working directory of its own, until /healthz answers 200 on every one and the
//     judge lists the agent's node (the metrics went agent → Kafka → judge); then SIGTERM
//     must stop each with exit 0. Without the services that part is skipped (failed
//     under CI=true).
//   - journalctl: the test reads the processes' output instead.
func TestGuideWalk(t *testing.T) {
	full, agent := binaries(t)
	path, calls := fakeTools(t)
	root := t.TempDir() // the machine's /
	work := t.TempDir() // the folder the guide's commands run in (cp's copies land here)
	id := fmt.Sprintf("guide-%d", time.Now().UnixNano())

	// The services, where they run here; the shipped defaults otherwise (then the configs
	// are only checked, not started).
	services := os.Getenv(testenv.ZooKeeper.Env) != "" && os.Getenv(testenv.Kafka.Env) != "" && os.Getenv(testenv.Elasticsearch.Env) != ""
	zk, kafka, es := "127.0.0.1:2181", "127.0.0.1:9092", "http://127.0.0.1:9200"
	if services {
		zk = testenv.Require(t, testenv.ZooKeeper)
		kafka = testenv.Require(t, testenv.Kafka)
		es = testenv.Require(t, testenv.Elasticsearch)
	} else if testenv.InCI() {
		t.Fatalf("CI=true: the walk starts the units against ZooKeeper, Kafka and Elasticsearch; set %s, %s and %s",
			testenv.ZooKeeper.Env, testenv.Kafka.Env, testenv.Elasticsearch.Env)
	}
	port := map[string]string{"wave": freePort(t), "agent": freePort(t), "judge": freePort(t), "alarm": freePort(t)}
	edits := map[string][]guideEdit{
		"/etc/binlake/wave.yaml": {
			{"node: wave-1", "node: " + id},
			{"listen: 127.0.0.1:8091", "listen: 127.0.0.1:" + port["wave"]},
			{"servers: [127.0.0.1:2181]", "servers: [" + zk + "]"},
			{"root: /binlake\n", "root: /binlake-" + id + "\n"},
			{"brokers: [127.0.0.1:9092]", "brokers: [" + kafka + "]"},
		},
		"/etc/binlake/agent.yaml": {
			{"node: wave-1", "node: " + id},
			{"interval: 10s", "interval: 1s"},
			{"listen: 127.0.0.1:9108", "listen: 127.0.0.1:" + port["agent"]},
			{"brokers: [127.0.0.1:9092]", "brokers: [" + kafka + "]"},
			{"topic: binlake.metrics", "topic: binlake." + id},
			{"url: http://127.0.0.1:8091/metrics", "url: http://127.0.0.1:" + port["wave"] + "/metrics"},
		},
		"/etc/binlake/judge.yaml": {
			{`node: ""`, "node: " + id},
			{"listen: 127.0.0.1:8090", "listen: 127.0.0.1:" + port["judge"]},
			{"brokers: [127.0.0.1:9092]", "brokers: [" + kafka + "]"},
			{"topic: binlake.metrics", "topic: binlake." + id},
			{"kind: sqlite", "kind: elastic"},
			{"addresses: []", "addresses: [" + es + "]"},
			{`prefix: ""`, "prefix: binlake-" + id + "-"},
		},
		"/etc/binlake/alarm.yaml": {
			{"listen: 127.0.0.1:8092", "listen: 127.0.0.1:" + port["alarm"]},
			{"brokers: [127.0.0.1:9092]", "brokers: [" + kafka + "]"},
			{"topic: binlake.metrics", "topic: binlake." + id},
			{"group: binlake-alarm", "group: binlake-alarm-" + id},
		},
	}

	sudo := regexp.MustCompile(`^sudo( -u binlake)? `)
	var procs []*unitProc
	t.Cleanup(func() {
		for _, p := range procs {
			if !p.exited {
				p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
	var checked, enabled []string
	// sh -c 'cd DIR && COMMAND': COMMAND run in the staged DIR (a unit's working folder).
	inDir := regexp.MustCompile(`^sh -c 'cd (/\S+) && ([^']+)'$`)
	for _, line := range guideCommands(t, "## Install") {
		t.Logf("$ %s", line)
		cmd, dir := sudo.ReplaceAllString(line, ""), work
		if m := inDir.FindStringSubmatch(cmd); m != nil {
			cmd, dir = m[2], root+m[1]
		}
		w := words(cmd, map[string]string{"pkgdir": filepath.Join(t.TempDir(), "pkg")})
		switch w[0] {
		case "deploy/install.sh":
			args := []string{"--binary", full, "--agent-binary", agent}
			dest := root
			for i := 1; i < len(w); i++ {
				switch w[i] {
				case "--binary", "--agent-binary":
					i++ // the binaries built here
				case "--destdir":
					dest = w[i+1]
					args = append(args, w[i], w[i+1])
					i++
				default:
					args = append(args, w[i])
				}
			}
			out, err := install(t, path, []string{"DESTDIR=" + root}, args...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			if dest != root {
				// The packager's tree: the same files under its layout, each config valid.
				checkTree(t, dest)
			}
		case "sudoedit":
			for _, f := range w[1:] {
				es, ok := edits[f]
				if !ok {
					t.Fatalf("%s: TestGuideWalk knows no edits for %s", line, f)
				}
				b, err := os.ReadFile(root + f)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				s := string(b)
				for _, e := range es {
					if n := strings.Count(s, e.old); n != 1 {
						t.Fatalf("%s: %q is %d times in the installed file, want once (the guide's table says to change it)", f, e.old, n)
					}
					s = strings.Replace(s, e.old, e.new, 1)
				}
				if err := os.WriteFile(root+f, []byte(s), 0o640); err != nil {
					t.Fatal(err)
				}
				delete(edits, f)
			}
		case "cp":
			// A file of the install copied into the user's folder (an example to edit).
			if len(w) != 3 || !strings.HasPrefix(w[1], "/") || strings.HasPrefix(w[2], "/") {
				t.Fatalf("%s: TestGuideWalk knows cp /installed/file local-name only", line)
			}
			b, err := os.ReadFile(root + w[1])
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if err := os.WriteFile(filepath.Join(work, w[2]), b, 0o600); err != nil {
				t.Fatal(err)
			}
		case "binlake", "binlake-agent":
			argv := append([]string{root + "/usr/local/bin/" + w[0]}, staged(root, w[1:])...)
			res := runIn(t, dir, argv...)
			if res.code != 0 || !regexp.MustCompile(` (is|are) valid`).MatchString(res.stdout) {
				t.Fatalf("%s:\n%s", line, res)
			}
			checked = append(checked, w[1])
		case "systemctl":
			if len(w) < 4 || w[1] != "enable" || w[2] != "--now" {
				t.Fatalf("%s: TestGuideWalk knows systemctl enable --now only", line)
			}
			for _, u := range w[3:] {
				unit := root + "/etc/systemd/system/" + u + ".service"
				if _, err := os.Stat(unit); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				enabled = append(enabled, strings.TrimPrefix(u, "binlake-"))
				if services {
					procs = append(procs, startUnit(t, root, unit, port))
				}
			}
		case "journalctl":
		default:
			t.Fatalf("deploy/README.md, Install: TestGuideWalk has no rule for %q: add one", line)
		}
	}
	if len(edits) != 0 {
		t.Errorf("the guide never edits %v", edits)
	}
	for _, want := range [][]string{checked, enabled} {
		for _, r := range roles {
			if !strings.Contains(" "+strings.Join(want, " ")+" ", " "+r+" ") {
				t.Errorf("the Install section does not check and start every role: %s missing from %v", r, want)
			}
		}
	}
	if c := calls(); c != "" {
		t.Errorf("the walk ran system tools:\n%s", c)
	}
	if !services {
		t.Skipf("the configs pass --check; starting the units needs %s, %s and %s (make services-up)",
			testenv.ZooKeeper.Env, testenv.Kafka.Env, testenv.Elasticsearch.Env)
	}

	// Every unit runs: /healthz answers, and the judge has the agent's batches.
	deadline := time.Now().Add(90 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	get := func(url string) (int, string) {
		resp, err := client.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	nodeRE := regexp.MustCompile(`"node":\s*"` + regexp.QuoteMeta(id) + `"`)
	for _, p := range procs {
		for {
			select {
			case err := <-p.done:
				p.exited = true
				t.Fatalf("binlake-%s exited (%v) before serving:\n%s", p.name, err, p.out)
			default:
			}
			code, body := get(p.health)
			if code == http.StatusOK {
				t.Logf("binlake-%s: %s %d", p.name, p.health, code)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("binlake-%s: %s answers %d %s\n%s", p.name, p.health, code, body, p.out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	nodes := "http://127.0.0.1:" + port["judge"] + "/v1/nodes"
	for {
		_, body := get(nodes)
		if nodeRE.MatchString(body) {
			t.Logf("the judge lists node %s: agent → Kafka → judge works", id)
			break
		}
		if time.Now().After(deadline) {
			for _, p := range procs {
				t.Logf("binlake-%s output:\n%s", p.name, p.out)
			}
			t.Fatalf("the judge does not list the agent's node %s: %s", id, body)
		}
		time.Sleep(500 * time.Millisecond)
	}

	scrapeUnits(t, port)

	// systemctl stop: SIGTERM, a clean exit within the units' TimeoutStopSec (45 s).
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			p.exited = true
			if err != nil {
				t.Errorf("binlake-%s: SIGTERM: %v\n%s", p.name, err, p.out)
			}
		case <-time.After(45 * time.Second):
			t.Errorf("binlake-%s did not stop within 45 s of SIGTERM\n%s", p.name, p.out)
			p.cmd.Process.Kill()
			<-p.done
			p.exited = true
		}
		if out := p.out.String(); strings.Contains(out, "level=ERROR") {
			t.Errorf("binlake-%s logged errors:\n%s", p.name, out)
		}
	}
}

// startUnit starts a staged unit's ExecStart the way systemd would: in its state
// directory (WorkingDirectory), with its environment file when there is one.
func startUnit(t *testing.T, root, unit string, port map[string]string) *unitProc {
	t.Helper()
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(unit), "binlake-"), ".service")
	argv := staged(root, execStart(t, unit))
	if !strings.HasPrefix(argv[0], root) {
		t.Fatalf("%s: ExecStart binary %s is not installed", unit, argv[0])
	}
	state := filepath.Join(root, "var/lib/binlake", name)
	if err := os.MkdirAll(state, 0o750); err != nil {
		t.Fatal(err)
	}
	p := &unitProc{name: name, out: &testenv.SyncBuffer{}, done: make(chan error, 1),
		health: "http://127.0.0.1:" + port[name] + "/healthz"}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = state
	p.cmd.Env = binlakeEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", unit, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Logf("started binlake-%s: %s", name, strings.Join(argv, " "))
	return p
}

// checkTree runs --check on the configs of a packager's tree through its units.
func checkTree(t *testing.T, dest string) {
	t.Helper()
	units, _ := filepath.Glob(dest + "/usr/lib/systemd/system/binlake-*.service")
	if len(units) != len(roles) {
		t.Fatalf("the packager's tree has units %v, want one per role", units)
	}
	for _, u := range units {
		argv := append(staged(dest, execStart(t, u)), "--check")
		if !strings.HasPrefix(argv[0], dest+"/usr/bin/") {
			t.Errorf("%s: ExecStart %s is not the staged /usr/bin binary", u, argv[0])
		}
		if res := runIn(t, "", argv...); res.code != 0 {
			t.Errorf("%s: %s:\n%s", filepath.Base(u), strings.Join(argv, " "), res)
		} else {
			t.Logf("packager's tree: %s", strings.TrimSpace(res.stdout))
		}
	}
}

// scrapeUnits points a real Prometheus (Debian's 2.42) at the running units with
// deploy/prometheus/prometheus.example.yml, its jobs and its rules: every role is up with
// no scrape error, and every rule is evaluated with none in error.
func scrapeUnits(t *testing.T, port map[string]string) {
	t.Helper()
	addrs := map[string]string{}
	var want []string
	for _, r := range roles {
		addrs[r] = "127.0.0.1:" + port[r]
		want = append(want, "http://"+addrs[r]+"/metrics")
	}
	config, files := testenv.ExamplePrometheus(t, "prometheus", addrs)
	prom := testenv.StartPrometheus(t, config, files)
	prom.WaitTargetsUp(t, want, 30*time.Second)
	got := prom.WaitRulesEvaluated(t, 30*time.Second)
	if n := len(alertNames(t, "prometheus/rules.yml")); len(got) <= n {
		t.Fatalf("Prometheus loaded %d rules, want the %d alerts and the recording rules", len(got), n)
	}
	t.Logf("Prometheus scrapes %d roles with no error and evaluates %d rules with none in error", len(want), len(got))
}
