//go:build !agentonly

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

const readmePolicies = "### Trying a policy: `binlake alarm test`"

// walkPolicySection walks README.md's "Trying a policy" section, after the One machine
// walk, while its last up still runs (the replay reads the store beside it):
//   - ./bin/binlake alarm test ARGS: run in the walk's checkout (deploy/ is the real
//     one's) on the store the ups filled: exit 0, and the summary (or with --json the
//     report) names this host's batches in sqlite data/judge.db.
//   - The output block (FIRED …): exactly what alarm test prints for TestAlarmTestOnAStore's
//     history and policies in a data folder of its own.
//   - The warning block: exactly the first line alarm --check writes to stderr for a policy
//     file policies.yaml whose line 3 is `metric: cpu.utl`.
func walkPolicySection(t *testing.T, w *readmeWalk, root, readme string) {
	t.Helper()
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(w.dir, "deploy")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	ran := 0
	for _, line := range testenv.ShellCommands(t, readme, readmePolicies) {
		t.Logf("$ %s", line)
		words, err := shellWords(line)
		if err != nil {
			t.Fatalf("README.md: %q: %v", line, err)
		}
		if len(words) < 3 || words[0] != "./bin/binlake" || words[1] != "alarm" || words[2] != "test" {
			t.Fatalf("README.md, %s: TestReadmeWalk has no rule for %q: add one", readmePolicies, line)
		}
		stdout, stderr := runIn(t, w.bin, w.dir, words[1:]...)
		if strings.Contains(line, "--json") {
			var rep struct {
				Source  string
				Batches int
				Nodes   int
				Alerts  []json.RawMessage
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Source != "sqlite data/judge.db" || rep.Batches == 0 || rep.Nodes != 1 || rep.Alerts == nil {
				t.Fatalf("%q: want a report of this host's batches in data/judge.db (%v):\n%s%s", line, err, stdout, stderr)
			}
		} else {
			lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
			last := lines[len(lines)-1]
			if !regexp.MustCompile(`^replayed [0-9]+ batch(es)? of 1 node from sqlite data/judge\.db \(.+\) through [0-9]+ policies: `).MatchString(last) {
				t.Fatalf("%q: the summary %q names no batch of this host in data/judge.db:\n%s%s", line, last, stdout, stderr)
			}
		}
		t.Logf("ran; stderr:\n%s", stderr)
		ran++
	}
	if ran == 0 {
		t.Fatalf("README.md, %s: no binlake alarm test line", readmePolicies)
	}

	var table, warning string
	for _, b := range testenv.FencedBlocks(t, readme, readmePolicies, "") {
		switch {
		case strings.HasPrefix(b, "FIRED "):
			table = b
		case strings.HasPrefix(b, "warning: "):
			warning = b
		}
	}
	dir := t.TempDir()
	for _, f := range [][2]string{{"policies.yaml", testPolicies}, {"typo.yaml", typoPolicies}} {
		writeFile(t, filepath.Join(dir, f[0]), f[1])
	}
	data := fillStore(t, testHistory())
	if err := os.Rename(data, filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	out, _ := runIn(t, w.bin, dir, "alarm", "test", "--policies", "policies.yaml", "--data", "data",
		"--from", "2026-11-29T14:00:00Z", "--to", "2026-11-29T14:05:00Z")
	if table != out {
		t.Fatalf("README.md, %s: the example output is not what alarm test prints:\n%s\nwant:\n%s", readmePolicies, table, out)
	}
	if err := os.Rename(filepath.Join(dir, "typo.yaml"), filepath.Join(dir, "policies.yaml")); err != nil {
		t.Fatal(err)
	}
	_, errOut := runIn(t, w.bin, dir, "alarm", "--check", "--config", alarmConfig(t, dir), "--policies", "policies.yaml")
	if first, _, _ := strings.Cut(errOut, "\n"); warning != first+"\n" {
		t.Fatalf("README.md, %s: the example warning is not what alarm --check prints:\n%s\nwant:\n%s\n", readmePolicies, warning, first)
	}
	t.Logf("the example output and warning are alarm test's and alarm --check's")
}

// runIn runs the binary in dir, which must exit 0.
func runIn(t *testing.T, bin, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("binlake %s (in %s): %v\n%s%s", strings.Join(args, " "), dir, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

const guidePolicies = "## Alert policies"

// TestDeployGuidePolicies runs the binlake alarm test lines of deploy/README.md's "Alert
// policies" section (sudo -u binlake dropped) on TestAlarmTestOnAStore's history, moved
// to the last hour so that --from 24h covers it, with its policies as policies.new.yaml:
//   - --data /var/lib/binlake/judge/data: an up's data folder holding the history.
//   - --judge-config /etc/binlake/judge.yaml: the installed deploy/judge.example.yaml with
//     the guide's Elasticsearch edits (store.kind, store.elastic.addresses; a prefix of
//     the test's own), the history in the test engine. It needs $BINLAKE_TEST_ES (skipped
//     without it unless CI=true).
//
// Each must replay the history to its three alerts and the two nodes' silence since.
func TestDeployGuidePolicies(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	guide := filepath.Join(root, "deploy", "README.md")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var hist []metric.Batch
	for _, b := range testHistory() {
		b.TS = base.Add(b.TS.Sub(histBase))
		hist = append(hist, b)
	}
	// The history's three alerts, and as the replay runs on to now, both nodes dead by
	// nodata since (still firing) and the lag's alert ended with its series' staleness.
	const want = "through 3 policies: 5 alerts fired, 3 resolved, 2 still firing at the end; 7 notifications would have been sent"
	pol := tempFile(t, "policies.new.yaml", testPolicies)
	sudo := regexp.MustCompile(`^sudo -u binlake `)
	lines := testenv.ShellCommands(t, guide, guidePolicies)
	if len(lines) == 0 {
		t.Fatalf("deploy/README.md, %s: no binlake alarm test line", guidePolicies)
	}
	for _, line := range lines {
		words := strings.Fields(sudo.ReplaceAllString(line, ""))
		if len(words) < 3 || words[0] != "binlake" || words[1] != "alarm" || words[2] != "test" {
			t.Fatalf("deploy/README.md, %s: no rule for %q: add one", guidePolicies, line)
		}
		args := words[1:]
		for i := range args {
			switch args[i] {
			case "policies.new.yaml":
				args[i] = pol
			case "/var/lib/binlake/judge/data":
				args[i] = fillStore(t, hist)
			case "/etc/binlake/judge.yaml":
				addr, prefix := fillElastic(t, hist)
				b, err := os.ReadFile(filepath.Join(root, "deploy", "judge.example.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				cfg := string(b)
				for _, e := range [][2]string{{"kind: sqlite", "kind: elastic"}, {"addresses: []", "addresses: [" + addr + "]"}, {`prefix: ""`, "prefix: " + prefix}} {
					if strings.Count(cfg, e[0]) != 1 {
						t.Fatalf("deploy/judge.example.yaml: %q is not there once", e[0])
					}
					cfg = strings.Replace(cfg, e[0], e[1], 1)
				}
				args[i] = tempFile(t, "judge.yaml", cfg)
			}
		}
		out, errOut, err := runCmd(t, args...)
		if err != nil || !strings.HasSuffix(strings.TrimRight(out, "\n"), want) {
			t.Fatalf("%q: %v\n%s%s\nwant the summary to end %q", line, err, out, errOut, want)
		}
		t.Logf("%s: %s", line, lastLine(out))
	}
}
