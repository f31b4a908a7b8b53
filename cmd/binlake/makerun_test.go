//go:build !agentonly

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// A cold `make run` showed one "building" line for minutes: with no binary yet it must
// say that the first build takes minutes and show go's progress (-v); with one, it
// announces the build in one line and lists nothing.
func TestMakeRunAnnouncesTheFirstBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	for _, tc := range []struct {
		name, bin string
		announce  string
		verbose   bool
	}{
		{"cold", "bin/does-not-exist", "make run: building bin/does-not-exist for the first time: every dependency is compiled, which takes a few minutes", true},
		{"warm", "go.mod", "make run: building go.mod\n", false}, // any file that exists stands for the binary
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("make", "--no-print-directory", "-n", "run", "BIN="+tc.bin)
			cmd.Dir = "../.."
			cmd.Env = makeEnv()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n run: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			// The announcement is a shell command: run it as make would, in the checkout.
			sh := exec.Command("bash", "-c", lines[0])
			sh.Dir = "../.."
			said, err := sh.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(said), tc.announce) {
				t.Fatalf("make run announces %q (%v), want it to start %q", said, err, tc.announce)
			}
			var build string
			for _, l := range lines {
				if strings.HasPrefix(l, "go build ") {
					build = l
				}
			}
			if got := strings.Contains(build, " -v "); got != tc.verbose {
				t.Fatalf("go build lists the packages: %v, want %v: %q", got, tc.verbose, build)
			}
		})
	}
}
