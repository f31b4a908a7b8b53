// Package deploy holds no Go code: its tests run install.sh into temporary trees and
// check the systemd units with systemd-analyze where it is installed.
package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

var roles = []string{"wave", "agent", "alarm", "judge"}

// fakeTools puts recording stand-ins for the commands install.sh must not run when
// DESTDIR is set (user creation, ownership, systemd) first on PATH; calls() returns what
// was run.
func fakeTools(t *testing.T) (path string, calls func() string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	for _, name := range []string{"useradd", "groupadd", "getent", "chown", "systemctl", "systemd-sysusers"} {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> %q\n", name, log)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path = dir + string(os.PathListSeparator) + filepath.Join(runtime.GOROOT(), "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	return path, func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}
}

// stubBinary writes an executable stand-in for binlake or binlake-agent; content tells
// versions apart.
func stubBinary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "binlake")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+content+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// slimStub is a binary that, like binlake-agent, knows only the agent role.
func slimStub(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "binlake-agent")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n[ \"$1\" = agent ] || { echo \"unknown command $1\" >&2; exit 2; }\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// install runs install.sh with args and environment env (PATH from fakeTools).
func install(t *testing.T, path string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"install.sh"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PATH="+path, "DESTDIR=", "PREFIX=", "SYSCONFDIR=", "UNITDIR=", "BINARY=", "AGENT_BINARY="), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tree lists the regular files under root, relative, with their modes.
func tree(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out["/"+rel] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func exampleNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.example.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.example.yaml (%v)", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f, ".example.yaml"))
	}
	return names
}

// configNames lists the examples that install.sh installs as /etc/binlake/<name>.yaml:
// all but instance.example.yaml, a definition for binlake instance add that no unit reads
// (installed among the examples only).
func configNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, n := range exampleNames(t) {
		if n != "instance" {
			names = append(names, n)
		}
	}
	return names
}

// installedFrom names the file install.sh installs as <name>.yaml: the starter
// <name>.yaml where there is one (the alarm's), else the example.
func installedFrom(name string) string {
	if _, err := os.Stat(name + ".yaml"); err == nil {
		return name + ".yaml"
	}
	return name + ".example.yaml"
}

// unitKeys parses a unit file into section.key → values.
func unitKeys(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Errorf("%s: line %q is not key=value", file, line)
				continue
			}
			keys[section+"."+k] = append(keys[section+"."+k], v)
		}
	}
	return keys
}

func TestInstallTree(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       []string
		prefix    string
		sysconf   string
		unitdir   string
		wantDocIn string
		noAgent   bool // --binary without --agent-binary: the agent unit runs the full binlake
	}{
		{name: "defaults", prefix: "/usr/local", sysconf: "/etc", unitdir: "/etc/systemd/system"},
		{name: "flags", args: []string{"--prefix", "/usr", "--sysconfdir", "/opt/etc", "--unitdir", "/usr/lib/systemd/system"},
			prefix: "/usr", sysconf: "/opt/etc", unitdir: "/usr/lib/systemd/system"},
		{name: "environment", env: []string{"PREFIX=/opt/binlake", "UNITDIR=/lib/systemd/system"},
			prefix: "/opt/binlake", sysconf: "/etc", unitdir: "/lib/systemd/system"},
		{name: "no agent binary", noAgent: true, prefix: "/usr/local", sysconf: "/etc", unitdir: "/etc/systemd/system"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, calls := fakeTools(t)
			dest := t.TempDir()
			// Paths of the real layout that do not exist yet must not exist afterwards.
			var absent []string
			for _, p := range []string{tc.prefix + "/share/binlake", tc.prefix + "/bin/binlake", tc.sysconf + "/binlake", tc.unitdir + "/binlake-judge.service"} {
				if _, err := os.Lstat(p); os.IsNotExist(err) {
					absent = append(absent, p)
				}
			}
			args := []string{"--binary", stubBinary(t, "v1")}
			if !tc.noAgent {
				args = append(args, "--agent-binary", stubBinary(t, "agent v1"))
			}
			args = append(args, tc.args...)
			out, err := install(t, path, append([]string{"DESTDIR=" + dest}, tc.env...), args...)
			if err != nil {
				t.Fatalf("install.sh: %v\n%s", err, out)
			}
			// Each path it reports is the one it wrote, under DESTDIR: the operator can open it.
			reported := regexp.MustCompile(`(?m)^install\.sh: installed (\S+)$`).FindAllStringSubmatch(out, -1)
			if len(reported) < 10 {
				t.Errorf("install.sh reported %d installed files:\n%s", len(reported), out)
			}
			for _, m := range reported {
				if _, err := os.Stat(m[1]); err != nil || !strings.HasPrefix(m[1], dest+"/") {
					t.Errorf("install.sh says it installed %s, which is not the file under DESTDIR %s it wrote (%v)", m[1], dest, err)
				}
			}
			if said := strings.Contains(out, "binlake-agent.service runs the full binlake"); said != tc.noAgent {
				t.Errorf("output says the agent unit falls back to binlake: %v, want %v\n%s", said, tc.noAgent, out)
			}
			if c := calls(); c != "" {
				t.Errorf("with DESTDIR set install.sh ran:\n%s", c)
			}
			for _, p := range absent {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("%s was created outside DESTDIR", p)
				}
			}

			got := tree(t, dest)
			want := map[string]fs.FileMode{
				tc.prefix + "/bin/binlake":                                                            0o755,
				tc.prefix + "/share/doc/binlake/deploy.md":                                            0o644,
				tc.prefix + "/share/binlake/dashboards/grafana/binlake-overview.json":                 0o644,
				tc.prefix + "/share/binlake/dashboards/grafana/binlake-node.json":                     0o644,
				tc.prefix + "/share/binlake/dashboards/grafana/provisioning/datasources/binlake.yaml": 0o644,
				tc.prefix + "/share/binlake/dashboards/grafana/provisioning/dashboards/binlake.yaml":  0o644,
				tc.prefix + "/share/binlake/dashboards/kibana/binlake.ndjson":                         0o644,
				tc.prefix + "/share/binlake/prometheus/rules.yml":                                     0o644,
				tc.prefix + "/share/binlake/prometheus/rules_test.yml":                                0o644,
				tc.prefix + "/share/binlake/prometheus/prometheus.example.yml":                        0o644,
				tc.prefix + "/share/binlake/prometheus/alertmanager.example.yml":                      0o644,
			}
			if !tc.noAgent {
				want[tc.prefix+"/bin/binlake-agent"] = 0o755
			}
			for _, r := range roles {
				want[tc.unitdir+"/binlake-"+r+".service"] = 0o644
			}
			for _, n := range configNames(t) {
				want[tc.sysconf+"/binlake/"+n+".yaml"] = 0o640
				want[tc.prefix+"/share/binlake/shipped/"+n+".yaml"] = 0o644 // what this release shipped, for the next
			}
			for _, n := range exampleNames(t) {
				want[tc.prefix+"/share/binlake/examples/"+n+".example.yaml"] = 0o644
			}
			for f, mode := range want {
				if m, ok := got[f]; !ok {
					t.Errorf("missing %s", f)
				} else if m != mode {
					t.Errorf("%s: mode %v, want %v", f, m, mode)
				}
			}
			for f := range got {
				if _, ok := want[f]; !ok {
					t.Errorf("unexpected file %s", f)
				}
			}
			if info, err := os.Stat(dest + tc.sysconf + "/binlake"); err != nil || info.Mode().Perm() != 0o750 {
				t.Errorf("config folder: %v, mode %v; want 0750", err, info.Mode().Perm())
			}
			for _, n := range configNames(t) {
				inLayout(t, installedFrom(n), dest+tc.sysconf+"/binlake/"+n+".yaml", tc.sysconf)
			}
			for _, n := range exampleNames(t) {
				inLayout(t, n+".example.yaml", dest+tc.prefix+"/share/binlake/examples/"+n+".example.yaml", tc.sysconf)
			}

			for _, r := range roles {
				unit := dest + tc.unitdir + "/binlake-" + r + ".service"
				k := unitKeys(t, unit)
				bin := "binlake"
				if r == "agent" && !tc.noAgent {
					bin = "binlake-agent"
				}
				exec := fmt.Sprintf("%s/bin/%s %s --config %s/binlake/%s.yaml", tc.prefix, bin, r, tc.sysconf, r)
				if r == "alarm" {
					exec += fmt.Sprintf(" --policies %s/binlake/policies.yaml", tc.sysconf)
				}
				for key, v := range map[string]string{
					"Service.ExecStart":        exec,
					"Service.User":             "binlake",
					"Service.Group":            "binlake",
					"Service.NoNewPrivileges":  "yes",
					"Service.ProtectSystem":    "strict",
					"Service.PrivateTmp":       "yes",
					"Service.StateDirectory":   "binlake/" + r,
					"Service.WorkingDirectory": "/var/lib/binlake/" + r,
					"Service.Restart":          "on-failure",
					"Service.EnvironmentFile":  "-" + tc.sysconf + "/binlake/" + r + ".env",
					"Install.WantedBy":         "multi-user.target",
				} {
					if !slices.Contains(k[key], v) {
						t.Errorf("%s: %s = %q, want %q", filepath.Base(unit), key, k[key], v)
					}
				}
				if ph := k["Service.ProtectHome"]; len(ph) != 1 || (ph[0] != "yes" && ph[0] != "read-only") {
					t.Errorf("%s: ProtectHome = %q", filepath.Base(unit), ph)
				}
			}
		})
	}
}

// inLayout checks that installed is shipped as install.sh puts it in a layout whose
// configs are under sysconf: the folder it names (secret files, commands) that one.
func inLayout(t *testing.T, shipped, installed, sysconf string) {
	t.Helper()
	src, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(string(src), "/etc/binlake", sysconf+"/binlake")
	if got, err := os.ReadFile(installed); err != nil || string(got) != want {
		t.Errorf("%s is not the shipped %s with %s/binlake for /etc/binlake (%v)", installed, shipped, sysconf, err)
	}
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
		t.Errorf("%s and %s differ (%v, %v)", a, b, err1, err2)
	}
}

func TestInstallIdempotent(t *testing.T) {
	path, calls := fakeTools(t)
	dest := t.TempDir()
	env := []string{"DESTDIR=" + dest}
	v1, v2 := stubBinary(t, "v1"), stubBinary(t, "v2")
	a1, a2 := stubBinary(t, "agent v1"), stubBinary(t, "agent v2")
	runAgent := func(bin, agent string) string {
		t.Helper()
		args := []string{"--binary", bin}
		if agent != "" {
			args = append(args, "--agent-binary", agent)
		}
		out, err := install(t, path, env, args...)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		return out
	}
	run := func(bin string) string {
		t.Helper()
		return runAgent(bin, a1)
	}
	run(v1)
	before := tree(t, dest)

	// A second run with the same inputs changes nothing and says so by saying nothing.
	if out := run(v1); strings.Contains(out, "installed") {
		t.Errorf("second run installed again:\n%s", out)
	}
	if after := tree(t, dest); !maps(before, after) {
		t.Errorf("second run changed the tree:\n%v\n%v", before, after)
	}

	// An edited config is kept; the shipped example goes beside it as .new.
	cfg := dest + "/etc/binlake/judge.yaml"
	mine := []byte("# the operator's own\n")
	if err := os.WriteFile(cfg, mine, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	out := run(v1)
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, mine) {
		t.Errorf("edited config overwritten: %q", b)
	}
	sameFile(t, "judge.example.yaml", cfg+".new")
	if !strings.Contains(out, "judge.yaml.new") {
		t.Errorf("output does not point at judge.yaml.new:\n%s", out)
	}
	if info, _ := os.Stat(cfg); info.Mode().Perm() != 0o600 {
		t.Errorf("kept config's mode changed to %v", info.Mode().Perm())
	}
	// Again: nothing new to write, the .new stays.
	if out := run(v1); strings.Contains(out, "installed") {
		t.Errorf("third run installed again:\n%s", out)
	}
	sameFile(t, "judge.example.yaml", cfg+".new")

	// A config equal to the example again: the stale .new goes.
	ex, _ := os.ReadFile("judge.example.yaml")
	if err := os.WriteFile(cfg, ex, 0o640); err != nil {
		t.Fatal(err)
	}
	run(v1)
	if _, err := os.Stat(cfg + ".new"); !os.IsNotExist(err) {
		t.Errorf("judge.yaml.new left behind: %v", err)
	}

	// A config kept when this release changed the shipped one: the last release's goes
	// under share/binlake/shipped as .prev, so that its diff with the .new is the
	// release's changes alone, apart from the operator's edits; the output says so.
	shipped := dest + "/usr/local/share/binlake/shipped/judge.yaml"
	sameFile(t, "judge.example.yaml", shipped)
	older := bytes.Replace(ex, []byte("\n"), []byte("\n# a line an older release shipped\n"), 1)
	for _, f := range []string{shipped, cfg} {
		if err := os.WriteFile(f, older, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	out = run(v1)
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, older) {
		t.Errorf("a config as the last release shipped it was replaced: %q", b)
	}
	sameFile(t, "judge.example.yaml", cfg+".new")
	if want := "diff -u " + cfg + " " + cfg + ".new"; !strings.Contains(out, want) {
		t.Errorf("output does not give %q for a config as the last release shipped it:\n%s", want, out)
	}
	os.Remove(cfg + ".new")
	if err := os.WriteFile(shipped, older, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(older, "# the operator's line\n"...), 0o640); err != nil {
		t.Fatal(err)
	}
	out = run(v1)
	sameFile(t, "judge.example.yaml", cfg+".new")
	sameFile(t, "judge.example.yaml", shipped)
	if b, _ := os.ReadFile(shipped + ".prev"); !bytes.Equal(b, older) {
		t.Errorf("%s.prev is not what the last release shipped:\n%s", shipped, b)
	}
	if want := "diff -u " + shipped + ".prev " + cfg + ".new"; !strings.Contains(out, want) {
		t.Errorf("output does not give %q:\n%s", want, out)
	}
	// Another release before the .new was merged: .prev stays the one the config was
	// last merged against, so that the diff holds both releases' changes.
	// (This run's is the example; the one before shipped newer, left unmerged as .new.)
	newer := append([]byte("# a line a newer release shipped\n"), ex...)
	for _, f := range []string{shipped, cfg + ".new"} {
		if err := os.WriteFile(f, newer, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(v1)
	sameFile(t, "judge.example.yaml", cfg+".new")
	if b, _ := os.ReadFile(shipped + ".prev"); !bytes.Equal(b, older) {
		t.Errorf("%s.prev after a second release with the .new unmerged is not the first one's:\n%s", shipped, b)
	}

	// A new binary replaces the old, which stays as binlake.prev.
	out = run(v2)
	sameFile(t, v2, dest+"/usr/local/bin/binlake")
	sameFile(t, v1, dest+"/usr/local/bin/binlake.prev")
	if !strings.Contains(out, "binlake.prev") {
		t.Errorf("output does not mention binlake.prev:\n%s", out)
	}
	if _, err := os.Stat(dest + "/usr/local/bin/binlake-agent.prev"); !os.IsNotExist(err) {
		t.Errorf("binlake-agent.prev written though binlake-agent did not change: %v", err)
	}

	// A new agent binary: the same, as binlake-agent.prev.
	out = runAgent(v2, a2)
	sameFile(t, a2, dest+"/usr/local/bin/binlake-agent")
	sameFile(t, a1, dest+"/usr/local/bin/binlake-agent.prev")
	sameFile(t, v1, dest+"/usr/local/bin/binlake.prev")
	if !strings.Contains(out, "binlake-agent.prev") || strings.Contains(out, "bin/binlake.prev") {
		t.Errorf("output should mention binlake-agent.prev only:\n%s", out)
	}
	unit := dest + "/etc/systemd/system/binlake-agent.service"
	agentExec := "/usr/local/bin/binlake-agent agent --config /etc/binlake/agent.yaml"
	if k := unitKeys(t, unit); !slices.Equal(k["Service.ExecStart"], []string{agentExec}) {
		t.Errorf("agent unit ExecStart = %q, want %q", k["Service.ExecStart"], agentExec)
	}

	// --binary alone: the agent unit keeps running the installed binlake-agent, left as it was.
	out = runAgent(v2, "")
	if k := unitKeys(t, unit); !slices.Equal(k["Service.ExecStart"], []string{agentExec}) {
		t.Errorf("--binary alone: agent unit ExecStart = %q, want %q", k["Service.ExecStart"], agentExec)
	}
	if strings.Contains(out, "installed "+dest+"/etc/systemd/system/binlake-agent.service") || !strings.Contains(out, "keeps running") {
		t.Errorf("--binary alone: the agent unit was rewritten, or not said:\n%s", out)
	}
	sameFile(t, a2, dest+"/usr/local/bin/binlake-agent")
	sameFile(t, a1, dest+"/usr/local/bin/binlake-agent.prev")
	// Without a binlake-agent installed, --binary alone points the unit at the full binary.
	if err := os.Remove(dest + "/usr/local/bin/binlake-agent"); err != nil {
		t.Fatal(err)
	}
	out = runAgent(v2, "")
	fullExec := "/usr/local/bin/binlake agent --config /etc/binlake/agent.yaml"
	if k := unitKeys(t, unit); !slices.Equal(k["Service.ExecStart"], []string{fullExec}) {
		t.Errorf("fallback: agent unit ExecStart = %q, want %q", k["Service.ExecStart"], fullExec)
	}
	if !strings.Contains(out, "installed "+dest+"/etc/systemd/system/binlake-agent.service") || !strings.Contains(out, "runs the full binlake") {
		t.Errorf("fallback output does not report the rewritten agent unit:\n%s", out)
	}
	// And back: --agent-binary points the unit at binlake-agent again.
	runAgent(v2, a2)
	if k := unitKeys(t, unit); !slices.Equal(k["Service.ExecStart"], []string{agentExec}) {
		t.Errorf("agent unit ExecStart = %q after --agent-binary again, want %q", k["Service.ExecStart"], agentExec)
	}
	if c := calls(); c != "" {
		t.Errorf("with DESTDIR set install.sh ran:\n%s", c)
	}
}

func maps(a, b map[string]fs.FileMode) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestInstallArguments(t *testing.T) {
	path, calls := fakeTools(t)
	tests := []struct {
		name     string
		args     []string
		env      []string
		wantErr  bool
		wantText string
	}{
		{"help", []string{"--help"}, nil, false, "DESTDIR"},
		{"short help", []string{"-h"}, nil, false, "--prefix DIR"},
		{"unknown option", []string{"--frobnicate"}, nil, true, "unknown option '--frobnicate'"},
		{"relative prefix", []string{"--prefix", "usr"}, []string{"DESTDIR=" + t.TempDir()}, true, "PREFIX must be an absolute path"},
		{"missing value", []string{"--binary"}, nil, true, "--binary needs a value"},
		{"binary not there", []string{"--binary", "/nonexistent/binlake"}, []string{"DESTDIR=" + t.TempDir()}, true, "not an executable file"},
		{"missing agent value", []string{"--agent-binary"}, nil, true, "--agent-binary needs a value"},
		// An unset variable in --destdir="$pkgdir" must not mean a live install into /.
		{"empty destdir", []string{"--binary", stubBinary(t, "v1"), "--destdir="}, nil, true, "--destdir needs a value"},
		{"empty binary", []string{"--binary=", "--destdir=" + t.TempDir()}, nil, true, "--binary needs a value"},
		{"the slim agent as the binary", []string{"--binary", slimStub(t), "--destdir", t.TempDir()}, nil, true, "not the full binlake"},
		{"agent binary not there", []string{"--binary", stubBinary(t, "v1"), "--agent-binary", "/nonexistent/binlake-agent"},
			[]string{"DESTDIR=" + t.TempDir()}, true, "--agent-binary /nonexistent/binlake-agent: not an executable file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := install(t, path, tc.env, tc.args...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v\n%s", err, tc.wantErr, out)
			}
			if !strings.Contains(out, tc.wantText) {
				t.Errorf("output does not contain %q:\n%s", tc.wantText, out)
			}
		})
	}
	if os.Getuid() != 0 {
		out, err := install(t, path, nil, "--binary", stubBinary(t, "v1"))
		if err == nil || !strings.Contains(out, "needs root") {
			t.Errorf("non-root install into /: err %v\n%s", err, out)
		}
	}
	if c := calls(); c != "" {
		t.Errorf("argument errors ran:\n%s", c)
	}
}

// TestInstallBuilds runs install.sh the way an operator does from a checkout: it builds
// the binary with go.
func TestInstallBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	path, _ := fakeTools(t)
	dest := t.TempDir()
	out, err := install(t, path, []string{"DESTDIR=" + dest})
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	v, err := exec.Command(dest+"/usr/local/bin/binlake", "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "binlake ") {
		t.Fatalf("installed binary: %v: %s", err, v)
	}
	// binlake-agent is the agentonly build: version works, the other roles are not linked.
	agent := dest + "/usr/local/bin/binlake-agent"
	if v, err := exec.Command(agent, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(v), "binlake ") {
		t.Fatalf("installed binlake-agent: %v: %s", err, v)
	}
	// -h exits 2 in both builds; the text tells them apart.
	if out, _ := exec.Command(agent, "wave", "-h").CombinedOutput(); !strings.Contains(string(out), `unknown command "wave"`) {
		t.Errorf("binlake-agent knows the wave subcommand; want the agentonly build:\n%s", out)
	}
	if out, _ := exec.Command(dest+"/usr/local/bin/binlake", "wave", "-h").CombinedOutput(); !strings.Contains(string(out), "Usage: binlake wave") {
		t.Errorf("binlake wave -h:\n%s", out)
	}
}

var exposure = regexp.MustCompile(`Overall exposure level for (\S+): ([0-9.]+)`)

// TestUnitsVerify checks the installed units with systemd-analyze: verify must accept
// them without a warning, and the offline security analysis must rate them below 3
// ("OK"; an unhardened service scores 9.6).
func TestUnitsVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here (Debian: apt-get install systemd); the units are not verified")
	}
	path, _ := fakeTools(t)
	dest := t.TempDir()
	if out, err := install(t, path, []string{"DESTDIR=" + dest}, "--binary", stubBinary(t, "v1"), "--agent-binary", stubBinary(t, "agent v1")); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	// verify checks that ExecStart exists: point it at the staged binary.
	dir := t.TempDir()
	var units []string
	for _, r := range roles {
		b, err := os.ReadFile(dest + "/etc/systemd/system/binlake-" + r + ".service")
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/binlake"), []byte(dest+"/usr/local/bin/binlake"))
		u := filepath.Join(dir, "binlake-"+r+".service")
		if err := os.WriteFile(u, b, 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, u)
	}
	verify := func(files ...string) string {
		out, err := exec.Command(sa, append([]string{"verify"}, files...)...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("exit %v: %s", err, out)
		}
		// verify exits 0 on unknown keys and bad values, only printing them.
		var ours []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "binlake-") {
				ours = append(ours, line)
			}
		}
		return strings.Join(ours, "\n")
	}
	if msg := verify(units...); msg != "" {
		t.Errorf("systemd-analyze verify:\n%s", msg)
	}
	// The check above can fail: a broken copy is reported.
	broken := filepath.Join(dir, "binlake-broken.service")
	b, _ := os.ReadFile(units[0])
	os.WriteFile(broken, bytes.Replace(b, []byte("ProtectSystem=strict"), []byte("ProtectSystem=stricter"), 1), 0o644)
	if msg := verify(broken); !strings.Contains(msg, "protect system") && !strings.Contains(msg, "ProtectSystem") {
		t.Errorf("verify did not report a bad ProtectSystem value: %q", msg)
	}

	out, err := exec.Command(sa, append([]string{"security", "--offline=yes", "--no-pager"}, units...)...).CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte("Overall exposure")) {
		t.Skipf("systemd-analyze security --offline is not supported here: %v", err)
	}
	found := exposure.FindAllStringSubmatch(string(out), -1)
	if len(found) != len(units) {
		t.Fatalf("security: %d ratings for %d units:\n%s", len(found), len(units), out)
	}
	for _, f := range found {
		if v, _ := strconv.ParseFloat(f[2], 64); v >= 3 {
			t.Errorf("%s: exposure %s, want below 3", f[1], f[2])
		} else {
			t.Logf("%s: exposure %s", f[1], f[2])
		}
	}
}

// TestShellcheck lints the project's shell scripts with shellcheck, which
// deploy/testenv/tools.sh installs: install.sh, which operators run, at every severity;
// the test services' and benches' scripts, proto/gen.sh and .ci/run at warnings (their
// sourced lib.sh is not followed). Required under CI=true, skipped elsewhere when missing.
func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("shellcheck is required under CI=true and is not on the PATH (run `make services-up`)")
		}
		t.Skip("shellcheck is not installed here (`make services-up`, or Debian: apt-get install shellcheck)")
	}
	if out, err := exec.Command(sc, "install.sh").CombinedOutput(); err != nil {
		t.Errorf("shellcheck install.sh: %v\n%s", err, out)
	}
	var scripts []string
	for _, pattern := range []string{"testenv/*.sh", "bench/*.sh", "../proto/*.sh", "../.ci/run"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	if len(scripts) < 10 {
		t.Fatalf("found %d scripts to lint (%v), want the test services' and the rest", len(scripts), scripts)
	}
	if out, err := exec.Command(sc, append([]string{"-S", "warning"}, scripts...)...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck -S warning %v: %v\n%s", scripts, err, out)
	}
}

// TestInstallSystem runs the live-install path (no DESTDIR) with every path in a temporary
// folder and stand-ins for id (reporting root), getent, groupadd, useradd, chown and
// systemctl: the user is created once, only what was written is chowned, and
// daemon-reload runs exactly when systemd is running.
func TestInstallSystem(t *testing.T) {
	path, calls := fakeTools(t)
	fakes := strings.SplitN(path, string(os.PathListSeparator), 2)[0]
	state := filepath.Join(fakes, "user-exists")
	scripts := map[string]string{
		"id":       "#!/bin/sh\necho 0\n",
		"getent":   fmt.Sprintf("#!/bin/sh\necho \"getent $*\" >> %q\n[ -e %q ] || exit 2\necho \"$2:x:999:999::/var/lib/binlake:/usr/sbin/nologin\"\n", filepath.Join(fakes, "calls.log"), state),
		"useradd":  fmt.Sprintf("#!/bin/sh\necho \"useradd $*\" >> %q\ntouch %q\n", filepath.Join(fakes, "calls.log"), state),
		"groupadd": fmt.Sprintf("#!/bin/sh\necho \"groupadd $*\" >> %q\ntouch %q\n", filepath.Join(fakes, "calls.log"), state),
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(fakes, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	env := []string{"PREFIX=" + root + "/usr", "SYSCONFDIR=" + root + "/etc", "UNITDIR=" + root + "/units", "STATEDIR=" + root + "/var/lib/binlake"}
	_, systemd := os.Stat("/run/systemd/system")
	reload := "systemctl daemon-reload\n"
	if systemd != nil {
		reload = ""
	}

	out, err := install(t, path, env, "--binary", stubBinary(t, "v1"))
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	var want strings.Builder
	want.WriteString("getent passwd binlake\ngetent group binlake\ngroupadd --system binlake\n")
	want.WriteString("useradd --system --gid binlake --home-dir /var/lib/binlake --no-create-home --shell /usr/sbin/nologin --comment BinLake services binlake\n")
	want.WriteString("getent group binlake\ngetent passwd binlake\n")
	// The units' working folders, the binlake user's, for the guide's --check before the
	// first start (systemd makes them at the first start). The stand-in chown changes
	// nothing: a folder not binlake's is given to it at every run.
	stateDirs := func() {
		for _, role := range []string{"wave", "agent", "alarm", "judge"} {
			fmt.Fprintf(&want, "chown binlake:binlake %s/var/lib/binlake/%s\n", root, role)
		}
	}
	stateDirs()
	fmt.Fprintf(&want, "chown root:binlake %s/etc/binlake\n", root)
	for _, n := range configNames(t) {
		fmt.Fprintf(&want, "chown root:binlake %s/etc/binlake/%s.yaml\n", root, n)
	}
	want.WriteString(reload)
	if got := calls(); got != want.String() {
		t.Errorf("first run ran:\n%s\nwant:\n%s", got, want.String())
	}
	if _, err := os.Stat(root + "/usr/bin/binlake"); err != nil {
		t.Errorf("binary: %v", err)
	}

	// Second run: the user exists, every config is kept and unchanged: nothing to chown.
	os.Truncate(filepath.Join(fakes, "calls.log"), 0)
	if out, err := install(t, path, env, "--binary", stubBinary(t, "v1")); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	want.Reset()
	want.WriteString("getent passwd binlake\ngetent group binlake\ngetent passwd binlake\n")
	stateDirs()
	fmt.Fprintf(&want, "chown root:binlake %s/etc/binlake\n%s", root, reload)
	if got := calls(); got != want.String() {
		t.Errorf("second run ran:\n%s\nwant:\n%s", got, want.String())
	}
}

// An upgrade with --binary alone over an install with the slim agent (the guide's
// judge-machine step on a host that also runs an agent) keeps the agent unit on
// binlake-agent and says it was not upgraded: it used to switch the unit to the full
// binary, leaving no binlake-agent.prev for the guide's rollback.
func TestInstallKeepsAnInstalledAgent(t *testing.T) {
	path, _ := fakeTools(t)
	dest := t.TempDir()
	env := []string{"DESTDIR=" + dest}
	if out, err := install(t, path, env, "--binary", stubBinary(t, "v1"), "--agent-binary", stubBinary(t, "agent v1")); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	out, err := install(t, path, env, "--binary", stubBinary(t, "v2"))
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if !strings.Contains(out, "binlake-agent.service keeps running "+dest+"/usr/local/bin/binlake-agent, which this run leaves as it was") {
		t.Errorf("no warning of the slim agent kept:\n%s", out)
	}
	unit, _ := os.ReadFile(dest + "/etc/systemd/system/binlake-agent.service")
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/binlake-agent agent") {
		t.Errorf("the agent unit does not run binlake-agent:\n%s", unit)
	}
}

// A rollback by install.sh from the kept .prev files (deploy/README.md, Rollback) swaps
// them: the old binaries are installed and the new ones kept as .prev. Copying the
// installed binary over .prev first made both files the new version.
func TestInstallFromPrevSwaps(t *testing.T) {
	path, _ := fakeTools(t)
	dest := t.TempDir()
	env := []string{"DESTDIR=" + dest}
	for _, v := range []string{"v1", "v2"} {
		if out, err := install(t, path, env, "--binary", stubBinary(t, v), "--agent-binary", stubBinary(t, "agent "+v)); err != nil {
			t.Fatalf("install.sh %s: %v\n%s", v, err, out)
		}
	}
	bin := dest + "/usr/local/bin/"
	want := map[string]string{"binlake": "v1", "binlake.prev": "v2", "binlake-agent": "agent v1", "binlake-agent.prev": "agent v2"}
	out, err := install(t, path, env, "--binary", bin+"binlake.prev", "--agent-binary", bin+"binlake-agent.prev")
	if err != nil {
		t.Fatalf("install.sh from .prev: %v\n%s", err, out)
	}
	check := func() {
		t.Helper()
		for name, v := range want {
			b, err := os.ReadFile(bin + name)
			if got := strings.TrimPrefix(strings.TrimSpace(string(b)), "#!/bin/sh\necho "); err != nil || got != v {
				t.Errorf("%s holds %q (%v), want %q", name, got, err, v)
			}
			if info, err := os.Stat(bin + name); err != nil || info.Mode().Perm() != 0o755 {
				t.Errorf("%s: mode %v (%v), want 0755", name, info.Mode().Perm(), err)
			}
		}
		leftovers, _ := filepath.Glob(bin + "*.tmp.*")
		if len(leftovers) > 0 {
			t.Errorf("temporary files left: %v", leftovers)
		}
	}
	check()
	// And back again: the swap is its own inverse.
	if out, err := install(t, path, env, "--binary", bin+"binlake.prev", "--agent-binary", bin+"binlake-agent.prev"); err != nil {
		t.Fatalf("install.sh from .prev again: %v\n%s", err, out)
	}
	want = map[string]string{"binlake": "v2", "binlake.prev": "v1", "binlake-agent": "agent v2", "binlake-agent.prev": "agent v1"}
	check()
}

// A staged install changes no ownership, so install.sh prints the chown a package's
// post-install must run for the units (user binlake) to read their configs, and the
// guide's packager paragraph shows that line as printed for the default layout.
func TestInstallStagePrintsPostInstall(t *testing.T) {
	path, _ := fakeTools(t)
	dest := t.TempDir()
	out, err := install(t, path, []string{"DESTDIR=" + dest}, "--binary", stubBinary(t, "v1"), "--agent-binary", stubBinary(t, "agent v1"), "--prefix", "/usr")
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	want := "chown root:binlake /etc/binlake"
	for _, n := range configNames(t) {
		want += " /etc/binlake/" + n + ".yaml"
	}
	line := "install.sh:   " + want
	if !strings.Contains(out, line+"\n") {
		t.Errorf("a staged install does not print %q:\n%s", line, out)
	}
	guide, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), "\n"+line+"\n") {
		t.Errorf("README.md's packager paragraph does not show %q", line)
	}
	if info, err := os.Stat(dest + "/etc/binlake"); err != nil || info.Mode().Perm() != 0o750 {
		t.Errorf("staged /etc/binlake: %v %v, want 0750", info.Mode().Perm(), err)
	}
	// Under --prefix /usr no config or example points at /usr/local (wave.yaml named
	// /usr/local/share/binlake/examples/instance.example.yaml).
	for _, dir := range []string{"/etc/binlake", "/usr/share/binlake/examples"} {
		for f := range tree(t, dest+dir) {
			b, _ := os.ReadFile(dest + dir + f)
			if i := strings.Index(string(b), "/usr/local"); i >= 0 {
				t.Errorf("%s%s names /usr/local under --prefix /usr: %q", dir, f, lineOf(string(b), "/usr/local"))
			}
		}
	}
}
