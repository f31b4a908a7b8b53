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

// A role, or alarm test, run without its file flag where the default file does not exist
// (a first try) names the flag to give, not only the default's path; a -config given is
// reported as it is.
func TestMissingDefaultFileNamesTheFlag(t *testing.T) {
	alarmCfg := filepath.Join("..", "..", "deploy", "alarm.example.yaml")
	tests := []struct {
		args    []string
		def     string // the default file: the case is skipped where it exists
		want    []string
		without string
	}{
		{[]string{"judge", "-check"}, "/etc/binlake/judge.yaml",
			[]string{"/etc/binlake/judge.yaml", "give the judge's config with -config FILE", "binlake up"}, ""},
		{[]string{"wave", "-check"}, "/etc/binlake/wave.yaml",
			[]string{"give the wave's config with -config FILE", "binlake up"}, ""},
		{[]string{"alarm", "-check", "-config", alarmCfg}, "/etc/binlake/policies.yaml",
			[]string{"alarm: -policies FILE is needed: the default, /etc/binlake/policies.yaml, does not exist"}, ""},
		{[]string{"alarm", "test", "-stream", "-"}, "/etc/binlake/policies.yaml",
			[]string{"alarm test: -policies FILE is needed: the default, /etc/binlake/policies.yaml, does not exist"}, ""},
		{[]string{"judge", "-check", "-config", "/nonexistent/judge.yaml"}, "/nonexistent/judge.yaml",
			[]string{"/nonexistent/judge.yaml"}, "-config FILE"},
	}
	for _, tt := range tests {
		if _, err := os.Stat(tt.def); err == nil {
			t.Logf("%v: skipped, %s exists here", tt.args, tt.def)
			continue
		}
		_, _, err := runCmd(t, tt.args...)
		if err == nil {
			t.Errorf("%v: no error", tt.args)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v\nwant it to say %q", tt.args, err, w)
			}
		}
		if tt.without != "" && strings.Contains(err.Error(), tt.without) {
			t.Errorf("%v: %v\nsays %q, for a file that was given", tt.args, err, tt.without)
		}
	}
}
