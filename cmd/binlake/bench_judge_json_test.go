//go:build !agentonly

package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

// TestBenchJudgeJSON runs `binlake bench judge -json` for real (a judge process, SQLite,
// no service): stdout is one JSON object of the figures, and what was started, the
// progress and the text report went to stderr.
func TestBenchJudgeJSON(t *testing.T) {
	if testing.Short() && !testenv.InCI() {
		t.Skip("-short: builds and runs the binlake binary")
	}
	cmd := exec.Command(testenv.BinlakeBinary(t), "bench", "judge", "-json", "-duration", "1s", "-nodes", "20", "-concurrency", "2")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	var rep struct {
		Mode      string `json:"mode"`
		Placement struct {
			Answers   int64              `json:"answers"`
			ReqPerS   float64            `json:"req_per_s"`
			LatencyMS map[string]float64 `json:"latency_ms"`
			Errors    map[string]int64   `json:"errors"`
		} `json:"placement"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
	}
	p := rep.Placement
	if rep.Mode != "placement" || p.Answers == 0 || p.ReqPerS <= 0 || p.LatencyMS["p99"] <= 0 || len(p.Errors) != 0 {
		t.Errorf("report %s: want placements answered, a rate, latencies and no errors", stdout.String())
	}
	if !strings.Contains(stderr.String(), "req/s") {
		t.Errorf("stderr lacks the text report:\n%s", stderr.String())
	}
}
