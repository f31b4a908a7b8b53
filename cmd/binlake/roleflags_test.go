//go:build !agentonly

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The four roles run one preamble: each takes -config, -log-level, -check and
// -cpuprofile, a bad -log-level is refused as a flag's value naming log.level (it was
// checked after validation by two roles, before by the others, and the wave and the
// agent had no -cpuprofile), and -check writes no profile.
func TestRolesShareOnePreamble(t *testing.T) {
	for _, role := range []string{"judge", "alarm", "wave", "agent"} {
		t.Run(role, func(t *testing.T) {
			cfg := filepath.Join("..", "..", "deploy", role+".example.yaml")
			_, _, err := runCmd(t, role, "-check", "-config", cfg, "-log-level", "loud")
			if err == nil || !strings.HasPrefix(err.Error(), "flags: ") || !strings.Contains(err.Error(), `"log.level"`) || !strings.Contains(err.Error(), "loud") {
				t.Fatalf("%s -log-level loud: %v, want a flags: error naming log.level and the value", role, err)
			}
			prof := filepath.Join(t.TempDir(), "cpu.prof")
			_, errOut, err := runCmd(t, role, "-check", "-config", filepath.Join(t.TempDir(), "none.yaml"), "-cpuprofile", prof)
			if err == nil || strings.Contains(errOut, "flag provided but not defined") {
				t.Fatalf("%s -cpuprofile: %v %s, want the flag taken and the missing config refused", role, err, errOut)
			}
			if _, err := os.Stat(prof); err == nil {
				t.Errorf("%s -check wrote a CPU profile", role)
			}
		})
	}
}
