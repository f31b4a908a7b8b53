// Package process measures named processes (the wave, usually) from /proc: resident
// memory and CPU, found by pid file, by name, or by a pattern on the command line.
//
//	process.count{process}     matching processes (0 when the wave is not running)
//	process.rss_bytes{process} VmRSS summed over them
//	process.cpu_pct{process}   CPU between two ticks, percent of one core (200 = two cores)
//
// The label is the configured label, else the name, else the pid file's base name.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/internal/metric"
)

// Name is the registry name.
const Name = "process"

// Point names.
const (
	Count    = "process.count"
	RSSBytes = "process.rss_bytes"
	CPUPct   = "process.cpu_pct"
)

// Points are the names the collector sends.
var Points = []string{Count, RSSBytes, CPUPct}

// userHZ is the unit of the times in /proc/PID/stat. The kernel fixes USER_HZ at 100
// for user space on every mainstream architecture, whatever CONFIG_HZ is; sysconf
// (_SC_CLK_TCK) returns the same constant.
const userHZ = 100

func init() {
	collector.Register(Name, collector.Factory{
		Config: func() any { return &Config{} },
		New: func(cfg any, _ collector.Env) (collector.Collector, error) {
			return New(*cfg.(*Config))
		},
		Emits: Points,
	})
}

// Config is the process section of agent.yaml. Set at least one of PIDFile, Name and
// Cmdline; with several, a process must match all of them.
type Config struct {
	PIDFile string `yaml:"pid_file"`
	// Name matches /proc/PID/comm or the base name of argv[0].
	Name string `yaml:"name"`
	// Cmdline is a regular expression matched against the command line, arguments
	// joined by spaces ("binlake wave" tells the wave from the agent, both "binlake").
	Cmdline string `yaml:"cmdline"`
	// Label is the value of the "process" label (default: Name or the pid file's base).
	Label    string `yaml:"label"`
	ProcRoot string `yaml:"proc_root"`
}

// Validate checks that the process is identified.
func (c *Config) Validate() error {
	if c.PIDFile == "" && c.Name == "" && c.Cmdline == "" {
		return errors.New("set pid_file, name or cmdline to say which process to measure")
	}
	if _, err := regexp.Compile(c.Cmdline); err != nil {
		return fmt.Errorf("cmdline: %w", err)
	}
	return nil
}

// Collector measures the matching processes.
type Collector struct {
	cfg   Config
	label string
	re    *regexp.Regexp
	self  int
	now   func() time.Time
	prev  map[int]Stat
	prevT time.Time
}

var _ collector.Collector = (*Collector)(nil)

// New builds a process collector.
func New(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("process collector: %w", err)
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	c := &Collector{cfg: cfg, label: cfg.Label, self: os.Getpid(), now: time.Now}
	if cfg.Cmdline != "" {
		c.re = regexp.MustCompile(cfg.Cmdline)
	}
	if c.label == "" {
		c.label = cfg.Name
	}
	if c.label == "" && cfg.PIDFile != "" {
		c.label = strings.TrimSuffix(filepath.Base(cfg.PIDFile), ".pid")
	}
	if c.label == "" {
		c.label = "process"
	}
	return c, nil
}

// Name implements collector.Collector.
func (c *Collector) Name() string { return Name }

// Collect implements collector.Collector.
func (c *Collector) Collect(ctx context.Context) ([]metric.Point, error) {
	pids, err := c.pids()
	if err != nil {
		return nil, err
	}
	now := c.now()
	cur := make(map[int]Stat, len(pids))
	var rss, cpuDelta float64
	var haveRate bool
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, err := Read(c.cfg.ProcRoot, pid)
		if err != nil {
			continue // it exited between listing and reading
		}
		if !c.matches(st) {
			continue
		}
		cur[pid] = st
		rss += float64(st.RSSBytes)
		// Same pid and start time: the same process, so its CPU time grew monotonically.
		if p, ok := c.prev[pid]; ok && p.StartTicks == st.StartTicks && st.CPUSeconds >= p.CPUSeconds {
			cpuDelta += st.CPUSeconds - p.CPUSeconds
			haveRate = true
		}
	}
	labels := map[string]string{"process": c.label}
	pts := []metric.Point{{Name: Count, Value: float64(len(cur)), Labels: labels}}
	if len(cur) > 0 {
		pts = append(pts, metric.Point{Name: RSSBytes, Value: rss, Labels: labels})
	}
	if dt := now.Sub(c.prevT).Seconds(); haveRate && dt > 0 {
		pts = append(pts, metric.Point{Name: CPUPct, Value: cpuDelta / dt * 100, Labels: labels})
	}
	c.prev, c.prevT = cur, now
	return pts, nil
}

// pids lists the candidates: the pid file's process, or every process.
func (c *Collector) pids() ([]int, error) {
	if c.cfg.PIDFile != "" {
		b, err := os.ReadFile(c.cfg.PIDFile)
		if err != nil {
			return nil, fmt.Errorf("pid file: %w", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("pid file %s: %q is not a process id", c.cfg.PIDFile, bytes.TrimSpace(b))
		}
		return []int{pid}, nil
	}
	entries, err := os.ReadDir(c.cfg.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != c.self {
			out = append(out, pid)
		}
	}
	return out, nil
}

func (c *Collector) matches(st Stat) bool {
	if c.cfg.Name != "" && st.Comm != c.cfg.Name && (len(st.Args) == 0 || filepath.Base(st.Args[0]) != c.cfg.Name) {
		return false
	}
	if c.re != nil && !c.re.MatchString(strings.Join(st.Args, " ")) {
		return false
	}
	return true
}

// Stat is what the collector reads about one process.
type Stat struct {
	PID        int
	Comm       string
	Args       []string
	RSSBytes   uint64
	HWMBytes   uint64  // VmHWM, the peak resident size
	CPUSeconds float64 // utime + stime
	StartTicks uint64  // start time since boot, in USER_HZ ticks: tells a reused pid apart
}

// Read reads /proc/PID/stat, status and cmdline under procRoot, through
// prometheus/procfs.
func Read(procRoot string, pid int) (Stat, error) {
	st := Stat{PID: pid}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return st, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return st, err
	}
	ps, err := p.Stat()
	if err != nil {
		return st, fmt.Errorf("process %d: %w", pid, err)
	}
	status, err := p.NewStatus()
	if err != nil {
		return st, fmt.Errorf("process %d: %w", pid, err)
	}
	st.Comm = ps.Comm
	st.CPUSeconds = float64(ps.UTime+ps.STime) / userHZ
	st.StartTicks = ps.Starttime
	st.RSSBytes, st.HWMBytes = status.VmRSS, status.VmHWM
	if args, err := p.CmdLine(); err == nil {
		for _, a := range args {
			if a != "" {
				st.Args = append(st.Args, a)
			}
		}
	}
	return st, nil
}
