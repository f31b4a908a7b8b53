package host

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/internal/metric"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixtureCollector returns a host collector reading testdata/<tick>/proc, a clock the
// test advances, and a statfs stand-in: statfs is the one figure not read from a file.
func fixtureCollector(t *testing.T, cfg *Config) (*Collector, *time.Time) {
	t.Helper()
	cfg.ProcRoot = abs(t, "testdata/t0/proc")
	cfg.SysRoot = abs(t, "testdata/sys")
	require.NoError(t, cfg.Validate())
	c, err := New(*cfg)
	require.NoError(t, err)
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	sizes := map[string]disk.UsageStat{
		// 5 GiB of / reserved for root: used 55, free 45, available to users 40.
		"/":     {Total: 100 << 30, Used: 55 << 30, Free: 40 << 30},
		"/data": {Total: 1 << 40, Used: 124 << 30, Free: 900 << 30},
	}
	c.usage = func(_ context.Context, path string) (*disk.UsageStat, error) {
		u, ok := sizes[path]
		if !ok {
			return nil, fmt.Errorf("statfs of unexpected mount %s", path)
		}
		return &u, nil
	}
	return c, &now
}

// hermetic keeps gopsutil away from the machine's own /dev, /run and /etc.
func hermetic(t *testing.T) context.Context {
	empty := abs(t, "testdata/empty")
	return context.WithValue(context.Background(), common.EnvKey, common.EnvMap{
		common.HostDevEnvKey: empty, common.HostRunEnvKey: empty, common.HostEtcEnvKey: empty,
	})
}

func TestHostGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		perCPU bool
	}{
		{"default", false},
		{"per_cpu", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PerCPU = tc.perCPU
			c, now := fixtureCollector(t, cfg)
			ctx := hermetic(t)

			first, err := c.Collect(ctx)
			require.NoError(t, err)
			golden(t, tc.name+"_tick0", first)

			*now = now.Add(10 * time.Second)
			c.env[common.HostProcEnvKey] = abs(t, "testdata/t1/proc")
			second, err := c.Collect(ctx)
			require.NoError(t, err)
			golden(t, tc.name+"_tick1", second)
			for _, p := range append(first, second...) {
				require.Contains(t, Points, p.Name, "a name the collector sends is in Points (its factory's Emits)")
			}
		})
	}
}

// TestHostFormulas checks the figures that matter against the fixture files themselves,
// so a wrong golden file cannot hide a wrong formula.
func TestHostFormulas(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PerCPU = true
	c, now := fixtureCollector(t, cfg)
	ctx := hermetic(t)
	first, err := c.Collect(ctx)
	require.NoError(t, err)
	*now = now.Add(10 * time.Second)
	c.env[common.HostProcEnvKey] = abs(t, "testdata/t1/proc")
	second, err := c.Collect(ctx)
	require.NoError(t, err)

	t.Run("memory uses MemAvailable", func(t *testing.T) {
		for i, pts := range [][]metric.Point{first, second} {
			mi := meminfo(t, fmt.Sprintf("testdata/t%d/proc/meminfo", i))
			want := (mi["MemTotal"] - mi["MemAvailable"]) / mi["MemTotal"] * 100
			require.InDelta(t, want, value(t, pts, metric.MemUsedPct, nil), 1e-9)
			// gopsutil's UsedPercent would be (Total-Free-Buffers-Cached)/Total: the
			// fixture makes it differ, so this would catch using it.
			gops := (mi["MemTotal"] - mi["MemFree"] - mi["Buffers"] - mi["Cached"]) / mi["MemTotal"] * 100
			require.NotEqual(t, gops, want)
			swap := (mi["SwapTotal"] - mi["SwapFree"]) / mi["SwapTotal"] * 100
			require.InDelta(t, swap, value(t, pts, SwapUsedPct, nil), 1e-9)
		}
	})
	t.Run("host.info names the boot", func(t *testing.T) {
		id, err := os.ReadFile("testdata/t1/proc/sys/kernel/random/boot_id")
		require.NoError(t, err)
		var got []map[string]string
		for _, p := range second {
			if p.Name == metric.HostInfo {
				require.Equal(t, 1.0, p.Value)
				got = append(got, p.Labels)
			}
		}
		require.Equal(t, []map[string]string{{"boot_id": strings.TrimSpace(string(id))}}, got)
	})
	t.Run("no rates on the first tick", func(t *testing.T) {
		for _, p := range first {
			require.NotContains(t, []string{metric.CPUUtil, metric.NetRxBps, metric.NetTxBps, DiskReadBps, DiskWriteBps}, p.Name)
		}
	})
	t.Run("cpu utilisation from jiffies", func(t *testing.T) {
		a, b := stat(t, "testdata/t0/proc/stat"), stat(t, "testdata/t1/proc/stat")
		for _, id := range []string{"", "0", "1"} {
			busy := func(f []float64) float64 { return f[0] + f[1] + f[2] + f[5] + f[6] + f[7] }
			total := func(f []float64) float64 { return busy(f) + f[3] + f[4] }
			want := (busy(b["cpu"+id]) - busy(a["cpu"+id])) / (total(b["cpu"+id]) - total(a["cpu"+id])) * 100
			var labels map[string]string
			if id != "" {
				labels = map[string]string{"cpu": id}
			}
			require.InDelta(t, want, value(t, second, metric.CPUUtil, labels), 1e-9, "cpu%s", id)
		}
	})
	t.Run("network rates per interface and total without lo", func(t *testing.T) {
		a, b := netdev(t, "testdata/t0/proc/net/dev"), netdev(t, "testdata/t1/proc/net/dev")
		var rx, tx float64
		for _, ifc := range []string{"eth0", "eth1"} {
			r := (b[ifc][0] - a[ifc][0]) / 10
			x := (b[ifc][1] - a[ifc][1]) / 10
			require.InDelta(t, r, value(t, second, metric.NetRxBps, map[string]string{"iface": ifc}), 1e-9)
			require.InDelta(t, x, value(t, second, metric.NetTxBps, map[string]string{"iface": ifc}), 1e-9)
			rx, tx = rx+r, tx+x
		}
		require.InDelta(t, rx, value(t, second, metric.NetRxBps, nil), 1e-9)
		require.InDelta(t, tx, value(t, second, metric.NetTxBps, nil), 1e-9)
		for _, p := range second {
			require.NotEqual(t, "lo", p.Labels["iface"])
		}
	})
	t.Run("disk usage per real mount only", func(t *testing.T) {
		var mounts []string
		for _, p := range second {
			if p.Name == metric.DiskUsedPct {
				mounts = append(mounts, p.Labels["mount"])
			}
		}
		require.ElementsMatch(t, []string{"/", "/data"}, mounts)
		// df's Use%: 55 / (55 + 40), not 60 % of the whole.
		require.InDelta(t, 100*55.0/95, value(t, second, metric.DiskUsedPct, map[string]string{"mount": "/"}), 1e-9)
	})
	t.Run("disk io from sectors of whole disks", func(t *testing.T) {
		// nvme0n1 read 20480 more sectors of 512 bytes in 10 s; the partition and
		// loop0 are skipped so the total is not counted twice.
		require.InDelta(t, 20480*512/10.0, value(t, second, DiskReadBps, map[string]string{"device": "nvme0n1"}), 1e-9)
		require.InDelta(t, 20480*512/10.0, value(t, second, DiskReadBps, nil), 1e-9)
		require.InDelta(t, 200.0, value(t, second, DiskReadIOPS, map[string]string{"device": "nvme0n1"}), 1e-9)
		for _, p := range second {
			require.NotContains(t, []string{"nvme0n1p1", "loop0"}, p.Labels["device"])
		}
	})
}

func TestHostPartialFailure(t *testing.T) {
	c, _ := fixtureCollector(t, DefaultConfig())
	c.usage = func(_ context.Context, path string) (*disk.UsageStat, error) {
		if path == "/data" {
			return nil, errors.New("stale file handle")
		}
		return &disk.UsageStat{Total: 100, Used: 50, Free: 50}, nil
	}
	pts, err := c.Collect(hermetic(t))
	require.ErrorContains(t, err, "statfs /data: stale file handle")
	// A part the host goes without: the agent keeps the collector up (one private mount
	// made the host look unmeasured: an outside trial).
	var partial *collector.Partial
	require.ErrorAs(t, err, &partial)
	// The rest of the tick is still there.
	require.InDelta(t, 50.0, value(t, pts, metric.DiskUsedPct, map[string]string{"mount": "/"}), 1e-9)
	require.InDelta(t, 75.0, value(t, pts, metric.MemUsedPct, nil), 1e-9)

	// No mount readable: no partial collection, a failure.
	c.usage = func(context.Context, string) (*disk.UsageStat, error) { return nil, errors.New("stale file handle") }
	_, err = c.Collect(hermetic(t))
	require.Error(t, err)
	require.False(t, errors.As(err, &partial), "every mount failed: %v", err)
}

func TestHostMissingProc(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ProcRoot = t.TempDir()
	c, err := New(*cfg)
	require.NoError(t, err)
	pts, err := c.Collect(hermetic(t))
	require.Error(t, err)
	require.Contains(t, err.Error(), "meminfo")
	require.Contains(t, err.Error(), "cpu times")
	// load averages may still come from sysinfo(2), gopsutil's fallback, which is the
	// same kernel-wide figure; nothing read from the missing files may appear.
	for _, p := range pts {
		require.Contains(t, []string{metric.Load1, metric.Load5, Load15}, p.Name)
	}
}

func TestHostConfigErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MountIgnore = "("
	err := cfg.Validate()
	require.ErrorContains(t, err, "mount_ignore")
	_, err = New(*cfg)
	require.ErrorContains(t, err, "mount_ignore")
}

func TestHostRegistered(t *testing.T) {
	f, err := collector.Lookup(Name)
	require.NoError(t, err)
	cfg := f.Config().(*Config)
	require.Equal(t, defaultNetSkip, cfg.NetIgnore)
	require.NoError(t, cfg.Validate())
	c, err := f.New(cfg, collector.Env{})
	require.NoError(t, err)
	require.Equal(t, Name, c.Name())
}

// TestHostLive reads the machine's real /proc: it must produce the core names. cpu.util
// needs two samples at least a jiffy apart, so it collects until the clock has moved.
func TestHostLive(t *testing.T) {
	c, err := New(*DefaultConfig())
	require.NoError(t, err)
	_, err = c.Collect(context.Background())
	require.NoError(t, err)
	deadline := time.Now().Add(5 * time.Second)
	for {
		pts, err := c.Collect(context.Background())
		require.NoError(t, err)
		names := map[string]bool{}
		for _, p := range pts {
			names[p.Name] = true
		}
		if names[metric.CPUUtil] || time.Now().After(deadline) {
			for _, n := range []string{metric.CPUUtil, metric.Load1, metric.Load5, metric.MemUsedPct} {
				require.True(t, names[n], "missing %s in %v", n, pts)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func golden(t *testing.T, name string, pts []metric.Point) {
	t.Helper()
	sort.Slice(pts, func(i, j int) bool { return key(pts[i]) < key(pts[j]) })
	got, err := json.MarshalIndent(pts, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got))
}

func key(p metric.Point) string {
	ks := make([]string, 0, len(p.Labels))
	for k, v := range p.Labels {
		ks = append(ks, k+"="+v)
	}
	sort.Strings(ks)
	return p.Name + "{" + strings.Join(ks, ",") + "}"
}

func value(t *testing.T, pts []metric.Point, name string, labels map[string]string) float64 {
	t.Helper()
	want := key(metric.Point{Name: name, Labels: labels})
	for _, p := range pts {
		if key(p) == want {
			return p.Value
		}
	}
	t.Fatalf("no point %s", want)
	return 0
}

func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

func meminfo(t *testing.T, path string) map[string]float64 {
	out := map[string]float64{}
	for _, f := range fields(t, path) {
		if len(f) >= 2 {
			v, err := strconv.ParseFloat(f[1], 64)
			require.NoError(t, err)
			out[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	return out
}

func stat(t *testing.T, path string) map[string][]float64 {
	out := map[string][]float64{}
	for _, f := range fields(t, path) {
		if strings.HasPrefix(f[0], "cpu") {
			out[f[0]] = floats(t, f[1:9])
		}
	}
	return out
}

// netdev returns rx and tx bytes per interface.
func netdev(t *testing.T, path string) map[string][2]float64 {
	out := map[string][2]float64{}
	for _, f := range fields(t, path)[2:] {
		v := floats(t, f[1:])
		out[strings.TrimSuffix(f[0], ":")] = [2]float64{v[0], v[8]}
	}
	return out
}

func fields(t *testing.T, path string) [][]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out [][]string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, strings.Fields(s.Text()))
	}
	return out
}

func floats(t *testing.T, s []string) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		var err error
		out[i], err = strconv.ParseFloat(v, 64)
		require.NoError(t, err)
	}
	return out
}

// TestNetCountersOfTheHostsNamespace: under a proc_root (the host's /proc in a container),
// the network counters are PID 1's, the host's namespace, not <proc_root>/net/dev, a link
// to the reader's own: a containerised agent in its own network namespace sent no network
// figure of the host (an outside trial). Without PID 1's, the root's.
func TestNetCountersOfTheHostsNamespace(t *testing.T) {
	root := t.TempDir()
	dev := func(iface string) string {
		return "Inter-|   Receive                                                |  Transmit\n" +
			" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
			"  " + iface + ": 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
	}
	for path, body := range map[string]string{"net/dev": dev("agentns0"), "1/net/dev": dev("hosteth0")} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, path), []byte(body), 0o644))
	}
	names := func() []string {
		c, err := New(Config{ProcRoot: root})
		require.NoError(t, err)
		cs, err := c.netCounters(c.withEnv(hermetic(t)))
		require.NoError(t, err)
		var out []string
		for _, n := range cs {
			out = append(out, n.Name)
		}
		return out
	}
	require.Equal(t, []string{"hosteth0"}, names())
	require.NoError(t, os.RemoveAll(filepath.Join(root, "1")))
	require.Equal(t, []string{"agentns0"}, names(), "without PID 1's, the root's")
}
