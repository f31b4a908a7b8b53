package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge/store"
)

func TestExampleConfig(t *testing.T) {
	c, err := Load("../deploy/judge.example.yaml")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8090", c.HTTP.Listen)
	require.Equal(t, BusKafka, c.Bus.Kind)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, host, c.Node)
	require.Equal(t, "binlake-judge-"+host, c.Bus.Group, "one stable group per judge")
	require.Equal(t, config.StartOldest, c.Bus.Start)
	require.Equal(t, StoreSQLite, c.Store.Kind)
	require.Equal(t, store.BufferOptions{Capacity: 100_000, MaxBatch: 5000, Overflow: store.OverflowReject, MinBackoff: 100 * time.Millisecond,
		MaxBackoff: 10 * time.Second, WriteTimeout: 30 * time.Second, CloseTimeout: 10 * time.Second}, c.Store.Buffer.Options())
	require.Equal(t, "utilisation", c.Placement.Algorithm, "the installed judge places by load (without the key: random)")
	require.Equal(t, config.Duration(720*time.Hour), c.Store.Retention, "the installed SQLite store does not grow for ever")
	require.Equal(t, config.Duration(DefaultCapacityEvery), c.Placement.CapacityEvery)
	require.Equal(t, 90.0, c.Filters().Thresholds["cpu.util"])
	require.Equal(t, 3.0, c.Placement.Plugins["leastload"].Weights["cpu"])
	require.Equal(t, 1.0, *c.Placement.Plugins["predictive"].K)
	require.Equal(t, DefaultRebalanceOptions(), c.Rebalance.Options(), "the example shows the defaults")
	// The example is usable as it is.
	j, err := New(Options{Store: openStore(t), Algorithm: c.Placement.Algorithm, Filters: c.Filters(), Plugins: c.Placement.Plugins,
		Buffer: c.Store.Buffer.Options(), Rebalance: new(c.Rebalance.Options()), Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

// TestConfigGroupFromNode: the default group follows the node name, so a restarted
// judge keeps its group; drop is an explicit choice.
func TestConfigGroupFromNode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "judge.yaml")
	require.NoError(t, os.WriteFile(p, []byte("node: judge-7\nbus: {brokers: [\"k:9092\"]}\nstore: {buffer: {http_overflow: drop}}\n"), 0o600))
	c, err := Load(p)
	require.NoError(t, err)
	require.Equal(t, "binlake-judge-judge-7", c.Bus.Group)
	require.Equal(t, store.OverflowDrop, c.Store.Buffer.Options().Overflow)
}

// TestConfigRebalance: unset keys take the defaults; 0 is a setting where it means
// something (no hard threshold, no band, free idle instances, no cooldown).
func TestConfigRebalance(t *testing.T) {
	def := DefaultRebalanceOptions()
	require.Equal(t, RebalanceOptions{MaxUtilisation: 0.7, UtilisationBand: 0.03, FitWindow: 6 * time.Hour,
		HardMax: 0, Band: 2000, InstanceFloor: 100, MaxMoves: 20, Cooldown: 10 * time.Minute}, def)
	for _, tc := range []struct {
		name, yaml string
		want       RebalanceOptions
	}{
		{"absent", "", def},
		{"empty", "rebalance: {}\n", def},
		{"some", "rebalance: {hard_max: 50000, max_moves: 5}\n", RebalanceOptions{MaxUtilisation: 0.7, UtilisationBand: 0.03, FitWindow: 6 * time.Hour,
			HardMax: 50000, Band: 2000, InstanceFloor: 100, MaxMoves: 5, Cooldown: 10 * time.Minute}},
		{"zeros are settings", "rebalance: {max_utilisation: 0, utilisation_band: 0, band: 0, instance_floor: 0, cooldown: 0s}\n",
			RebalanceOptions{FitWindow: 6 * time.Hour, MaxMoves: 20}},
		{"all", "rebalance: {max_utilisation: 0.8, utilisation_band: 0.1, fit_window: 2h, hard_max: 9000, band: 500.5, instance_floor: 10, max_moves: 3, cooldown: 1h}\n",
			RebalanceOptions{MaxUtilisation: 0.8, UtilisationBand: 0.1, FitWindow: 2 * time.Hour, HardMax: 9000, Band: 500.5, InstanceFloor: 10, MaxMoves: 3, Cooldown: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "judge.yaml")
			require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\n"+tc.yaml), 0o600))
			c, err := Load(p)
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Rebalance.Options())
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "bus: {kind: none}\nplacment: {}\n", `unknown key "placment"`},
		{"unknown algorithm", "bus: {kind: none}\nplacement: {algorithm: roundrobin}\n", `judge.yaml:2: field "placement.algorithm": unknown algorithm "roundrobin" (known: balanced, leastload, p2c, predictive, random, utilisation)`},
		{"bad weight", "bus: {kind: none}\nplacement: {plugins: {leastload: {weights: {gpu: 1}}}}\n", `judge.yaml:2: field "placement.plugins.leastload": plugin leastload: unknown weight "gpu"`},
		{"unknown plugin settings", "bus: {kind: none}\nplacement: {plugins: {fastest: {}}}\n", `judge.yaml:2: field "placement.plugins.fastest": unknown algorithm "fastest"`},
		{"kafka without brokers", "bus: {kind: kafka}\n", `judge.yaml:1: field "bus.brokers": required: at least one host:port`},
		{"bad bus", "bus: {kind: rabbit}\n", `judge.yaml:1: field "bus.kind": "rabbit": want kafka or none`},
		{"elastic without addresses", "bus: {kind: none}\nstore: {kind: elastic}\n", `judge.yaml:2: field "store.elastic.addresses": required: at least one URL`},
		{"bad listen", "bus: {kind: none}\nhttp: {listen: 8090}\n", `judge.yaml:2: field "http.listen": "8090": want host:port`},
		{"bare duration", "bus: {kind: none}\nanalysis: {historical_every: 600}\n", `invalid duration "600"`},
		{"bad alpha", "bus: {kind: none}\nanalysis: {ewma_alpha: 2}\n", `judge.yaml:2: field "analysis.ewma_alpha": 2: want 0 < alpha ≤ 1`},
		{"old store queue", "bus: {kind: none}\nstore: {queue: 1024}\n", `judge.yaml:2: unknown key "store.queue"`},
		{"bad http_overflow", "bus: {kind: none}\nstore: {buffer: {http_overflow: oldest}}\n", `judge.yaml:2: field "store.buffer.http_overflow": "oldest": want reject or drop`},
		{"bad start", "bus: {kind: kafka, brokers: [\"k:9092\"], start: latest}\n", `judge.yaml:1: field "bus.start": "latest": want oldest or newest`},
		{"negative capacity", "bus: {kind: none}\nstore: {buffer: {capacity: -1}}\n", `judge.yaml:2: field "store.buffer.capacity": -1: want 0 or more (0 takes the default)`},
		{"negative backoff", "bus: {kind: none}\nstore: {buffer: {min_backoff: -1s}}\n", `judge.yaml:2: field "store.buffer.min_backoff": -1s: want 0 or more`},
		{"max below min", "bus: {kind: none}\nstore: {buffer: {min_backoff: 2s, max_backoff: 1s}}\n", `judge.yaml:2: field "store.buffer.max_backoff": 1s: want at least min_backoff, 2s`},
		{"max below default min", "bus: {kind: none}\nstore: {buffer: {max_backoff: 50ms}}\n", `judge.yaml:2: field "store.buffer.max_backoff": 50ms: want at least min_backoff, 100ms`},
		{"utilisation above 1", "bus: {kind: none}\nrebalance: {max_utilisation: 70}\n", `judge.yaml:2: field "rebalance.max_utilisation": 70: want a share of the host's cores from 0 to 1 (0.7 for 70 %)`},
		{"short fit window", "bus: {kind: none}\nrebalance: {fit_window: 1m}\n", `judge.yaml:2: field "rebalance.fit_window": 1m0s: want at least 10m`},
		{"bad threshold name", "bus: {kind: none}\nplacement: {thresholds: {\"cpu util\": 90}}\n", `judge.yaml:2: field "placement.thresholds.cpu util": "cpu util" is not a metric name`},
		{"negative snapshot_every", "bus: {kind: none}\nplacement: {snapshot_every: -1s}\n", `judge.yaml:2: field "placement.snapshot_every": -1s: want at most 1m (200ms when unset)`},
		{"long snapshot_every", "bus: {kind: none}\nplacement: {snapshot_every: 2m}\n", `judge.yaml:2: field "placement.snapshot_every": 2m0s: want at most 1m (200ms when unset)`},
		{"negative capacity_every", "bus: {kind: none}\nplacement: {capacity_every: -1s}\n", `judge.yaml:2: field "placement.capacity_every": -1s: want at most 5m (5s when unset)`},
		{"long capacity_every", "bus: {kind: none}\nplacement: {capacity_every: 6m}\n", `judge.yaml:2: field "placement.capacity_every": 6m0s: want at most 5m (5s when unset)`},
		{"short reservation_ttl", "bus: {kind: none}\nplacement: {reservation_ttl: 10ms}\n", `judge.yaml:2: field "placement.reservation_ttl": 10ms: want at least 1s`},
		{"negative hard_max", "bus: {kind: none}\nrebalance: {hard_max: -1}\n", `judge.yaml:2: field "rebalance.hard_max": -1: want a finite number ≥ 0 (rows/s)`},
		{"negative band", "bus: {kind: none}\nrebalance: {band: -5}\n", `judge.yaml:2: field "rebalance.band": -5: want a finite number ≥ 0 (rows/s)`},
		{"NaN band", "bus: {kind: none}\nrebalance: {band: .nan}\n", `judge.yaml:2: field "rebalance.band": NaN: want a finite number ≥ 0 (rows/s)`},
		{"infinite hard_max", "bus: {kind: none}\nrebalance: {hard_max: .inf}\n", `judge.yaml:2: field "rebalance.hard_max": +Inf: want a finite number ≥ 0 (rows/s)`},
		{"negative instance_floor", "bus: {kind: none}\nrebalance: {instance_floor: -0.5}\n", `judge.yaml:2: field "rebalance.instance_floor": -0.5: want a finite number ≥ 0 (rows/s)`},
		{"negative max_moves", "bus: {kind: none}\nrebalance: {max_moves: -2}\n", `judge.yaml:2: field "rebalance.max_moves": -2: want at least 1`},
		{"negative cooldown", "bus: {kind: none}\nrebalance: {cooldown: -1m}\n", `judge.yaml:2: field "rebalance.cooldown": -1m0s: want 0 or more`},
		{"bare cooldown", "bus: {kind: none}\nrebalance: {cooldown: 600}\n", `invalid duration "600"`},
		{"unknown rebalance key", "bus: {kind: none}\nrebalance: {floor: 100}\n", `unknown key "rebalance.floor"`},
		{"string band", "bus: {kind: none}\nrebalance: {band: wide}\n", `rebalance.band`},
		{"alarm url without scheme", "bus: {kind: none}\nstatus: {alarm_url: \"alarm:8092\"}\n", `judge.yaml:2: field "status.alarm_url": "alarm:8092": want the alarm's base URL`},
		{"alarm CA file", "bus: {kind: none}\nstatus: {alarm_url: https://a:1, tls: {ca_file: /nonexistent/ca.pem}}\n", `judge.yaml:2: field "status.tls.ca_file": open /nonexistent/ca.pem`},
		{"alarm TLS over http", "bus: {kind: none}\nstatus: {alarm_url: http://a:1, tls: {}}\n", `judge.yaml:2: field "status.tls": set, but the URL is not https://`},
		{"alarm url with credentials", "bus: {kind: none}\nstatus: {alarm_url: \"http://u:p@alarm:8092\"}\n", `judge.yaml:2: field "status.alarm_url": credentials in the URL are refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "judge.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tc.yaml), 0o600))
			_, err := Load(p)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestConfigReportsEveryRefusedValue: every value Validate refuses is reported at once,
// in the file's order, each at its line and key: not the first alone, to fix and run
// again. A value that can only be checked against a refused one is left out.
func TestConfigReportsEveryRefusedValue(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name, yaml string
		want       []string // after "judge.yaml", in order; nil: valid
	}{
		{"valid", "node: j1\nbus: {kind: none}\nstore: {retention: 24h}\nanalysis: {ewma_alpha: 0.5}\nplacement: {algorithm: leastload}\n", nil},
		{"four sections", "node: j1\nbus: {kind: none}\nstore:\n  retention: -1h\nanalysis:\n  ewma_alpha: 2\nplacement:\n  algorithm: roundrobin\nrebalance:\n  max_moves: -2\n", []string{
			`:4: field "store.retention": -1h0m0s: want 0 or more`,
			`:6: field "analysis.ewma_alpha": 2: want 0 < alpha ≤ 1 (0 or none: 0.2)`,
			`:8: field "placement.algorithm": unknown algorithm "roundrobin" (known: balanced, leastload, p2c, predictive, random, utilisation)`,
			`:10: field "rebalance.max_moves": -2: want at least 1`,
		}},
		{"within sections", "node: j1\nhttp: {listen: 8090, token_env: \"1X\"}\nbus: {kind: none}\nremote_write: {node_label: a.b, unmapped: store}\n" +
			"store:\n  buffer: {capacity: -1, min_backoff: -1s, max_backoff: 50ms}\nplacement:\n  thresholds: {\"cpu util\": 90, \"mem util\": 80}\n" +
			"rebalance: {band: -1, max_utilisation: .inf}\n", []string{
			`:2: field "http.listen": "8090": want host:port, e.g. 127.0.0.1:8090 (port 0 picks a free one)`,
			`:2: field "http.token_env": "1X" is not an environment variable name`,
			`:4: field "remote_write.node_label": "a.b": want a label name`,
			`:4: field "remote_write.unmapped": "store": want drop or keep`,
			// Not max_backoff against a min_backoff that is refused.
			`:6: field "store.buffer.capacity": -1: want 0 or more (0 takes the default)`,
			`:6: field "store.buffer.min_backoff": -1s: want 0 or more (0 takes the default)`,
			`:8: field "placement.thresholds.cpu util": "cpu util" is not a metric name`,
			`:8: field "placement.thresholds.mem util": "mem util" is not a metric name`,
			// +Inf once, as not finite, not also as above 1.
			`:9: field "rebalance.band": -1: want a finite number ≥ 0 (rows/s)`,
			`:9: field "rebalance.max_utilisation": +Inf: want a finite number ≥ 0 (a share of the cores, 0.7 for 70 %)`,
		}},
		{"elastic", "node: j1\nbus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n    addresses: [\"es:9200\", \"http://u:p@es:9200\"]\n" +
			"    tls: {ca_file: " + missing + "}\n    replicas: -1\n    api_key_env: \"1X\"\nstatus: {alarm_url: \"alarm:8092\", tls: {}}\n", []string{
			`:6: field "store.elastic.addresses[0]": "es:9200": want http://host:port or https://host:port`,
			`:6: field "store.elastic.addresses[1]": credentials in the URL would be logged: use username and password_file, or api_key_file`,
			// Its file, not "the URL is not https://": the addresses are refused.
			`:7: field "store.elastic.tls.ca_file": open ` + missing + `: no such file or directory`,
			`:8: field "store.elastic.replicas": -1: want 0 or more`,
			`:9: field "store.elastic.api_key_env": "1X" is not an environment variable name`,
			`:10: field "status.alarm_url": "alarm:8092": want the alarm's base URL, such as http://alarm:8092`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "judge.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tc.yaml), 0o600))
			_, err := Load(p)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, p+strings.Join(tc.want, "\n"+p))
		})
	}
}

// TestNewRejectsRebalance: options given in code are checked as the config is.
func TestNewRejectsRebalance(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    RebalanceOptions
		want string
	}{
		{"negative band", RebalanceOptions{Band: -1, MaxMoves: 1}, `judge: field "rebalance.band": -1: want a finite number ≥ 0 (rows/s)`},
		{"no moves", RebalanceOptions{Band: 10}, `judge: field "rebalance.max_moves": 0: want at least 1`},
		{"negative cooldown", RebalanceOptions{MaxMoves: 1, Cooldown: -time.Second}, `judge: field "rebalance.cooldown": -1s: want 0 or more`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Store: openStore(t), Rebalance: &tc.o, Logger: quiet})
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestRemoteWriteConfig(t *testing.T) {
	for _, c := range []struct {
		yaml, err string
		want      RemoteWriteConfig
	}{
		{"", "", RemoteWriteConfig{NodeLabel: "instance", Unmapped: "drop"}},
		{"remote_write: {node_label: host, unmapped: keep}", "", RemoteWriteConfig{NodeLabel: "host", Unmapped: "keep"}},
		{"remote_write: {unmapped: store}", `field "remote_write.unmapped": "store": want drop or keep`, RemoteWriteConfig{}},
		{"remote_write: {node_label: host.name}", `field "remote_write.node_label": "host.name": want a label name`, RemoteWriteConfig{}},
	} {
		t.Run(c.yaml, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "judge.yaml")
			require.NoError(t, os.WriteFile(path, []byte("bus: {kind: none}\n"+c.yaml+"\n"), 0o600))
			cfg, err := Load(path)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, cfg.RemoteWrite)
		})
	}
}
