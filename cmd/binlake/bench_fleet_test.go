//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/judge/fleetsim"
)

// TestBenchFleetJSON runs a tiny fleet through the command: flags given override the
// preset (-waves keeps the mix's proportions), the report is JSON on stdout and the
// progress on stderr, and with -truth it holds the true costs its figures come from.
func TestBenchFleetJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"bench", "fleet", "-preset", "homogeneous", "-waves", "3", "-instances", "12",
		"-history", "1h", "-history-step", "10m", "-warmup", "5m", "-rounds", "2", "-seed", "3", "-json", "-truth"},
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
	// The truth gives back the report's own figures: the judge's peak now, from its
	// final assignment.
	tr := rep.Truth
	if tr == nil || len(tr.Waves) != 3 || len(tr.Instances) != 12 || tr.TargetNow != fleetsim.TargetFactor*rep.Now.Greedy.Peak {
		t.Fatalf("truth %+v", tr)
	}
	node := map[string]int{}
	load := make([]float64, len(tr.Waves))
	for w, wv := range tr.Waves {
		node[wv.Node], load[w] = w, wv.IdleCores
	}
	for _, in := range tr.Instances {
		w := node[rep.Assignment[in.ID]]
		c := in.On[w]
		load[w] += c[0] + c[1]*math.Cos(2*math.Pi*tr.Hour/24) + c[2]*math.Sin(2*math.Pi*tr.Hour/24)
	}
	peak := 0.0
	for w, l := range load {
		peak = max(peak, l/float64(tr.Waves[w].Cores))
	}
	if math.Abs(peak-rep.Now.Judge.Peak) > 1e-9 {
		t.Errorf("the judge's peak now from the truth: %v, the report's %v", peak, rep.Now.Judge.Peak)
	}
}

// TestBenchFleetShortHistory: the last 6 hours of the default history come every -step;
// a shorter -history alone comes so throughout (not refused for a warmup longer than
// it), and a -warmup given longer than the -history is refused.
func TestBenchFleetShortHistory(t *testing.T) {
	args := []string{"bench", "fleet", "-preset", "homogeneous", "-waves", "3", "-instances", "6", "-history", "30m",
		"-rounds", "1", "-seed", "3", "-json"}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	var rep fleetsim.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v", err)
	}
	if want := int64(3 * 30); rep.Batches < want {
		t.Errorf("%d batches: want at least %d, each wave's every minute of the 30", rep.Batches, want)
	}
	err := run(context.Background(), append(slices.Clone(args), "-warmup", "1h"), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "want 0 ≤ warmup ≤ history") {
		t.Errorf("-warmup 1h over -history 30m: %v, want it refused", err)
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
		{[]string{"-truth"}, "give -json too"},
		{[]string{"-filtered", "0.5"}, "give a read price too"},
		{[]string{"-read-price", "-1"}, "read price -1"},
		{[]string{"-preset", "filtered", "-read-ratio", "0.5"}, "read ratio median 0.5"},
		{[]string{"-host-other", "0.1"}, "give a host share of 2 or more"},
		{[]string{"-preset", "shared", "-host-share", "0"}, "host share 0"},
		{[]string{"-judge", "http://127.0.0.1:1", "-judge-config", "judge.yaml"}, "-judge-config configures the in-process judge"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"bench", "fleet"}, tc.args...), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchFleetReading: the reading flags reach the fleet. The filtered preset's agents
// report every instance's binlog read beside what it publishes, so the same tiny fleet
// sends more points than with reading off (-read-price 0 -filtered 0), in as many
// batches.
func TestBenchFleetReading(t *testing.T) {
	tiny := []string{"bench", "fleet", "-preset", "filtered", "-waves", "3", "-instances", "12", "-history", "1h",
		"-history-step", "10m", "-warmup", "5m", "-rounds", "1", "-seed", "3", "-json"}
	report := func(extra ...string) fleetsim.Report {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append(slices.Clone(tiny), extra...), &out, &errOut); err != nil {
			t.Fatalf("%v: %v\nstderr:\n%s", extra, err, errOut.String())
		}
		var rep fleetsim.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("stdout is not a JSON report: %v", err)
		}
		return rep
	}
	reading, off := report(), report("-read-price", "0", "-filtered", "0")
	if reading.Batches != off.Batches || reading.Points <= off.Points {
		t.Errorf("with reading %d batches of %d points, without %d of %d: want as many batches with more points",
			reading.Batches, reading.Points, off.Batches, off.Points)
	}
}
