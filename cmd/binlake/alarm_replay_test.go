//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// testPolicies are tried on testHistory: cpu-high on an average with a `for`, a
// labelled lag (the unlabelled summary series left out), and a dead agent.
const testPolicies = `policies:
  - name: cpu-high
    metric: cpu.util
    condition: "avg(#3) > 90"
    for: 20s
    severity: P2
    annotations:
      summary: "CPU on {{ .Node }} is {{ .Value }}% (avg of 3)"
    channels: [ops]
  - name: replication-lag
    metric: wave.lag_s
    nodes:
      labels: {instance: "*"}
    condition: "last > 60"
    severity: P1
    annotations:
      summary: "{{ .Labels.instance }} on {{ .Node }} lags {{ .Value }}s"
    channels: [ops]
  - name: agent-dead
    nodata: 3
    severity: P0
    channels: [ops]
`

var histBase = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

func hat(s int) time.Time { return histBase.Add(time.Duration(s) * time.Second) }

// testHistory is five minutes at 10 s: wave-1's CPU at 95 from 60 s to 140 s, its
// instance orders lagging 120 s from 200 s on; wave-2 silent from 110 s to 190 s.
func testHistory() []metric.Batch {
	var out []metric.Batch
	for s := 0; s < 300; s += 10 {
		cpu, lag := 50.0, 5.0
		if s >= 60 && s < 150 {
			cpu = 95
		}
		if s >= 200 {
			lag = 120
		}
		out = append(out, metric.Batch{Node: "wave-1", TS: hat(s), IntervalS: 10, Points: []metric.Point{
			{Name: "cpu.util", Value: cpu},
			{Name: "wave.lag_s", Value: lag},
			{Name: "wave.lag_s", Value: lag, Labels: map[string]string{"instance": "orders"}},
		}})
		if s <= 100 || s >= 200 {
			out = append(out, metric.Batch{Node: "wave-2", TS: hat(s), IntervalS: 10, Points: []metric.Point{{Name: "cpu.util", Value: 10}}})
		}
	}
	return out
}

// fillStore writes batches into a new up data folder's store, as the judge does: each
// point with its node and its batch's time.
func fillStore(t *testing.T, batches []metric.Batch) string {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(dir, StoreFile)})
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Write(context.Background(), storePoints(batches)))
	return dir
}

// storePoints are the points of batches as the judge stores them.
func storePoints(batches []metric.Batch) []store.Point {
	var pts []store.Point
	for _, b := range batches {
		for _, p := range b.Points {
			pts = append(pts, store.Point{Node: b.Node, Name: p.Name, Labels: p.Labels, TS: b.TS, Value: p.Value})
		}
	}
	return pts
}

// tempFile writes content to a new file named name and returns its path.
func tempFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	writeFile(t, p, content)
	return p
}

func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// The expected replay of testPolicies on testHistory. cpu-high holds from the batch at
// 80 s (the third point at 95), fires once `for` passed, at 100 s, and resolves at 150 s
// (avg 80). wave-2's last batch before its silence is at 100 s: more than 3 intervals
// (30 s) later, at the 1-s tick of 131 s, it is dead, until its batch at 200 s. orders
// lags from 200 s and still does at the end.
var wantTable = []string{
	"FIRED                 RESOLVED              POLICY           SEVERITY  NODE    LABELS           VALUE  SUMMARY",
	"2026-11-29T14:01:40Z  2026-11-29T14:02:30Z  cpu-high         P2        wave-1  -                95     CPU on wave-1 is 95% (avg of 3)",
	"2026-11-29T14:02:11Z  2026-11-29T14:03:20Z  agent-dead       P0        wave-2  reason=nodata    31     -",
	"2026-11-29T14:03:20Z  still firing          replication-lag  P1        wave-1  instance=orders  120    orders on wave-1 lags 120s",
}

// `binlake alarm test -data` on an up's store filled with a known history prints each
// alert's firing and resolution at exactly the expected times.
func TestAlarmTestOnAStore(t *testing.T) {
	dir := fillStore(t, testHistory())
	pol := tempFile(t, "policies.yaml", testPolicies)
	out, errOut, err := runCmd(t, "alarm", "test", "-policies", pol, "-data", dir,
		"-from", "2026-11-29T14:00:00Z", "-to", "2026-11-29T14:05:00Z")
	require.NoError(t, err, errOut)
	require.Empty(t, errOut, "no warning: every metric is known and in the history")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Equal(t, wantTable, lines[:len(lines)-1])
	require.Equal(t, "replayed 51 batches of 2 nodes from sqlite "+filepath.Join(dir, StoreFile)+
		" (2026-11-29T14:00:00Z to 2026-11-29T14:04:50Z) through 3 policies: 3 alerts fired, 2 resolved, 1 still firing at the end; 5 notifications would have been sent",
		lines[len(lines)-1])

	out, _, err = runCmd(t, "alarm", "test", "-policies", pol, "-data", dir, "-from", "2026-11-29T14:00:00Z", "-to", "2026-11-29T14:05:00Z", "-json")
	require.NoError(t, err)
	var rep struct {
		Source        string
		From, To      time.Time
		Batches       int
		BatchesBefore int `json:"batches_before"`
		Alerts        []alarm.Episode
		Notifications int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 51, rep.Batches)
	require.Equal(t, hat(0), rep.From)
	require.Equal(t, hat(290), rep.To)
	require.Len(t, rep.Alerts, 3)
	require.Equal(t, hat(100), rep.Alerts[0].FiredAt)
	require.Equal(t, hat(150), *rep.Alerts[0].ResolvedAt)
	require.Equal(t, hat(131), rep.Alerts[1].FiredAt)
	require.Equal(t, hat(200), *rep.Alerts[1].ResolvedAt)
	require.Equal(t, map[string]string{"alertname": "replication-lag", "node": "wave-1", "severity": "P1", "metric": "wave.lag_s", "instance": "orders"},
		rep.Alerts[2].Labels)
	require.Nil(t, rep.Alerts[2].ResolvedAt)

	// The window [90 s, 180 s): the history before it is read into the windows, as a
	// running alarm reads a partition's back (the policies look back 2 minutes: avg(#3)
	// needs two points before the newest), so cpu-high's average of 3 holds on the
	// window's first point (the 70 s and 80 s points were at 95 too) and fires 20 s
	// later, at 110 s (from the third point, at 130 s, without the history); wave-2 is
	// dead at 131 s and still is when the window ends, at its last batch (170 s).
	out, _, err = runCmd(t, "alarm", "test", "-policies", pol, "-data", dir, "-from", "2026-11-29T14:01:30Z", "-to", "2026-11-29T14:03:00Z", "-json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, hat(90), rep.From)
	require.Equal(t, hat(170), rep.To)
	require.Equal(t, 9+9, rep.BatchesBefore, "wave-1's and wave-2's batches of the 2 minutes before 90 s")
	require.Len(t, rep.Alerts, 2)
	require.Equal(t, hat(110), rep.Alerts[0].FiredAt)
	require.Equal(t, hat(150), *rep.Alerts[0].ResolvedAt)
	require.Equal(t, "agent-dead", rep.Alerts[1].Policy)
	require.Equal(t, hat(131), rep.Alerts[1].FiredAt)
	require.Nil(t, rep.Alerts[1].ResolvedAt)

	// A window ending an hour after the history: both nodes have been silent since
	// 290 s, so both are dead by nodata 3 intervals later (at the tick of 321 s), as the
	// live alarm would find them, and the lag's series went stale (5 intervals) and its
	// alert ended. The replay ran the timer to the window's end, not to the last batch.
	out, _, err = runCmd(t, "alarm", "test", "-policies", pol, "-data", dir, "-from", "2026-11-29T14:00:00Z", "-to", "2026-11-29T15:00:00Z", "-json")
	require.NoError(t, err)
	rep.Alerts = nil
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, hat(290), rep.To, "the last batch's time")
	require.Len(t, rep.Alerts, 5)
	require.Equal(t, "replication-lag", rep.Alerts[2].Policy)
	require.Equal(t, hat(341), *rep.Alerts[2].ResolvedAt)
	for i, node := range []string{"wave-1", "wave-2"} {
		a := rep.Alerts[3+i]
		require.Equal(t, "agent-dead", a.Policy)
		require.Equal(t, node, a.Labels["node"])
		require.Equal(t, hat(321), a.FiredAt)
		require.Nil(t, a.ResolvedAt, "still dead at the window's end")
	}
}

// The same history recorded as a stream (JSON lines, nodes interleaved out of time
// order as partitions deliver them) replays to the same alerts.
func TestAlarmTestOnAStream(t *testing.T) {
	var buf bytes.Buffer
	hist := testHistory()
	// wave-2's batches first, then wave-1's: each node in order, not the stream.
	for _, node := range []string{"wave-2", "wave-1"} {
		for _, b := range hist {
			if b.Node == node {
				data, err := metric.Encode(b)
				require.NoError(t, err)
				buf.Write(data)
				buf.WriteString("\n\n")
			}
		}
	}
	stream := tempFile(t, "metrics.jsonl", buf.String())
	pol := tempFile(t, "policies.yaml", testPolicies)
	out, errOut, err := runCmd(t, "alarm", "test", "-policies", pol, "-stream", stream)
	require.NoError(t, err, errOut)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Equal(t, wantTable, lines[:len(lines)-1])
	require.Equal(t, "replayed 51 batches of 2 nodes from "+stream+
		" (2026-11-29T14:00:00Z to 2026-11-29T14:04:50Z) through 3 policies: 3 alerts fired, 2 resolved, 1 still firing at the end; 5 notifications would have been sent",
		lines[len(lines)-1])
}

// A typo in a policy's metric is a warning naming the file, the line, the policy and the
// closest known name; the replay still runs.
func TestAlarmTestWarnsOfAnUnknownMetric(t *testing.T) {
	dir := fillStore(t, testHistory())
	pol := tempFile(t, "policies.yaml", `policies:
  - name: cpu-typo
    metric: cpu.utl
    condition: "last > 90"
    severity: P2
    channels: [ops]
  - name: disk-full
    metric: disk.used_pct
    condition: "last > 90"
    severity: P2
    channels: [ops]
`)
	out, errOut, err := runCmd(t, "alarm", "test", "-policies", pol, "-data", dir, "-from", "2026-11-29T14:00:00Z", "-to", "2026-11-29T15:00:00Z")
	require.NoError(t, err)
	require.Equal(t, "warning: "+pol+`:3: policy "cpu-typo" watches metric "cpu.utl", which is not a canonical metric, one the agents' collectors send, or one in the history replayed: the policy can never fire; did you mean cpu.util?`+"\n"+
		"warning: "+pol+`:8: policy "disk-full": the history has no point of metric "disk.used_pct", so it was not tried`+"\n", errOut)
	require.Contains(t, out, "through 2 policies: no alert fired")
}

// Bad input is an error naming what is wrong.
func TestAlarmTestErrors(t *testing.T) {
	pol := tempFile(t, "policies.yaml", testPolicies)
	empty := t.TempDir()
	relJudge := tempFile(t, "judge.yaml", "node: judge-1\nbus:\n  kind: none\nstore:\n  kind: sqlite\n  sqlite:\n    path: data/judge.db\n")
	bad := tempFile(t, "bad.jsonl", `{"node":"wave-1","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[]}`+"\n"+`{"node":"wave-1"}`+"\n")
	noOps := tempFile(t, "alarm.yaml", "bus: {kind: none}\nchannels: {l: {kind: log}}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two sources", []string{"-data", empty, "-stream", bad}, "give one of -data, -judge-config and -stream"},
		{"a channel the config lacks", []string{"-stream", bad, "-config", noOps}, `policy "cpu-high" names channel "ops", which ` + noOps + " does not configure"},
		{"no store", []string{"-data", empty}, "no store of a binlake up in " + empty},
		{"missing stream", []string{"-stream", filepath.Join(empty, "none.jsonl")}, "-stream: open " + filepath.Join(empty, "none.jsonl")},
		{"bad from", []string{"-data", empty, "-from", "yesterday"}, `-from "yesterday": want an RFC 3339 time or a duration before -to (24h)`},
		{"from after to", []string{"-data", empty, "-from", "2026-11-29T15:00:00Z", "-to", "2026-11-29T14:00:00Z"}, "-from 2026-11-29T15:00:00Z is not before -to 2026-11-29T14:00:00Z"},
		{"argument", []string{"-data", empty, "now"}, `alarm test takes no arguments, got ["now"]`},
		{"relative judge store", []string{"-judge-config", relJudge}, "sqlite store: stat data/judge.db: no such file or directory: " + relJudge +
			"'s store.sqlite.path is relative to the judge's working directory (/var/lib/binlake/judge under systemd): give that folder's data/ with -data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, append([]string{"alarm", "test", "-policies", pol}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// A bad line is skipped, as the live alarm skips a bad message, and said.
	_, stderr, err := runCmd(t, "alarm", "test", "-policies", pol, "-stream", bad)
	require.NoError(t, err)
	require.Contains(t, stderr, "warning: "+bad+":2: skipped, as the alarm skips it: invalid metric batch")
	// A file of no batch at all is the wrong file: refused, each line said (it replayed
	// nothing and exited 0).
	garbage := tempFile(t, "garbage.jsonl", "garbage\n{\"a\":1}\n")
	_, stderr, err = runCmd(t, "alarm", "test", "-policies", pol, "-stream", garbage)
	require.ErrorContains(t, err, garbage+": none of its 2 lines is a metric batch")
	require.Contains(t, stderr, "warning: "+garbage+":1: skipped")
}
