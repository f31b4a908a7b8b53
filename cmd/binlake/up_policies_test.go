//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/deploy"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// firing records the alerts the engine sends, as "policy instance: summary".
type firing struct {
	mu  sync.Mutex
	got []string
}

func (f *firing) send(m notify.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range m.Alerts {
		if a.Status == "firing" {
			f.got = append(f.got, a.Labels["alertname"]+" "+a.Labels["instance"]+": "+a.Annotations["summary"])
		}
	}
}

func (f *firing) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.got
	f.got = nil
	slices.Sort(out)
	return out
}

// defaultPoliciesEngine is an alarm engine running the built-in policies on the clock
// *now, its notifications recorded by the firing it returns.
func defaultPoliciesEngine(t *testing.T, now *time.Time) (*alarm.Engine, *firing) {
	t.Helper()
	pols, err := DefaultPolicies()
	if err != nil {
		t.Fatal(err)
	}
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	out := &firing{}
	e := alarm.NewEngine(alarm.EngineOptions{Policies: pols, Log: &alarm.CoordLog{C: c}, Send: out.send,
		Now: func() time.Time { return *now }, Logger: quietLogger()})
	if _, err := e.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, out
}

// TestDefaultWaveDownPolicyFires: a wave's process down while its host's agent runs
// (an outside trial's kill -9: the wave.* series stop, nothing paged) fires the built-in
// wave-down after 30 s of the agent's collector_up{collector=wave} at 0, naming the
// node; a restart's few seconds, another collector failing, and a host with no wave
// collector fire nothing.
func TestDefaultWaveDownPolicyFires(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	e, out := defaultPoliciesEngine(t, &now)
	up := func(collector string, v float64) metric.Point {
		return metric.Point{Name: "agent.collector_up", Value: v, Labels: map[string]string{"collector": collector}}
	}
	tick := func(waveUp float64) {
		for _, b := range []metric.Batch{
			{Node: "wave-b", TS: now, IntervalS: 5, Points: []metric.Point{{Name: metric.CPUUtil, Value: 10}, up("host", 1), up("wave", waveUp)}},
			{Node: "judge-host", TS: now, IntervalS: 5, Points: []metric.Point{{Name: metric.CPUUtil, Value: 10}, up("host", 0)}},
		} {
			e.Observe(b)
		}
		e.Tick()
		e.Sync()
		now = now.Add(5 * time.Second)
	}
	for range 2 { // a restart: 10 s down
		tick(0)
	}
	tick(1)
	for range 6 { // down: 0 to 25 s
		tick(0)
	}
	if got := out.take(); len(got) != 0 {
		t.Fatalf("fired within 30 s of the wave down (or for a restart, or another collector): %q", got)
	}
	tick(0) // 30 s
	want := "wave-down : the wave on wave-b does not answer its agent (its process is down, or the agent's collectors.wave.url is wrong): the other waves take its instances over"
	if got := out.take(); !slices.Equal(got, []string{want}) {
		t.Fatalf("at 30 s fired %q, want %q", got, want)
	}
}

// TestDefaultWavePoliciesFire runs the built-in policies on an alarm engine with an
// injected clock: a capture instance that stays not running for a minute fires an alert
// that names the instance and the reason; one whose lag averages above 60 s over 5
// minutes for 2 minutes fires one that names the instance; a running instance with a
// small lag, and the node's unlabelled largest lag, fire nothing.
func TestDefaultWavePoliciesFire(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	e, out := defaultPoliciesEngine(t, &now)
	point := func(name string, v float64, labels ...string) metric.Point {
		p := metric.Point{Name: name, Value: v, Labels: map[string]string{}}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
		return p
	}
	tick := func(lag float64) {
		e.Observe(metric.Batch{Node: "db-host", TS: now, IntervalS: 10, Points: []metric.Point{
			point(metric.WaveInstanceRunning, 0, "instance", "local", "state", cluster.StateRetrying, "reason", wave.ReasonBinlogOff),
			point(metric.WaveInstanceRunning, 1, "instance", "orders", "state", cluster.StateRunning),
			point(metric.WaveLagSeconds, lag, "instance", "orders"),
			point(metric.WaveLagSeconds, 5, "instance", "users"),
			point(metric.WaveLagSeconds, lag), // the agent's unlabelled largest lag: no second page
		}})
		e.Tick()
		e.Sync() // the engine's writer sends what became due
		now = now.Add(10 * time.Second)
	}
	expect := func(when string, want ...string) {
		t.Helper()
		if got := out.take(); !slices.Equal(got, want) {
			t.Fatalf("%s, fired:\n%s\nwant:\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	for range 6 { // 50 s: both conditions hold, neither long enough yet
		tick(120)
	}
	expect("within the first minute")
	tick(120) // 60 s: the instance has not run for a minute
	expect("at a minute",
		"wave-not-running local: capture instance local on db-host is not running: retrying, binlog_off (the error is on the wave's /status)")
	for range 5 { // to 110 s
		tick(120)
	}
	expect("within 2 minutes of lag")
	tick(120) // 120 s: the lag's 5-minute average has been above 60 for 2 minutes
	expect("at 2 minutes of lag", "replication-lag orders: capture instance orders on db-host lags 120s behind its source (5-minute average)")
}

// TestDefaultPoliciesAreTheShippedOnes: there is one set of default policies. `binlake
// up` runs deploy/policies.yaml, the file install.sh installs for the alarm, embedded
// byte for byte; no second copy sits beside up; and the reference example watches the
// replication lag as the defaults do (the same series, condition, for and severity).
func TestDefaultPoliciesAreTheShippedOnes(t *testing.T) {
	const shipped = "../../deploy/policies.yaml"
	onDisk, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, deploy.Policies) {
		t.Fatalf("up's built-in policies are not %s", shipped)
	}
	describe := func(ps []*policy.Policy) []string {
		var out []string
		for _, p := range ps {
			cond := "nodata " + strconv.Itoa(p.NoData)
			if p.Cond != nil {
				cond = p.Cond.String()
			}
			summary := ""
			if tm := p.Annotations["summary"]; tm != nil {
				summary = tm.Root.String()
			}
			out = append(out, fmt.Sprintf("%s %s %v %s for %s %s %v %s", p.Name, p.Metric, p.Labels, cond, p.For, p.Severity, p.Channels, summary))
		}
		return out
	}
	ups, err := DefaultPolicies()
	if err != nil {
		t.Fatal(err)
	}
	installed, err := policy.Load(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := describe(ups), describe(installed); !slices.Equal(a, b) {
		t.Fatalf("up runs:\n%s\nthe alarm is installed with:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	for _, stray := range []string{"up_policies.yaml", "policies.yaml"} {
		if _, err := os.Stat(stray); err == nil {
			t.Errorf("cmd/binlake/%s: a second copy of the default policies; up embeds deploy/policies.yaml", stray)
		}
	}

	example, err := policy.Load(examplePolicies)
	if err != nil {
		t.Fatal(err)
	}
	lag := func(ps []*policy.Policy) string {
		i := slices.IndexFunc(ps, func(p *policy.Policy) bool { return p.Name == "replication-lag" })
		if i < 0 {
			t.Fatal("no replication-lag policy")
		}
		p := ps[i]
		return fmt.Sprintf("%s %v %s for %s %s", p.Metric, p.Labels, p.Cond, p.For, p.Severity)
	}
	if d, e := lag(installed), lag(example); d != e || d != `wave.lag_s map[instance:*] avg_over(5m) > 60 for 2m0s P1` {
		t.Fatalf("replication-lag: the defaults have %s, the example %s", d, e)
	}
}

// TestDefaultCapacityPolicyFires runs the built-in cluster-capacity policy on an alarm
// engine with an injected clock: the balancer's node reporting a cluster mean peak
// utilisation above 0.6 fires once it has held for 30 minutes, not before, with the
// summary that says to add a wave; a utilisation below the threshold, or one whose
// 30-minute average stays below it despite a short peak, fires nothing.
func TestDefaultCapacityPolicyFires(t *testing.T) {
	pols, err := DefaultPolicies()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pols, func(p *policy.Policy) bool { return p.Name == "cluster-capacity" })
	if i < 0 {
		t.Fatal("no built-in policy cluster-capacity")
	}
	p := pols[i]
	if p.Metric != metric.WaveClusterUtil || p.For != 30*time.Minute || p.Severity != 3 ||
		!slices.Contains(p.Channels, LogChannel) {
		t.Fatalf("cluster-capacity: metric %s, for %s, severity %s, channels %v", p.Metric, p.For, p.Severity, p.Channels)
	}
	if p.Cond == nil || p.Cond.Func != policy.FuncAvgOver || p.Cond.Window != 30*time.Minute ||
		p.Cond.Op != policy.OpGT || p.Cond.Threshold != 0.6 {
		t.Fatalf("cluster-capacity: condition %v", p.Cond)
	}

	// run feeds the balancer node's wave.cluster_utilisation every 10 s for d, the value at each
	// moment from load, to an engine running every built-in policy, and returns when the
	// first alert fired (0: none) and what it said.
	run := func(t *testing.T, d time.Duration, load func(since time.Duration) float64) (time.Duration, []string) {
		c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), CoordFile)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
		now := start
		var out firing
		e := alarm.NewEngine(alarm.EngineOptions{Policies: pols, Log: &alarm.CoordLog{C: c}, Send: out.send,
			Now: func() time.Time { return now }, Logger: quietLogger()})
		if _, err := e.Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
		for ; now.Sub(start) <= d; now = now.Add(10 * time.Second) {
			e.Observe(metric.Batch{Node: "wave-2", TS: now, IntervalS: 10, Points: []metric.Point{
				{Name: metric.WaveClusterUtil, Value: load(now.Sub(start))},
			}})
			e.Tick()
			e.Sync()
			if got := out.take(); len(got) > 0 {
				return now.Sub(start), got
			}
		}
		return 0, nil
	}

	t.Run("sustained above", func(t *testing.T) {
		at, got := run(t, 2*time.Hour, func(time.Duration) float64 { return 0.65 })
		if at != 30*time.Minute {
			t.Fatalf("fired at %s, want after the 30 minutes of for: %v", at, got)
		}
		want := []string{"cluster-capacity : the cluster's waves use 0.65 of their cores on average at their peaks, above 0.6: " +
			"add a wave (binlake wave on a new host); it takes its share through the balancer (automatic mode) or " +
			"`binlake instance rebalance -apply`"}
		if !slices.Equal(got, want) {
			t.Fatalf("fired:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("below", func(t *testing.T) {
		if at, got := run(t, 2*time.Hour, func(time.Duration) float64 { return 0.55 }); len(got) != 0 {
			t.Fatalf("fired at %s: %v", at, got)
		}
	})
	t.Run("short peak", func(t *testing.T) {
		// 5 minutes at 0.9 in an hour at 0.5: the 30-minute average peaks near 0.57.
		load := func(since time.Duration) float64 {
			if since >= 20*time.Minute && since < 25*time.Minute {
				return 0.9
			}
			return 0.5
		}
		if at, got := run(t, 2*time.Hour, load); len(got) != 0 {
			t.Fatalf("fired at %s: %v", at, got)
		}
	})
	t.Run("above for less than for", func(t *testing.T) {
		// 20 minutes above, then back under: the average comes down below the threshold
		// before the condition has held for 30 minutes.
		load := func(since time.Duration) float64 {
			if since < 20*time.Minute {
				return 0.65
			}
			return 0.3
		}
		if at, got := run(t, 2*time.Hour, load); len(got) != 0 {
			t.Fatalf("fired at %s: %v", at, got)
		}
	})
}

// exampleAlarmConfig copies deploy/alarm.example.yaml into dir with every *_file secret
// it names moved into dir, written there unless skip names its base name. It returns the
// copy's path and the secret files' new paths by base name.
func exampleAlarmConfig(t *testing.T, dir string, skip ...string) (string, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "alarm.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	secretFile := regexp.MustCompile(`(?m)^(\s*[a-z_]+_file:\s*)(\S+)`)
	files := map[string]string{}
	out := secretFile.ReplaceAllStringFunc(string(b), func(line string) string {
		m := secretFile.FindStringSubmatch(line)
		base := filepath.Base(m[2])
		p := filepath.Join(dir, base)
		files[base] = p
		if !slices.Contains(skip, base) {
			// A URL fits every kind: robot and webhook URLs, and a password or signing secret.
			if err := os.WriteFile(p, []byte("http://127.0.0.1:9/"+base+"?token=hunter2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return m[1] + p
	})
	p := filepath.Join(dir, "alarm.yaml")
	if err := os.WriteFile(p, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, files
}

const examplePolicies = "../../deploy/policies.example.yaml"

// TestUpExamplePoliciesWithoutChannels: the shipped policies, whose channels are the
// alarm's, load without -channels: the channels up lacks are reported once, and every
// policy notifies the log (the only channel up has), including those that did not name it.
func TestUpExamplePoliciesWithoutChannels(t *testing.T) {
	chans, err := LoadChannels("", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	pols, toLog, err := LoadPolicies(examplePolicies, chans)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dba-dingtalk", "dba-mail", "dba-wecom", "ops-slack", "ops-webhook"}; !slices.Equal(toLog, want) {
		t.Fatalf("channels to the log = %v, want %v", toLog, want)
	}
	if len(pols) < 5 {
		t.Fatalf("%d policies", len(pols))
	}
	for _, p := range pols {
		if !slices.Equal(p.Channels, []string{LogChannel}) {
			t.Fatalf("policy %s notifies %v, want [log]", p.Name, p.Channels)
		}
	}
}

// TestUpExamplePoliciesWithAlarmConfig: -channels takes the alarm's own config file; each
// policy keeps its channels and gains the log; a channel the file lacks, or whose secret
// file is missing, is an error naming it.
func TestUpExamplePoliciesWithAlarmConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := exampleAlarmConfig(t, dir)
	chans, err := LoadChannels(cfg, quietLogger())
	if err != nil {
		t.Fatalf("the alarm's example config: %v", err)
	}
	for _, name := range []string{"ops-webhook", "dba-dingtalk", "dba-wecom", "ops-slack", "dba-mail", LogChannel} {
		if chans.Notifiers[name] == nil {
			t.Fatalf("no channel %s in %v", name, chans.Desc)
		}
	}
	if strings.Contains(strings.Join(chans.Desc, " "), "hunter2") {
		t.Fatalf("channel descriptions show a secret: %v", chans.Desc)
	}
	pols, toLog, err := LoadPolicies(examplePolicies, chans)
	if err != nil || len(toLog) != 0 {
		t.Fatalf("LoadPolicies: %v (to the log: %v)", err, toLog)
	}
	got := map[string][]string{}
	for _, p := range pols {
		got[p.Name] = p.Channels
	}
	for name, want := range map[string][]string{
		"cpu-high":        {"ops-webhook", "ops-slack", LogChannel},
		"replication-lag": {"dba-dingtalk", "dba-wecom", LogChannel},
		"tps-drop":        {LogChannel},
	} {
		if !slices.Equal(got[name], want) {
			t.Errorf("policy %s notifies %v, want %v", name, got[name], want)
		}
	}

	t.Run("missing secret file", func(t *testing.T) {
		cfg, files := exampleAlarmConfig(t, t.TempDir(), "wecom.url")
		_, err := LoadChannels(cfg, quietLogger())
		if err == nil || !strings.Contains(err.Error(), "channels.dba-wecom") || !strings.Contains(err.Error(), files["wecom.url"]) {
			t.Fatalf("err = %v, want it to name channels.dba-wecom and %s", err, files["wecom.url"])
		}
	})
	t.Run("every missing secret file, in a stable order", func(t *testing.T) {
		// Each channel was built in map order and the first failure returned: one file
		// at a time, a different one on each run.
		cfg, files := exampleAlarmConfig(t, t.TempDir(), "wecom.url", "slack.url", "smtp.password")
		want := strings.Join([]string{
			cfg + `:100: field "channels.dba-wecom.url_file": read secret: open ` + files["wecom.url"] + ": no such file or directory",
			cfg + `:103: field "channels.ops-slack.url_file": read secret: open ` + files["slack.url"] + ": no such file or directory",
			cfg + `:111: field "channels.dba-mail.smtp.password_file": read secret: open ` + files["smtp.password"] + ": no such file or directory",
		}, "\n")
		for range 5 {
			_, err := LoadChannels(cfg, quietLogger())
			if err == nil || err.Error() != want {
				t.Fatalf("err =\n%v\nwant\n%s", err, want)
			}
		}
	})
	t.Run("policy names a channel the file lacks", func(t *testing.T) {
		only := filepath.Join(dir, "channels.yaml")
		hook := filepath.Join(dir, "hook.url")
		writeFile(t, only, "channels:\n  ops-webhook:\n    kind: webhook\n    url_file: "+hook+"\n")
		writeFile(t, hook, "http://127.0.0.1:9/hook\n")
		chans, err := LoadChannels(only, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = LoadPolicies(examplePolicies, chans)
		if err == nil || !strings.Contains(err.Error(), `policy "cpu-high" names channel "ops-slack", which -channels `+only+" does not configure") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("log is up's", func(t *testing.T) {
		bad := filepath.Join(dir, "log.yaml")
		writeFile(t, bad, "channels:\n  log:\n    kind: webhook\n    url: http://127.0.0.1:9/\n")
		if _, err := LoadChannels(bad, quietLogger()); err == nil || !strings.Contains(err.Error(), "give this channel another name") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestUpRunsExamplePolicies: `binlake up --policies deploy/policies.example.yaml` starts,
// with and without the alarm's config as -channels, and says once where the alerts of
// the channels it lacks go.
func TestUpRunsExamplePolicies(t *testing.T) {
	cfg, _ := exampleAlarmConfig(t, t.TempDir())
	for _, tc := range []struct {
		name  string
		extra []string
		warn  int
	}{
		{"without channels", nil, 1},
		{"with the alarm's config", []string{"-channels", cfg}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			stdout, stderr := &syncWriter{w: &out}, &syncWriter{w: &errOut}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			args := append([]string{"up", "-data", t.TempDir(), "-judge-http", "127.0.0.1:0", "-alarm-http", "127.0.0.1:0",
				"-policies", examplePolicies}, tc.extra...)
			go func() { done <- run(ctx, args, stdout, stderr) }()
			deadline := time.Now().Add(30 * time.Second)
			for {
				stdout.mu.Lock()
				up := strings.Contains(out.String(), "Ctrl-C stops it")
				stdout.mu.Unlock()
				if up {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("up: %v\n%s", err, errOut.String())
				case <-time.After(50 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("up not serving after 30s")
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("up: %v", err)
			}
			log := errOut.String()
			if n := strings.Count(log, "their alerts go to the log only"); n != tc.warn {
				t.Fatalf("%d warnings about channels up lacks, want %d:\n%s", n, tc.warn, log)
			}
			if tc.warn > 0 && !strings.Contains(log, `channels="dba-dingtalk, dba-mail, dba-wecom, ops-slack, ops-webhook"`) {
				t.Fatalf("the warning does not list the channels:\n%s", log)
			}
			if tc.warn == 0 && !strings.Contains(log, "dba-dingtalk=dingtalk") {
				t.Fatalf("up does not report the alarm's channels:\n%s", log)
			}
			if strings.Contains(log, "hunter2") {
				t.Fatalf("a secret reached the log:\n%s", log)
			}
		})
	}
}

// receiversOf runs pols on an alarm engine with an injected clock, feeding wave-1 a CPU
// at 99% for two minutes, and returns the channels that received policy's firing alert.
func receiversOf(t *testing.T, pols []*policy.Policy, name string) []string {
	t.Helper()
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var got []string
	send := func(m notify.Message) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range m.Alerts {
			if a.Status == "firing" && a.Labels["alertname"] == name && !slices.Contains(got, m.Receiver) {
				got = append(got, m.Receiver)
			}
		}
	}
	e := alarm.NewEngine(alarm.EngineOptions{Policies: pols, Log: &alarm.CoordLog{C: c}, Send: send,
		Now: func() time.Time { return now }, Logger: quietLogger()})
	if _, err := e.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		e.Observe(metric.Batch{Node: "wave-1", TS: now, IntervalS: 10, Points: []metric.Point{{Name: "cpu.util", Value: 99}}})
		e.Tick()
		e.Sync()
		now = now.Add(10 * time.Second)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got)
	return got
}

// TestUpExamplePolicyAlertsReachTheLog: cpu-critical names [ops-webhook, dba-mail] and
// not the log; its alert reaches the log in up all the same, alone without -channels and
// besides its own channels with the alarm's config.
func TestUpExamplePolicyAlertsReachTheLog(t *testing.T) {
	chans, err := LoadChannels("", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	pols, _, err := LoadPolicies(examplePolicies, chans)
	if err != nil {
		t.Fatal(err)
	}
	if got := receiversOf(t, pols, "cpu-critical"); !slices.Equal(got, []string{LogChannel}) {
		t.Fatalf("without -channels, cpu-critical went to %v, want [log]", got)
	}
	cfg, _ := exampleAlarmConfig(t, t.TempDir())
	if chans, err = LoadChannels(cfg, quietLogger()); err != nil {
		t.Fatal(err)
	}
	if pols, _, err = LoadPolicies(examplePolicies, chans); err != nil {
		t.Fatal(err)
	}
	if got := receiversOf(t, pols, "cpu-critical"); !slices.Equal(got, []string{"dba-mail", LogChannel, "ops-webhook"}) {
		t.Fatalf("with the alarm's channels, cpu-critical went to %v, want [dba-mail log ops-webhook]", got)
	}
}

// The shipped agent-dead summaries say how long a node was silent in whole seconds: the
// silence is measured, so "sent nothing for 3.1310000000000002s" came out before.
func TestAgentDeadSummaryInWholeSeconds(t *testing.T) {
	for _, path := range []string{"../../deploy/policies.yaml", "../../deploy/policies.example.yaml"} {
		pols, err := policy.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range pols {
			if p.NoData == 0 {
				continue
			}
			found = true
			got := p.Render(policy.TemplateData{Node: "wave-1", Value: 31.310000000000002})["summary"]
			if !strings.Contains(got, "for 31s") {
				t.Errorf("%s, %s: %q, want the silence in whole seconds", path, p.Name, got)
			}
		}
		if !found {
			t.Errorf("%s: no nodata policy", path)
		}
	}
}
