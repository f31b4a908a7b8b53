//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/judgetest"
)

// typoPolicies watch a misspelt canonical metric and a name of one's own.
const typoPolicies = `policies:
  - name: cpu-high
    metric: cpu.utl
    condition: "avg(#3) > 90"
    severity: P2
    channels: [ops]
  - name: checkout-errors
    metric: shop.checkout_errors
    condition: "last > 0"
    severity: P2
    channels: [ops]
`

// alarmConfig is an alarm config without a bus, its coordinator file in dir.
func alarmConfig(t *testing.T, dir string) string {
	return tempFile(t, "alarm.yaml", `bus:
  kind: none
coordinator:
  kind: single
  path: `+filepath.Join(dir, "alarm-coord.json")+`
http:
  listen: 127.0.0.1:0
channels:
  ops:
    kind: webhook
    url: http://127.0.0.1:9/alerts
`)
}

// `binlake alarm --check` passes a policy on a misspelt metric but warns of it on
// stderr, naming file, line, policy and the closest name; a name nothing near is named
// without a guess.
func TestAlarmCheckWarnsOfAnUnknownMetric(t *testing.T) {
	cfg := alarmConfig(t, t.TempDir())
	pol := tempFile(t, "policies.yaml", typoPolicies)
	out, errOut, err := runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol)
	require.NoError(t, err)
	require.Equal(t, cfg+" and "+pol+" are valid: 2 policies, channels ops=webhook\n", out)
	require.Equal(t, "warning: "+pol+`:3: policy "cpu-high" watches metric "cpu.utl", which is not a canonical metric or one the agents' collectors send: the policy can never fire; did you mean cpu.util?`+"\n"+
		"warning: "+pol+`:8: policy "checkout-errors" watches metric "shop.checkout_errors", which is not a canonical metric or one the agents' collectors send: the policy can never fire`+"\n",
		errOut)
}

// The warning comes in the run that reports the file's errors too, for every policy
// without a problem of its own: fixing the errors first hid it until the run after.
func TestAlarmCheckWarnsOfAnUnknownMetricBesideErrors(t *testing.T) {
	cfg := alarmConfig(t, t.TempDir())
	pol := tempFile(t, "policies.yaml", typoPolicies+`  - {name: bad-for, metric: cpu.utl, condition: "last > 0", for: abc, severity: P2, channels: [ops]}
`)
	_, errOut, err := runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol)
	require.ErrorContains(t, err, pol+`:12: field "policies[2].for": invalid duration "abc"`)
	require.Equal(t, "warning: "+pol+`:3: policy "cpu-high" watches metric "cpu.utl", which is not a canonical metric or one the agents' collectors send: the policy can never fire; did you mean cpu.util?`+"\n"+
		"warning: "+pol+`:8: policy "checkout-errors" watches metric "shop.checkout_errors", which is not a canonical metric or one the agents' collectors send: the policy can never fire`+"\n",
		errOut, "warned of the two policies that decoded, not of the one in error")
}

// With -judge, the names the judge has seen count as known: a metric of one's own that a
// sender posts passes; the typo is still warned of, naming where the known names came
// from. A judge that cannot answer is a warning too, and the check goes on without it.
func TestAlarmCheckAsksTheJudge(t *testing.T) {
	srv := judgetest.Start(t, "")
	b := metric.Batch{Node: "shop-1", TS: time.Now().UTC(), IntervalS: 10,
		Points: []metric.Point{{Name: "shop.checkout_errors", Value: 2}}}
	data, err := metric.Encode(b)
	require.NoError(t, err)
	resp, err := http.Post(srv.URL+"/v1/metrics", "application/json", bytes.NewReader(data))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	cfg := alarmConfig(t, t.TempDir())
	pol := tempFile(t, "policies.yaml", typoPolicies)
	out, errOut, err := runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol, "-judge", srv.URL)
	require.NoError(t, err)
	require.Equal(t, cfg+" and "+pol+" are valid: 2 policies, channels ops=webhook\n", out)
	require.Equal(t, "warning: "+pol+`:3: policy "cpu-high" watches metric "cpu.utl", which is not a canonical metric, one the agents' collectors send, or one the judge at `+srv.URL+` has seen: the policy can never fire; did you mean cpu.util?`+"\n",
		errOut)

	_, errOut, err = runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol, "-judge", "http://127.0.0.1:1")
	require.NoError(t, err)
	require.Contains(t, errOut, "warning: the judge at http://127.0.0.1:1: metric names: ")
	require.Contains(t, errOut, "policies are checked against the names the agents' collectors send only\n")
	require.Contains(t, errOut, `watches metric "shop.checkout_errors", which is not a canonical metric or one the agents' collectors send`)
}

// A -judge URL with a user and password is refused, as the configs' URLs are: it was
// printed in the warning of a judge that could not answer ("warning: the judge at
// http://u:<password>@…"). The error names the flag and never shows the password.
func TestAlarmJudgeFlagRefusesCredentials(t *testing.T) {
	cfg := alarmConfig(t, t.TempDir())
	pol := tempFile(t, "policies.yaml", typoPolicies)
	for _, judge := range []string{"http://u:Hunter2AJ@127.0.0.1:1", "http://Hunter2AJ@127.0.0.1:1"} {
		out, errOut, err := runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol, "-judge", judge)
		require.ErrorContains(t, err, "-judge: credentials in the URL would be logged: the judge's metric names need none", judge)
		require.NotContains(t, out+errOut+err.Error(), "Hunter2AJ")
	}
}

// The alarm says the same in its log when it starts.
func TestAlarmStartWarnsOfAnUnknownMetric(t *testing.T) {
	dir := t.TempDir()
	cfg := alarmConfig(t, dir)
	pol := tempFile(t, "policies.yaml", typoPolicies)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut testenv.SyncBuffer
	serving := &signalWriter{sub: "alarm serving on", c: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"alarm", "-config", cfg, "-policies", pol}, serving, &errOut) }()
	select {
	case err := <-done:
		t.Fatalf("alarm returned before serving: %v\n%s", err, errOut.String())
	case <-serving.c:
	}
	cancel()
	require.NoError(t, <-done)
	require.Contains(t, errOut.String(), `level=WARN msg="`+pol+`:3: policy \"cpu-high\" watches metric \"cpu.utl\", which is not a canonical metric or one the agents' collectors send: the policy can never fire; did you mean cpu.util?"`)
}

// signalWriter closes c once sub has been written.
type signalWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	sub  string
	c    chan struct{}
	done bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.sub) {
		w.done = true
		close(w.c)
	}
	return len(p), nil
}

// `binlake up` knows, besides the canonical names, the names in its store: a policy on
// a name of one's own that the store holds passes; a typo is logged with the closest
// name.
func TestUpWarnsOfAnUnknownMetric(t *testing.T) {
	dir := fillStore(t, []metric.Batch{{Node: "shop-1", TS: histBase, IntervalS: 10,
		Points: []metric.Point{{Name: "shop.checkout_errors", Value: 1}}}})
	polFile := tempFile(t, "policies.yaml", typoPolicies)
	chans, err := LoadChannels("", quietLogger())
	require.NoError(t, err)
	pols, _, err := LoadPolicies(polFile, chans) // as runUp does: ops goes to the log
	require.NoError(t, err)
	var logs testenv.SyncBuffer
	startUp(t, upOptions{DataDir: dir, Node: "node-a", Policies: pols, PoliciesFile: polFile, Channels: &chans,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var warned []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "watches metric") {
			warned = append(warned, l[strings.Index(l, "level="):])
		}
	}
	require.Equal(t, []string{`level=WARN msg="` + polFile + `:3: policy \"cpu-high\" watches metric \"cpu.utl\", which is not a canonical metric, one the agents' collectors send, or one in ` +
		filepath.Join(dir, StoreFile) + `: the policy can never fire; did you mean cpu.util?" component=up`}, warned)
}

// The shipped policies watch only names the agents and waves send: none is warned of.
func TestShippedPoliciesWatchKnownMetrics(t *testing.T) {
	pols, err := DefaultPolicies()
	require.NoError(t, err)
	require.Empty(t, unknownMetricMessages(pols, "built-in", knownMetricNames(), knownFromSenders))
	example, err := policy.Load(examplePolicies)
	require.NoError(t, err)
	require.Empty(t, unknownMetricMessages(example, examplePolicies, knownMetricNames(), knownFromSenders))
}

// `binlake alarm --check` reports every problem of the policy file together with the
// config's that the alarm resolves as it starts (a channel's secret file it cannot read), and then every channel the policies name
// that the config lacks: three runs were five for the trial's file.
func TestAlarmCheckReportsEveryPolicyProblem(t *testing.T) {
	dir := t.TempDir()
	cfg := tempFile(t, "alarm.yaml", "bus: {kind: none}\ncoordinator: {kind: single, path: "+filepath.Join(dir, "c.json")+
		"}\nchannels: {ops: {kind: webhook, url_file: "+filepath.Join(dir, "nosuch.url")+"}}\n")
	pol := tempFile(t, "policies.yaml", `policies:
  - name: a
    metric: cpu.util
    condition: avg(#3) >> 1
    severity: P9
    channels: [ops]
  - name: b
    metric: cpu.util
    condition: lookup(#4,3) > 1
    severity: P1
    channels: [ops]
`)
	_, _, err := runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol)
	require.Error(t, err)
	for _, want := range []string{
		pol + `:4: field "policies[0].condition"`,
		pol + `:5: field "policies[0].severity"`,
		pol + `:9: field "policies[1].condition"`,
		`field "channels.ops.url_file"`,
	} {
		require.Contains(t, err.Error(), want)
	}

	pol = tempFile(t, "policies.yaml", "policies:\n  - {name: a, nodata: 3, severity: P1, channels: [pager]}\n  - {name: b, nodata: 3, severity: P1, channels: [ops, sms]}\n")
	cfg = tempFile(t, "alarm.yaml", "bus: {kind: none}\ncoordinator: {kind: single, path: "+filepath.Join(dir, "c.json")+"}\nchannels: {ops: {kind: log}}\n")
	_, _, err = runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol)
	require.EqualError(t, err, pol+`:2: policy "a" names channel "pager", which `+cfg+" does not configure\n"+
		pol+`:3: policy "b" names channel "sms", which `+cfg+" does not configure")
}

// `binlake alarm --check` on a bus says how much of a partition's history the process
// will read back at start: the policies' longest look back (nothing without a bus).
func TestAlarmCheckSaysTheHistoryReadBack(t *testing.T) {
	dir := t.TempDir()
	cfg := tempFile(t, "alarm.yaml", `bus:
  kind: kafka
  brokers: [127.0.0.1:9]
coordinator:
  kind: single
  path: `+filepath.Join(dir, "alarm-coord.json")+`
channels:
  ops:
    kind: webhook
    url: http://127.0.0.1:9/alerts
`)
	pol := tempFile(t, "policies.yaml", `policies:
  - name: lag
    metric: wave.lag_s
    condition: "avg_over(5m) > 60"
    severity: P1
    channels: [ops]
  - name: cpu
    metric: cpu.util
    condition: "all(#3) > 90"
    severity: P2
    channels: [ops]
`)
	out, _, err := runCmd(t, "alarm", "-check", "-config", cfg, "-policies", pol)
	require.NoError(t, err)
	require.Equal(t, cfg+" and "+pol+" are valid: 2 policies, channels ops=webhook; the 5m0s of history before a partition's first message is read back into the windows (the policies' longest look back)\n", out)
}
