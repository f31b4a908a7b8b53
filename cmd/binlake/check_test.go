//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
)

// TestCheckRefusesWhatStartRefuses: each config below passed --check while the role then
// refused to start on it (issue 33). --check and start run the same checks, so both must
// return the same error, naming the file, the key's line and the key. Every case fails
// before the role connects anywhere, so start is safe to run here.
func TestCheckRefusesWhatStartRefuses(t *testing.T) {
	t.Chdir(t.TempDir()) // a start that went further would write ./data here
	for _, tc := range []struct {
		name, role, yaml, want string
	}{
		{"judge elastic prefix", "judge", "bus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n    addresses: [http://127.0.0.1:1]\n    prefix: nc-prod-metrics\n",
			`judge.yaml:6: field "store.elastic.prefix": "nc-prod-metrics": must end in '-' or '.' ` +
				`(the daily indices are <prefix>YYYY.MM.DD, and the pattern nc-prod-metrics* must match only them); e.g. "nc-prod-metrics-"`},
		{"judge listen port", "judge", "bus: {kind: none}\nhttp:\n  listen: 127.0.0.1:80911\n",
			`judge.yaml:3: field "http.listen": "127.0.0.1:80911": port "80911": want a number from 0 to 65535 (0 picks a free one)`},
		{"alarm listen port", "alarm", "bus: {kind: none}\nchannels: {l: {kind: log}}\nhttp: {listen: \":70000\"}\n",
			`alarm.yaml:3: field "http.listen": ":70000": port "70000": want a number from 0 to 65535 (0 picks a free one)`},
		{"wave zookeeper root", "wave", "node: w1\ncoordinator:\n  kind: zk\n  servers: [127.0.0.1:1]\n  root: binlake\nsink: {kind: stdout}\n",
			`wave.yaml:5: field "coordinator.root": "binlake": must start with a slash, e.g. "/binlake"`},
		{"wave zookeeper server port", "wave", "node: w1\ncoordinator:\n  kind: zk\n  servers:\n    - 127.0.0.1:1\n    - 127.0.0.1:218100\nsink: {kind: stdout}\n",
			`wave.yaml:6: field "coordinator.servers[1]": "127.0.0.1:218100": port "218100": want a number from 1 to 65535`},
		{"wave advertise address without a port", "wave", "node: w1\nadvertise_addr: wave-1\ncoordinator: {kind: single, path: c.json}\nsink: {kind: stdout}\n",
			`wave.yaml:2: field "advertise_addr": "wave-1": want host:port, e.g. wave-1:8091 (the address other hosts reach http.listen at)`},
		{"agent listen port", "agent", "node: h1\nhttp:\n  listen: 127.0.0.1:80911\nsink: {kind: http, http: {url: http://127.0.0.1:1/v1/metrics}}\n",
			`agent.yaml:3: field "http.listen": "127.0.0.1:80911": port "80911": want a number from 0 to 65535 (0 picks a free one), or "off"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, tc.role+".yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.yaml), 0o600))
			args := []string{tc.role, "--config", cfg}
			if tc.role == "alarm" {
				pol := filepath.Join(dir, "policies.yaml")
				require.NoError(t, os.WriteFile(pol, []byte("policies:\n  - {name: dead, nodata: 3, severity: P1, channels: [l]}\n"), 0o600))
				args = append(args, "--policies", pol)
			}
			var out, errOut bytes.Buffer
			err := run(context.Background(), append(args, "--check"), &out, &errOut)
			require.EqualError(t, err, filepath.Join(dir, tc.want), "--check; stdout %q", out.String())
			require.Empty(t, out.String())

			ctx, cancel := context.WithCancel(context.Background())
			cancel() // start must refuse before it waits on anything
			err = run(ctx, args, &out, &errOut)
			require.EqualError(t, err, filepath.Join(dir, tc.want), "start")
		})
	}
}

// TestCheckReportsEveryRefusedValue: --check of a config with several bad values names
// every one at once, in the file's order, each with the file, its line and its key (the
// first line as it was when --check stopped at the first); start refuses it alike.
func TestCheckReportsEveryRefusedValue(t *testing.T) {
	t.Chdir(t.TempDir()) // a start that went further would write ./data here
	for _, tc := range []struct {
		role, yaml string
		want       []string // after "<role>.yaml", in order
	}{
		{"judge", "bus: {kind: none}\nstore:\n  retention: -1h\nanalysis:\n  ewma_alpha: 2\nplacement:\n  algorithm: roundrobin\n", []string{
			`:3: field "store.retention": -1h0m0s: want 0 or more`,
			`:5: field "analysis.ewma_alpha": 2: want 0 < alpha ≤ 1 (0 or none: 0.2)`,
			`:7: field "placement.algorithm": unknown algorithm "roundrobin" (known: balanced, leastload, p2c, predictive, random, utilisation)`,
		}},
		{"alarm", "http:\n  external_url: ftp://alarm\nbus: {kind: none}\nnotify:\n  queue: -1\nchannels: {l: {kind: log}}\n", []string{
			`:2: field "http.external_url": "ftp://alarm": want an http:// or https:// URL with a host`,
			`:5: field "notify.queue": -1: want 0 or more (0 takes the default)`,
		}},
		{"wave", "node: \"wave 1\"\ncoordinator: {kind: single, path: c.json}\nsink: {kind: stdout}\npipeline:\n  batch_rows: 0\nbalancer:\n  judge: judge:8090\n", []string{
			`:1: field "node": "wave 1": want 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit`,
			`:5: field "pipeline.batch_rows": 0: want at least 1`,
			`:7: field "balancer.judge": "judge:8090": want the judge's base URL, such as http://judge:8090`,
		}},
		{"agent", "node: h1\ninterval: 1ms\nsink: {kind: http, http: {url: http://127.0.0.1:1/v1/metrics}}\ncollectors:\n  host:\n    net_ignore: \"(\"\n", []string{
			`:2: field "interval": 1ms: want between 10ms and 24h`,
			":6: field \"collectors.host.net_ignore\": error parsing regexp: missing closing ): `(`",
		}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, tc.role+".yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.yaml), 0o600))
			args := []string{tc.role, "--config", cfg}
			if tc.role == "alarm" {
				pol := filepath.Join(dir, "policies.yaml")
				require.NoError(t, os.WriteFile(pol, []byte("policies:\n  - {name: dead, nodata: 3, severity: P1, channels: [l]}\n"), 0o600))
				args = append(args, "--policies", pol)
			}
			want := cfg + strings.Join(tc.want, "\n"+cfg)
			var out, errOut bytes.Buffer
			err := run(context.Background(), append(args, "--check"), &out, &errOut)
			require.EqualError(t, err, want, "--check")
			require.Empty(t, out.String())

			ctx, cancel := context.WithCancel(context.Background())
			cancel() // start must refuse before it waits on anything
			require.EqualError(t, run(ctx, args, &out, &errOut), want, "start")
		})
	}
}

// A token variable the config names but the process lacks leaves the API open: said,
// as a warning; the role's own variable unset is the usual open API, said by auth=false.
func TestWarnOpenAPI(t *testing.T) {
	for _, tc := range []struct {
		env   string
		token config.Secret
		warn  bool
	}{
		{"NOPE_NOT_SET", "", true},
		{"BINLAKE_ALARM_TOKEN", "", false},
		{"NOPE_NOT_SET", "s3cret", false},
	} {
		var logs bytes.Buffer
		warnOpenAPI(slog.New(slog.NewTextHandler(&logs, nil)), config.HTTP{TokenEnv: tc.env}, "BINLAKE_ALARM_TOKEN", tc.token)
		if got := strings.Contains(logs.String(), "http.token_env names NOPE_NOT_SET, which") && strings.Contains(logs.String(), "open"); got != tc.warn {
			t.Errorf("env %s, token set %v: warned %v, want %v: %s", tc.env, tc.token != "", got, tc.warn, logs.String())
		}
	}
}

// A placement threshold on a metric nothing sends (a typo) is a warning naming the
// closest known name, at start and with -check; a known one is not.
func TestWarnUnknownThresholds(t *testing.T) {
	var logs bytes.Buffer
	warnUnknownThresholds(slog.New(slog.NewTextHandler(&logs, nil)), map[string]float64{"cpu.utl": 90, "mem.used_pct": 95})
	require.Contains(t, logs.String(), `placement.thresholds.cpu.utl: \"cpu.utl\" is not a canonical metric or one the agents' collectors send: the threshold filters nothing; did you mean cpu.util?`)
	require.NotContains(t, logs.String(), "mem.used_pct")
}

// A password written inline for the bus's SASL or the coordinator's auth is refused
// with the guidance every role gives for an inline secret, and is never echoed.
func TestInlineBusSecretsAreRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	const never = "a secret is never inline: put it in a file named by password_file, or in a variable named by password_env"
	sasl := "sasl: {mechanism: plain, username: u, password: s3cret}"
	for _, tc := range []struct{ role, yaml, field string }{
		{"judge", "bus: {kind: kafka, brokers: [127.0.0.1:9092], " + sasl + "}\n", "bus.sasl.password"},
		{"alarm", "bus: {kind: kafka, brokers: [127.0.0.1:9092], " + sasl + "}\nchannels: {l: {kind: log}}\n", "bus.sasl.password"},
		{"alarm", "bus: {kind: none}\ncoordinator: {kind: zk, servers: [127.0.0.1:2181], auth: {username: u, password: s3cret}}\nchannels: {l: {kind: log}}\n", "coordinator.auth.password"},
		{"agent", "node: h1\nsink: {kind: kafka, kafka: {brokers: [127.0.0.1:9092], " + sasl + "}}\n", "sink.kafka.sasl.password"},
	} {
		t.Run(tc.role+" "+tc.field, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), tc.role+".yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.yaml), 0o600))
			args := []string{tc.role, "--config", cfg, "--check"}
			if tc.role == "alarm" {
				pol := filepath.Join(t.TempDir(), "policies.yaml")
				require.NoError(t, os.WriteFile(pol, []byte("policies:\n  - {name: dead, nodata: 3, severity: P1, channels: [l]}\n"), 0o600))
				args = append(args, "--policies", pol)
			}
			var out, errOut bytes.Buffer
			err := run(context.Background(), args, &out, &errOut)
			require.Error(t, err)
			require.Contains(t, err.Error(), `field "`+tc.field+`": `+never)
			require.NotContains(t, err.Error()+errOut.String(), "s3cret")
		})
	}
}

// A ZooKeeper root without its slash comes with the file's other problems, in one run:
// it came in a run of its own once those were fixed (an outside trial).
func TestCheckSaysTheRootWithTheOtherProblems(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "wave.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("node: w1\ncoordinator:\n  kind: zk\n  servers: [127.0.0.1:1]\n  root: binlake\nsink: {kind: stdout}\npipeline: {batch_rows: -1}\n"), 0o600))
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"wave", "--config", cfg, "--check"}, &out, &errOut)
	require.EqualError(t, err, cfg+`:5: field "coordinator.root": "binlake": must start with a slash, e.g. "/binlake"`+"\n"+
		cfg+`:7: field "pipeline.batch_rows": -1: want at least 1`)
}

// `agent --interval 0s` is the interval given, which the agent refuses as the config's
// own 0s; it was taken for no flag, and the config's 10s ran without a word (an outside
// trial).
func TestAgentIntervalFlagZeroIsRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("node: h1\ninterval: 10s\nsink: {kind: http, http: {url: http://127.0.0.1:1/v1/metrics}}\n"), 0o600))
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"agent", "--check", "--config", cfg, "--interval", "0s"}, &out, &errOut)
	require.EqualError(t, err, `flags: field "interval": 0s: want between 10ms and 24h`)
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"agent", "--check", "--config", cfg, "--interval", "5s"}, &out, &errOut))
	require.Contains(t, out.String(), "interval 5s")
}
