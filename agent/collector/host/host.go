// Package host collects the machine's own figures through gopsutil v4: CPU utilisation
// (total and, if asked, per core), load averages, memory and swap, per-interface and total
// network rates, per-mount disk usage and per-device disk I/O rates.
//
// Rates (cpu.util, net.*_bps, disk.*_bps, disk.*_iops) are computed between two ticks from
// the kernel's counters, so the first tick after start emits none of them. Units:
//
//	cpu.util{cpu}            percent of all cores (0-100); with per_cpu, one point per core
//	cpu.cores                the logical cores (/proc/cpuinfo, else /proc/stat's cpuN lines)
//	host.info{boot_id}       1, labelled with /proc/sys/kernel/random/boot_id: which host's
//	                         cores a wave shares with the waves beside it
//	load.1 load.5 load.15    run-queue averages, as in /proc/loadavg
//	mem.used_pct             (MemTotal - MemAvailable) / MemTotal * 100
//	mem.total_bytes mem.available_bytes
//	swap.used_pct swap.used_bytes   from SwapTotal/SwapFree (0 when there is no swap)
//	net.rx_bps net.tx_bps    bytes per second; {iface} per interface, unlabelled = sum of them
//	disk.used_pct{mount}     Used / (Used + Available) * 100 of the file system, as df's Use%
//	disk.read_bps disk.write_bps disk.read_iops disk.write_iops
//	                         {device} per block device, unlabelled = sum of them
//
// Every file is read through gopsutil's context environment (common.EnvMap), so proc_root
// and sys_root point the collector at another tree: a host's /proc mounted into a container,
// or the fixtures under testdata.
package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"

	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/internal/metric"
)

// Name is the registry name.
const Name = "host"

// Point names beyond the canonical ones in internal/metric.
const (
	Load15         = metric.Load15
	MemTotalBytes  = "mem.total_bytes"
	MemAvailBytes  = "mem.available_bytes"
	SwapUsedPct    = "swap.used_pct"
	SwapUsedBytes  = "swap.used_bytes"
	DiskReadBps    = "disk.read_bps"
	DiskWriteBps   = "disk.write_bps"
	DiskReadIOPS   = "disk.read_iops"
	DiskWriteIOPS  = "disk.write_iops"
	defaultNetSkip = `^lo$`
	// As node_exporter's diskstats collector: partitions and virtual devices would
	// count the same bytes twice in the unlabelled sum.
	defaultDiskSkip = `^(z?ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\d+n\d+p)\d+$|^dm-\d+$`
	// As node_exporter's filesystem collector, plus tmpfs (memory, not disk), minus
	// overlay (a container's root file system is overlay and is the disk that matters).
	defaultFSTypeSkip = `^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs|iso9660|mqueue|nsfs|proc|procfs|pstore|ramfs|rpc_pipefs|securityfs|selinuxfs|squashfs|erofs|sysfs|tracefs|tmpfs|nfsd|fuse\..*)$`
	defaultMountSkip  = `^/(dev|proc|run/credentials/.+|sys|var/lib/docker/.+|var/lib/containers/storage/.+|var/lib/kubelet/.+|snap/.+)($|/)`
)

// Points are the names the collector sends.
var Points = []string{
	metric.CPUUtil, metric.CPUCores, metric.HostInfo, metric.Load1, metric.Load5, Load15, metric.MemUsedPct,
	MemTotalBytes, MemAvailBytes, SwapUsedPct, SwapUsedBytes, metric.NetRxBps, metric.NetTxBps,
	metric.DiskUsedPct, DiskReadBps, DiskWriteBps, DiskReadIOPS, DiskWriteIOPS,
}

func init() {
	collector.Register(Name, collector.Factory{
		Config: func() any { return DefaultConfig() },
		New: func(cfg any, _ collector.Env) (collector.Collector, error) {
			return New(*cfg.(*Config))
		},
		Emits: Points,
	})
}

// Config is the host section of agent.yaml.
type Config struct {
	// PerCPU adds one cpu.util point per core.
	PerCPU bool `yaml:"per_cpu"`
	// ProcRoot and SysRoot replace /proc and /sys (empty: gopsutil's default, which
	// honours HOST_PROC and HOST_SYS).
	ProcRoot string `yaml:"proc_root"`
	SysRoot  string `yaml:"sys_root"`
	// RootFS is prefixed to mount points before statfs, for a host's root mounted
	// elsewhere (e.g. /host); empty for the agent's own view.
	RootFS string `yaml:"rootfs"`
	// The *_ignore fields are regular expressions of what not to report.
	NetIgnore     string `yaml:"net_ignore"`
	DiskIgnore    string `yaml:"disk_ignore"`
	FSTypeIgnore  string `yaml:"fs_type_ignore"`
	MountIgnore   string `yaml:"mount_ignore"`
	NoDiskUsage   bool   `yaml:"no_disk_usage"`
	NoDiskIO      bool   `yaml:"no_disk_io"`
	NoNet         bool   `yaml:"no_net"`
	compiledCache *compiled
}

type compiled struct{ net, disk, fsType, mount *regexp.Regexp }

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{
		NetIgnore:    defaultNetSkip,
		DiskIgnore:   defaultDiskSkip,
		FSTypeIgnore: defaultFSTypeSkip,
		MountIgnore:  defaultMountSkip,
	}
}

// Validate compiles the patterns, naming each one that is wrong.
func (c *Config) Validate() error {
	var cc compiled
	var errs []error
	for _, p := range []struct {
		field, expr string
		dst         **regexp.Regexp
	}{
		{"net_ignore", c.NetIgnore, &cc.net},
		{"disk_ignore", c.DiskIgnore, &cc.disk},
		{"fs_type_ignore", c.FSTypeIgnore, &cc.fsType},
		{"mount_ignore", c.MountIgnore, &cc.mount},
	} {
		if p.expr == "" {
			continue
		}
		re, err := regexp.Compile(p.expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.field, err))
			continue
		}
		*p.dst = re
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.compiledCache = &cc
	return nil
}

// Collector is the host collector. It keeps the previous tick's counters for rates.
type Collector struct {
	cfg Config
	re  compiled
	env common.EnvMap

	// now and usage are replaced in tests: the clock for rates, and statfs (the one
	// figure that does not come from /proc).
	now   func() time.Time
	usage func(ctx context.Context, path string) (*disk.UsageStat, error)

	prev *sample
}

var _ collector.Collector = (*Collector)(nil)

// sample holds the counters that rates are computed from.
type sample struct {
	at    time.Time
	cpu   cpuTimes
	cores map[string]cpuTimes
	net   map[string]net.IOCountersStat
	disk  map[string]disk.IOCountersStat
}

type cpuTimes struct{ busy, total float64 }

// New builds a host collector.
func New(cfg Config) (*Collector, error) {
	if cfg.compiledCache == nil {
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("host collector: %w", err)
		}
	}
	c := &Collector{cfg: cfg, re: *cfg.compiledCache, now: time.Now, usage: disk.UsageWithContext}
	c.env = common.EnvMap{}
	if cfg.ProcRoot != "" {
		c.env[common.HostProcEnvKey] = cfg.ProcRoot
	}
	if cfg.SysRoot != "" {
		c.env[common.HostSysEnvKey] = cfg.SysRoot
	}
	return c, nil
}

// Name implements collector.Collector.
func (c *Collector) Name() string { return Name }

// Collect implements collector.Collector. One failing part (say, one mount) does not
// hide the others: their points are returned with the joined errors.
func (c *Collector) Collect(ctx context.Context) ([]metric.Point, error) {
	ctx = c.withEnv(ctx)
	now := c.now()
	cur := &sample{at: now}
	var pts []metric.Point
	var errs []error
	add := func(name string, v float64, labels ...string) {
		pts = append(pts, point(name, v, labels...))
	}

	// CPU: utilisation between the two ticks, from /proc/stat jiffies.
	if t, err := cpu.TimesWithContext(ctx, false); err != nil || len(t) == 0 {
		errs = append(errs, fmt.Errorf("cpu times: %w", orEmpty(err)))
	} else {
		cur.cpu = toCPU(t[0])
		if c.prev != nil {
			if u, ok := util(c.prev.cpu, cur.cpu); ok {
				add(metric.CPUUtil, u)
			}
		}
	}
	// The cores: the capacity the judge measures a wave host's utilisation against.
	if n, err := cpu.CountsWithContext(ctx, true); err != nil || n <= 0 {
		errs = append(errs, fmt.Errorf("cpu count: %w", orEmpty(err)))
	} else {
		add(metric.CPUCores, float64(n))
	}
	// Which host: waves beside each other share its cores, and the judge divides them.
	// Not every kernel has it (nor every container its /proc): then none is sent.
	if id, err := os.ReadFile(hostProc(ctx, "sys", "kernel", "random", "boot_id")); err == nil {
		if id := strings.TrimSpace(string(id)); id != "" && len(id) <= 64 {
			add(metric.HostInfo, 1, "boot_id", id)
		}
	}
	if c.cfg.PerCPU {
		if ts, err := cpu.TimesWithContext(ctx, true); err != nil {
			errs = append(errs, fmt.Errorf("per-cpu times: %w", err))
		} else {
			cur.cores = make(map[string]cpuTimes, len(ts))
			for _, t := range ts {
				id := strings.TrimPrefix(t.CPU, "cpu")
				cur.cores[id] = toCPU(t)
				if c.prev != nil && c.prev.cores != nil {
					if p, ok := c.prev.cores[id]; ok {
						if u, ok := util(p, cur.cores[id]); ok {
							add(metric.CPUUtil, u, "cpu", id)
						}
					}
				}
			}
		}
	}

	if l, err := load.AvgWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("load average: %w", err))
	} else {
		add(metric.Load1, l.Load1)
		add(metric.Load5, l.Load5)
		add(Load15, l.Load15)
	}

	if m, err := mem.VirtualMemoryWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("memory: %w", err))
	} else if m.Total == 0 {
		errs = append(errs, errors.New("memory: MemTotal is 0"))
	} else {
		// Not gopsutil's UsedPercent (Total-Free-Buffers-Cached): Available is the
		// kernel's estimate of what can be had without swapping, which is what
		// "how full is this machine" means for placement.
		avail := min(m.Available, m.Total)
		add(metric.MemUsedPct, float64(m.Total-avail)/float64(m.Total)*100)
		add(MemTotalBytes, float64(m.Total))
		add(MemAvailBytes, float64(avail))
		used := m.SwapTotal - min(m.SwapFree, m.SwapTotal)
		pct := 0.0
		if m.SwapTotal > 0 {
			pct = float64(used) / float64(m.SwapTotal) * 100
		}
		add(SwapUsedPct, pct)
		add(SwapUsedBytes, float64(used))
	}

	if !c.cfg.NoNet {
		p, err := c.netPoints(ctx, cur)
		pts = append(pts, p...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	var partial []error // parts the collection goes without (collector.Partial)
	if !c.cfg.NoDiskUsage {
		p, err := c.usagePoints(ctx)
		pts = append(pts, p...)
		var pe *collector.Partial
		switch {
		case errors.As(err, &pe):
			partial = append(partial, pe.Err)
		case err != nil:
			errs = append(errs, err)
		}
	}
	if !c.cfg.NoDiskIO {
		p, err := c.diskIOPoints(ctx, cur)
		pts = append(pts, p...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	c.prev = cur
	if len(errs) == 0 && len(partial) > 0 {
		return pts, &collector.Partial{Err: errors.Join(partial...)}
	}
	return pts, errors.Join(append(errs, partial...)...)
}

// hostProc is the path of parts under the /proc gopsutil reads (withEnv's, else
// HOST_PROC's, else /proc), for a file gopsutil has no reader of.
func hostProc(ctx context.Context, parts ...string) string {
	root := "/proc"
	if env, ok := ctx.Value(common.EnvKey).(common.EnvMap); ok && env[common.HostProcEnvKey] != "" {
		root = env[common.HostProcEnvKey]
	} else if v := os.Getenv(string(common.HostProcEnvKey)); v != "" {
		root = v
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

func (c *Collector) withEnv(ctx context.Context) context.Context {
	if len(c.env) == 0 {
		return ctx
	}
	// Keep what the caller put there (tests point HOST_RUN and HOST_DEV at fixtures),
	// with our roots on top.
	env := common.EnvMap{}
	if have, ok := ctx.Value(common.EnvKey).(common.EnvMap); ok {
		maps.Copy(env, have)
	}
	maps.Copy(env, c.env)
	return context.WithValue(ctx, common.EnvKey, env)
}

// netCounters reads the network counters of the host's network namespace: under a
// proc_root (the host's /proc mounted into a container), PID 1's net/dev, as the
// root's net/dev is a link to the reader's own (self/net), and a containerised agent
// with a network namespace of its own sent none of the host's (an outside trial); else,
// or where PID 1's cannot be read (hidepid), the root's.
func (c *Collector) netCounters(ctx context.Context) ([]net.IOCountersStat, error) {
	if c.cfg.ProcRoot != "" {
		dev := filepath.Join(c.cfg.ProcRoot, "1", "net", "dev")
		if _, err := os.Stat(dev); err == nil {
			return net.IOCountersByFileWithContext(ctx, true, dev)
		}
	}
	return net.IOCountersWithContext(ctx, true)
}

func (c *Collector) netPoints(ctx context.Context, cur *sample) ([]metric.Point, error) {
	counters, err := c.netCounters(ctx)
	if err != nil {
		return nil, fmt.Errorf("network counters: %w", err)
	}
	cur.net = make(map[string]net.IOCountersStat, len(counters))
	for _, n := range counters {
		if c.re.net != nil && c.re.net.MatchString(n.Name) {
			continue
		}
		cur.net[n.Name] = n
	}
	if c.prev == nil || c.prev.net == nil {
		return nil, nil
	}
	dt := cur.at.Sub(c.prev.at).Seconds()
	if dt <= 0 {
		return nil, nil
	}
	var pts []metric.Point
	var rx, tx float64
	var any bool
	for _, name := range sortedKeys(cur.net) {
		n, p := cur.net[name], c.prev.net[name]
		if _, ok := c.prev.net[name]; !ok || n.BytesRecv < p.BytesRecv || n.BytesSent < p.BytesSent {
			continue // new interface or counter reset: no rate this tick
		}
		r := float64(n.BytesRecv-p.BytesRecv) / dt
		t := float64(n.BytesSent-p.BytesSent) / dt
		pts = append(pts, point(metric.NetRxBps, r, "iface", name), point(metric.NetTxBps, t, "iface", name))
		rx, tx, any = rx+r, tx+t, true
	}
	if any {
		pts = append(pts, point(metric.NetRxBps, rx), point(metric.NetTxBps, tx))
	}
	return pts, nil
}

func (c *Collector) usagePoints(ctx context.Context) ([]metric.Point, error) {
	parts, err := disk.PartitionsWithContext(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("mounts: %w", err)
	}
	var pts []metric.Point
	var errs []error
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p.Mountpoint] ||
			(c.re.fsType != nil && c.re.fsType.MatchString(p.Fstype)) ||
			(c.re.mount != nil && c.re.mount.MatchString(p.Mountpoint)) {
			continue
		}
		seen[p.Mountpoint] = true
		path := p.Mountpoint
		if c.cfg.RootFS != "" {
			path = filepath.Join(c.cfg.RootFS, p.Mountpoint)
		}
		u, err := c.usage(ctx, path)
		if err != nil {
			errs = append(errs, fmt.Errorf("statfs %s: %w", path, err))
			continue
		}
		if u.Total == 0 {
			continue // pseudo file systems that slipped through report no size
		}
		// df's Use%: used over what users can hold, used + available (Free is f_bavail).
		// Over Total, the blocks reserved for root counted as used: a root file system
		// with 5 % reserved read 75 % where df said 30 %.
		if u.Used+u.Free == 0 {
			continue
		}
		pts = append(pts, point(metric.DiskUsedPct, float64(u.Used)/float64(u.Used+u.Free)*100, "mount", p.Mountpoint))
	}
	if len(errs) > 0 && len(pts) > 0 {
		// Some mounts read: the ones that did not (a mount under a directory the agent's
		// user may not enter) are left out, said once, and the host is measured.
		return pts, &collector.Partial{Err: fmt.Errorf("%w (those mounts are left out; leave them out with collectors.host.mount_ignore)", errors.Join(errs...))}
	}
	return pts, errors.Join(errs...)
}

func (c *Collector) diskIOPoints(ctx context.Context, cur *sample) ([]metric.Point, error) {
	counters, err := disk.IOCountersWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("disk counters: %w", err)
	}
	cur.disk = make(map[string]disk.IOCountersStat, len(counters))
	for name, d := range counters {
		if c.re.disk != nil && c.re.disk.MatchString(name) {
			continue
		}
		cur.disk[name] = d
	}
	if c.prev == nil || c.prev.disk == nil {
		return nil, nil
	}
	dt := cur.at.Sub(c.prev.at).Seconds()
	if dt <= 0 {
		return nil, nil
	}
	var pts []metric.Point
	var sum [4]float64
	var any bool
	for _, name := range sortedKeys(cur.disk) {
		d := cur.disk[name]
		p, ok := c.prev.disk[name]
		if !ok || d.ReadBytes < p.ReadBytes || d.WriteBytes < p.WriteBytes || d.ReadCount < p.ReadCount || d.WriteCount < p.WriteCount {
			continue
		}
		v := [4]float64{
			float64(d.ReadBytes-p.ReadBytes) / dt, float64(d.WriteBytes-p.WriteBytes) / dt,
			float64(d.ReadCount-p.ReadCount) / dt, float64(d.WriteCount-p.WriteCount) / dt,
		}
		for i, n := range []string{DiskReadBps, DiskWriteBps, DiskReadIOPS, DiskWriteIOPS} {
			pts = append(pts, point(n, v[i], "device", name))
			sum[i] += v[i]
		}
		any = true
	}
	if any {
		for i, n := range []string{DiskReadBps, DiskWriteBps, DiskReadIOPS, DiskWriteIOPS} {
			pts = append(pts, point(n, sum[i]))
		}
	}
	return pts, nil
}

// toCPU sums /proc/stat jiffies. Guest time is already inside user and nice on Linux,
// so it is not added again (gopsutil's TimesStat.Total adds it).
func toCPU(t cpu.TimesStat) cpuTimes {
	idle := t.Idle + t.Iowait
	total := t.User + t.Nice + t.System + t.Idle + t.Iowait + t.Irq + t.Softirq + t.Steal
	return cpuTimes{busy: total - idle, total: total}
}

func util(prev, cur cpuTimes) (float64, bool) {
	dt := cur.total - prev.total
	db := cur.busy - prev.busy
	if dt <= 0 || db < 0 {
		return 0, false
	}
	return min(db/dt*100, 100), true
}

func point(name string, v float64, labels ...string) metric.Point {
	p := metric.Point{Name: name, Value: v}
	if len(labels) > 0 {
		p.Labels = make(map[string]string, len(labels)/2)
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Small maps: insertion sort keeps the import list short.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func orEmpty(err error) error {
	if err == nil {
		return errors.New("no data")
	}
	return err
}
