//go:build !agentonly

// `binlake up`: the suite in one process on the embedded defaults.
//
// One in-process bus (internal/bus/memory) carries the metric batches from an agent for
// this host to a judge and an alarm; the judge stores raw points in SQLite and the alarm
// keeps its notification log in the single-node coordinator, both in one data folder
// that a lock keeps to one process. With a MySQL source a wave captures it too, writing
// rows to a file or stdout, and the agent scrapes the wave's /metrics.
//
// Each role keeps its own HTTP server (judge, alarm, wave): their routes overlap
// (/healthz, /metrics), and separate ports keep every URL the same as in the
// distributed shape.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge"
)

// Default addresses: each role's own (config.JudgeListen…), on loopback only.
const (
	DefaultJudgeListen = config.JudgeListen
	DefaultAlarmListen = config.AlarmListen
	DefaultWaveListen  = config.WaveListen
	// DefaultUpRetention is how long up's judge keeps its points: a week of history for
	// the status page and the analyses, some 80 MB at the agent's default interval,
	// where keeping all of them grows the data folder without end.
	DefaultUpRetention = 7 * 24 * time.Hour
	// DefaultShutdownTimeout bounds the stop after Ctrl-C.
	DefaultShutdownTimeout = 30 * time.Second
)

// Files in the data folder.
const (
	StoreFile = "judge.db"   // the judge's raw points (SQLite)
	CoordFile = "coord.json" // the single-node coordinator: alarm log, silences, wave offsets
	RowsFile  = "rows.jsonl" // the wave's rows, unless Rows says otherwise
)

// upOptions configures `binlake up`. Zero fields take the defaults named.
type upOptions struct {
	// DataDir holds the store, the coordinator file and the rows. "./data".
	DataDir string
	// Node is this host's node id, used by the agent and the wave. The host name.
	Node string

	// JudgeListen serves the status page and the judge API; AlarmListen the alarm API;
	// WaveListen the wave's /metrics and /status (only with MySQL). Port 0 picks one.
	JudgeListen, AlarmListen, WaveListen string
	// AgentMetrics is where the agent serves its own /metrics; "off" (the default)
	// serves none, since the judge and alarm already show what it sends.
	AgentMetrics string
	// AgentInterval is how often the agent collects. 10 s.
	AgentInterval time.Duration
	// Retention is how long the judge keeps stored points (0 keeps all; the flag's
	// default is DefaultUpRetention).
	Retention time.Duration
	// Algorithm is the judge's default placement algorithm (judge.DefaultAlgorithm).
	Algorithm string

	// Policies are the alert policies (DefaultPolicies when nil); Channels the
	// notifiers they name (LoadChannels; the log channel alone when nil).
	Policies []*policy.Policy
	Channels *Channels
	// PoliciesFile is the file Policies came from, named in the warnings about them.
	PoliciesFile string

	// MySQL, when set, runs a wave on that source.
	MySQL *MySQL
	// Rows is where the wave writes rows: a file path (DataDir/rows.jsonl when empty),
	// or "-" for Stdout.
	Rows   string
	Stdout io.Writer

	ShutdownTimeout time.Duration
	Logger          *slog.Logger
	// Ready, when set, is called once every part serves.
	Ready func(upURLs)
}

// upURLs are where the parts of a running `up` answer.
type upURLs struct {
	Status string // the judge's status page
	Judge  string // the judge's base URL (API under /v1)
	Alarm  string // the alarm's base URL
	Wave   string // the wave's base URL; empty without MySQL
	Agent  string // the agent's /metrics; empty when off
	Rows   string // where rows go; empty without MySQL
}

func (o *upOptions) defaults() error {
	if o.DataDir == "" {
		o.DataDir = "./data"
	}
	if o.Node == "" {
		o.Node = hostname()
		if o.Node == "" {
			return errors.New("the host name is unknown: pass --node")
		}
	}
	if !config.IDPattern.MatchString(o.Node) {
		return fmt.Errorf("--node %q: %s", o.Node, config.IDRule)
	}
	if o.JudgeListen == "" {
		o.JudgeListen = DefaultJudgeListen
	}
	if o.AlarmListen == "" {
		o.AlarmListen = DefaultAlarmListen
	}
	if o.WaveListen == "" {
		o.WaveListen = DefaultWaveListen
	}
	if o.AgentMetrics == "" {
		o.AgentMetrics = agent.MetricsListenOff
	}
	if o.AgentInterval == 0 {
		o.AgentInterval = agent.DefaultInterval
	}
	if o.Algorithm == "" {
		o.Algorithm = judge.DefaultAlgorithm
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// runSuite starts every part, serves until ctx ends or a part fails, then stops the sources
// (agent, wave) before the sinks (judge, alarm), so the last batches reach them, all
// within ShutdownTimeout. A second runSuite on the same data folder fails with
// ErrDataDirBusy.
func runSuite(ctx context.Context, o upOptions) (err error) {
	if err := o.defaults(); err != nil {
		return err
	}
	log := o.Logger.With("component", "up")
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("data folder %s: %w", o.DataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close() // last: releases the folder
	if err := o.portsFree(); err != nil {
		return err
	}
	pols, chans, err := o.policies()
	if err != nil {
		return err
	}
	deps, err := openSuiteDeps(ctx, dir, o.Logger)
	if err != nil {
		return err
	}
	defer deps.close()
	deps.checkPolicies(ctx, log, pols, o.PoliciesFile)
	if o.MySQL == nil {
		deps.sayUncaptured(ctx, log)
	}

	s := &suite{o: &o, ctx: ctx, log: log, dir: dir, deps: deps, status: newUpStatus(&o),
		judgeReady: make(chan string, 1), alarmReady: make(chan string, 1),
		// Two stages, so the sources (agent, wave) stop before the sinks (judge, alarm)
		// and the last batches reach them; a part that fails or returns early stops
		// everything. The sources end when shutdown stops them, not with ctx: up says it
		// is stopping first.
		sinks: newStage(context.WithoutCancel(ctx)), sources: newStage(context.WithoutCancel(ctx))}
	defer s.sources.cancel()
	defer s.sinks.cancel()
	defer s.closeParts() // before the stages' cancel and the dependencies' close
	j, al, err := s.newSinks(pols, chans)
	if err != nil {
		return err
	}
	defer j.Close() // a judge that never ran still closes its store buffer
	log.Info("binlake up starting", s.startAttrs(pols, chans)...)

	if err := s.start(j, al); err != nil {
		if errors.Is(err, errNotReady) {
			err = nil // the part's own error is the stage's, which shutdown returns
		}
		return s.shutdown(err)
	}
	s.logRunning()
	if o.Ready != nil {
		o.Ready(s.urls)
	}
	select {
	case <-ctx.Done():
		log.Info("stopping: sources first, then judge and alarm", "within", o.ShutdownTimeout)
	case <-s.sources.ctx.Done():
	case <-s.sinks.ctx.Done():
	}
	if ctx.Err() == nil {
		log.Error("a part stopped; stopping the others")
	}
	if err := s.shutdown(nil); err != nil {
		return err
	}
	log.Info("binlake up stopped")
	return nil
}

// policies are the alert policies and the channels they name: the options', else the
// built-in ones and the log channel.
func (o *upOptions) policies() ([]*policy.Policy, *Channels, error) {
	chans := o.Channels
	if chans == nil {
		c, err := LoadChannels("", o.Logger)
		if err != nil {
			return nil, nil, err
		}
		chans = &c
	}
	pols := o.Policies
	if pols == nil {
		var err error
		if pols, _, err = LoadPolicies("", *chans); err != nil {
			return nil, nil, err
		}
	}
	return pols, chans, nil
}

// portsFree reports, all at once, the addresses of up's listeners that another process
// holds or that two flags share: the parts bind theirs one after the other, so each
// clash would otherwise be found by a start of its own. A port of 0 is always free.
// (The parts still report one taken between this check and their start.)
func (o *upOptions) portsFree() error {
	flags := []struct{ name, addr string }{{"-judge-http", o.JudgeListen}, {"-alarm-http", o.AlarmListen}}
	if o.MySQL != nil {
		flags = append(flags, struct{ name, addr string }{"-wave-http", o.WaveListen})
	}
	var errs []error
	seen := map[string]string{}
	for _, f := range flags {
		if _, port, err := net.SplitHostPort(f.addr); err != nil || port == "0" {
			continue // upListen checked the form; the part says what is wrong
		}
		if other, ok := seen[f.addr]; ok {
			errs = append(errs, fmt.Errorf("%s %s is %s's too: give each its own port", f.name, f.addr, other))
			continue
		}
		seen[f.addr] = f.name
		ln, err := net.Listen("tcp", f.addr)
		if err != nil {
			if _, ok := addrInUse(err); ok {
				err = inUse(f.name, f.addr)
			}
			errs = append(errs, err)
			continue
		}
		ln.Close()
	}
	return errors.Join(errs...)
}

// inUse says that another process holds the address of up's flag, and what to do.
func inUse(flagName, addr string) error {
	return fmt.Errorf("%s %s is in use by another process: pick another with %s (port 0 picks a free one)", flagName, addr, flagName)
}

// listenFlag names the flag of `up` that changes a part's address when the part fails
// because another process holds it: "-judge-http 127.0.0.1:8090 is in use: pick another
// with -judge-http" says what to do, where the kernel's "bind: address already in use"
// does not say which of up's four listeners it was.
func listenFlag(run func(context.Context) error, flagName string) func(context.Context) error {
	return func(ctx context.Context) error {
		err := run(ctx)
		if addr, ok := addrInUse(err); ok {
			return inUse(flagName, addr)
		}
		return err
	}
}

// newCollector builds a registered collector from its default config, adjusted by set.
func newCollector(name string, set func(cfg any)) (collector.Collector, error) {
	f, err := collector.Lookup(name)
	if err != nil {
		return nil, err
	}
	cfg := f.Config()
	if set != nil {
		set(cfg)
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("collector %s: %w", name, err)
		}
	}
	col, err := f.New(cfg, collector.Env{})
	if err != nil {
		return nil, fmt.Errorf("collector %s: %w", name, err)
	}
	return col, nil
}
