//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/binlake/binlake/judge/fleetsim"
)

// TestBenchFleetJSON runs a tiny fleet through the command: flags given override the
// preset (-waves keeps the mix's proportions), the report is JSON on stdout and the
// progress on stderr.
func TestBenchFleetJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"bench", "fleet", "-preset", "homogeneous", "-waves", "3", "-instances", "12",
		"-history", "1h", "-history-step", "10m", "-warmup", "5m", "-rounds", "2", "-historical-every", "1s", "-seed", "3", "-json"},
		&out, &errOut)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	var rep fleetsim.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out.String())
	}
	if rep.Seed != 3 || rep.Waves != 3 || rep.Instances != 12 || len(rep.Cores) != 1 || rep.Cores[0] != (fleetsim.CoreClass{Cores: 4, Waves: 3}) ||
		len(rep.Assignment) != 12 || len(rep.Rounds) < 1 || rep.Batches == 0 || rep.Now.Greedy.Peak <= 0 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(errOut.String(), "history:") || !strings.Contains(errOut.String(), "round 1") {
		t.Fatalf("no progress on stderr:\n%s", errOut.String())
	}
}

// TestBenchFleetBadFlags: a bad mix or preset is refused naming it, before anything runs.
func TestBenchFleetBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cores", "2:x"}, "cores:waves"},
		{[]string{"-preset", "tiny"}, `preset "tiny"`},
		{[]string{"-waves", "2"}, "waves 2: want at least one per capacity class"},
		{[]string{"-rounds", "0"}, "rounds 0"},
		{[]string{"-judge", "http://127.0.0.1:1", "-judge-config", "judge.yaml"}, "-judge-config configures the in-process judge"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"bench", "fleet"}, tc.args...), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
