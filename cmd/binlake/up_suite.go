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
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/agent/collector"
	wavecollector "github.com/binlake/binlake/agent/collector/wave"
	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge"
	judgeclient "github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/sink"
)

// Default addresses: each role's own (config.JudgeListen…), on loopback only.
const (
	DefaultJudgeListen = config.JudgeListen
	DefaultAlarmListen = config.AlarmListen
	DefaultWaveListen  = config.WaveListen
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

	chans := o.Channels
	if chans == nil {
		c, err := LoadChannels("", o.Logger)
		if err != nil {
			return err
		}
		chans = &c
	}
	pols := o.Policies
	if pols == nil {
		if pols, _, err = LoadPolicies("", *chans); err != nil {
			return err
		}
	}

	// The sinks' dependencies first: coordinator, store, bus.
	c, err := single.New(single.Options{Path: filepath.Join(dir, CoordFile)})
	if err != nil {
		return err
	}
	defer c.Close()
	storePath := filepath.Join(dir, StoreFile)
	st, err := sqlite.Open(sqlite.Options{Path: storePath})
	if err != nil {
		return err
	}
	defer st.Close()
	// The store knows every metric name the judge ever stored: a policy watching none of
	// them, nor a canonical one, is most likely a typo.
	if names, err := st.Names(ctx); err != nil {
		log.Warn("reading the metric names in the store, for the policies' check", "store", storePath, "err", err)
	} else {
		polFile := o.PoliciesFile
		if polFile == "" {
			polFile = "the built-in policies"
		}
		logUnknownMetrics(log, pols, polFile, knownMetricNames(names), "a canonical metric, one the agents' collectors send, or one in "+storePath)
	}
	// Judge and alarm read each batch within milliseconds and the judge's history lives in
	// SQLite, so the bus only has to cover a stalled consumer: 8 MiB is about half a day.
	b, err := memory.New(memory.Options{RetainBytes: 8 << 20, Logger: o.Logger})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: metric.Topic, Partitions: 1}); err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	// Two groups, so the judge and the alarm each see every batch; from the first
	// message, so none published before a subscriber joined is missed.
	judgeSub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "binlake-judge", StartAt: bus.StartFirst})
	if err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	defer judgeSub.Close()
	alarmSub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: alarm.DefaultGroup, StartAt: bus.StartFirst})
	if err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	defer alarmSub.Close()

	var urls upURLs
	judgeReady, alarmReady := make(chan string, 1), make(chan string, 1)
	status := newUpStatus(&o) // the status page's alerts and instance errors (up_status.go)
	j, err := judge.New(judge.Options{
		Store: st, Subscriber: judgeSub, Listen: o.JudgeListen, Algorithm: o.Algorithm, SnapshotEvery: judge.DefaultSnapshotEvery, CapacityEvery: judge.DefaultCapacityEvery,
		Logger: o.Logger, Ready: func(a string) { judgeReady <- a }, Status: status.options(),
	})
	if err != nil {
		return err
	}
	defer j.Close() // a judge that never ran still closes its store buffer
	al, err := alarm.New(alarm.Options{
		Policies: pols, Channels: chans.Notifiers, Subscriber: alarmSub, Coordinator: c,
		Listen: o.AlarmListen, Logger: o.Logger, Ready: func(a string) { alarmReady <- a },
		// Half the budget: the alarm stops after the sources, within the same deadline.
		ShutdownTimeout: o.ShutdownTimeout / 2,
	})
	if err != nil {
		return err
	}
	status.alarm.Store(al)

	attrs := []any{"version", buildinfo.String(), "data", dir, "node", o.Node, "store", "sqlite " + storePath,
		"coordinator", "single " + filepath.Join(dir, CoordFile), "bus", "in-process", "policies", len(pols),
		"channels", strings.Join(chans.Desc, ", "), "agent_interval", o.AgentInterval}
	if o.MySQL != nil {
		attrs = append(attrs, "mysql", o.MySQL.String())
	}
	log.Info("binlake up starting", attrs...)

	// Two stages, so the sources (agent, wave) stop before the sinks (judge, alarm) and
	// the last batches reach them; a part that fails or returns early stops everything.
	sinks := newStage(context.WithoutCancel(ctx))
	// The sources end when shutdown stops them, not with ctx: up says it is stopping first.
	sources := newStage(context.WithoutCancel(ctx))
	defer sources.cancel()
	defer sinks.cancel()
	// shutdown stops the sources, then the sinks, within ShutdownTimeout, and returns
	// cause or else the first part's error.
	shutdown := func(cause error) error {
		deadline := time.NewTimer(o.ShutdownTimeout)
		defer deadline.Stop()
		errSrc := sources.stop(deadline.C, o.ShutdownTimeout)
		errSink := sinks.stop(deadline.C, o.ShutdownTimeout)
		return cmp.Or(cause, errSrc, errSink)
	}
	// await waits for a part's ready signal; false when it will not come (a part of
	// its stage failed, or ctx ended), and then the caller shuts down.
	await := func(st *stage, ready <-chan string) (string, bool) {
		select {
		case addr := <-ready:
			return addr, true
		case <-st.ctx.Done():
		case <-ctx.Done():
		}
		return "", false
	}

	sinks.run("judge", listenFlag(j.Run, "-judge-http"))
	addr, ok := await(sinks, judgeReady)
	if !ok {
		return shutdown(nil)
	}
	urls.Judge, urls.Status = "http://"+addr, "http://"+addr+"/"
	sinks.run("alarm", listenFlag(al.Run, "-alarm-http"))
	if addr, ok = await(sinks, alarmReady); !ok {
		return shutdown(nil)
	}
	urls.Alarm = "http://" + addr

	var collectors []collector.Collector
	host, err := newCollector("host", nil)
	if err != nil {
		return shutdown(err)
	}
	collectors = append(collectors, host)

	if o.MySQL != nil {
		w, rows, closeRows, err := o.newWave(ctx, c, dir)
		if err != nil {
			return shutdown(err)
		}
		defer closeRows() // after the wave stopped
		waveReady := make(chan string, 1)
		w.opts.Ready = func(a string) { waveReady <- a }
		// The suite's own judge plans for the balancer: one wave has nothing to move, but
		// the plans keep the cluster's load figures (and the capacity alert) current.
		w.opts.Balancer.Planner = &judgeclient.Client{URL: urls.Judge}
		wv, err := wave.New(w.opts)
		if err != nil {
			return shutdown(err)
		}
		status.wave.Store(wv)
		sources.run("wave", listenFlag(wv.Run, "-wave-http"))
		if addr, ok = await(sources, waveReady); !ok {
			return shutdown(nil)
		}
		urls.Wave, urls.Rows = "http://"+addr, rows
		wc, err := newCollector(wavecollector.Name, func(cfg any) {
			cfg.(*wavecollector.Config).URL = urls.Wave + "/metrics"
		})
		if err != nil {
			return shutdown(err)
		}
		collectors = append(collectors, wc)
	}

	acfg := agent.DefaultConfig()
	acfg.Node, acfg.Interval, acfg.HTTP.Listen = o.Node, config.Duration(o.AgentInterval), o.AgentMetrics
	agentReady := make(chan string, 1)
	ag, err := agent.New(agent.Options{
		Config: acfg, ConfigFile: "(binlake up)", Collectors: collectors, Logger: o.Logger,
		Sink:  agent.NewBusSink(b, agent.BusSinkOptions{Topic: metric.Topic, Partitions: 1, Endpoint: "in-process bus"}),
		Ready: func(a string) { agentReady <- a },
	})
	if err != nil {
		return shutdown(err)
	}
	defer ag.Close()
	sources.run("agent", listenFlag(ag.Run, "-agent-metrics"))
	if addr, ok = await(sources, agentReady); !ok {
		return shutdown(nil)
	}
	if addr != "" {
		urls.Agent = "http://" + addr + "/metrics"
	}

	running := []any{"status_page", urls.Status, "judge_api", urls.Judge + "/v1/nodes", "alarm_api", urls.Alarm + "/v1/alerts"}
	if urls.Wave != "" {
		running = append(running, "wave", urls.Wave+"/status", "rows", urls.Rows)
	}
	if urls.Agent != "" {
		running = append(running, "agent_metrics", urls.Agent)
	}
	log.Info("binlake up running", running...)
	if o.Ready != nil {
		o.Ready(urls)
	}

	select {
	case <-ctx.Done():
		log.Info("stopping: sources first, then judge and alarm", "within", o.ShutdownTimeout)
	case <-sources.ctx.Done():
	case <-sinks.ctx.Done():
	}
	if ctx.Err() == nil {
		log.Error("a part stopped; stopping the others")
	}
	if err := shutdown(nil); err != nil {
		return err
	}
	log.Info("binlake up stopped")
	return nil
}

// listenFlag names the flag of `up` that changes a part's address when the part fails
// because another process holds it: "-judge-http 127.0.0.1:8090 is in use: pick another
// with -judge-http" says what to do, where the kernel's "bind: address already in use"
// does not say which of up's four listeners it was.
func listenFlag(run func(context.Context) error, flagName string) func(context.Context) error {
	return func(ctx context.Context) error {
		err := run(ctx)
		if addr, ok := addrInUse(err); ok {
			return fmt.Errorf("%s %s is in use by another process: pick another with %s (port 0 picks a free one)", flagName, addr, flagName)
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

type waveSetup struct{ opts wave.Options }

// newWave defines the capture instance for the source in the coordinator (keeping its
// offset when the definition is unchanged) and opens the rows sink.
func (o *upOptions) newWave(ctx context.Context, c coord.Coordinator, dir string) (*waveSetup, string, func(), error) {
	m := *o.MySQL
	if m.Flavor == "" {
		f, err := detectFlavor(ctx, m)
		if err != nil {
			return nil, "", nil, err
		}
		m.Flavor = f
	}
	inst := m.instance(dir)
	if err := defineInstance(ctx, c, inst, o.Node, o.Logger); err != nil {
		return nil, "", nil, err
	}
	var pub bus.Publisher
	rows := o.Rows
	closeRows := func() {}
	switch rows {
	case "-":
		s := sink.New(o.Stdout)
		pub, closeRows, rows = s, func() { s.Close() }, "stdout"
	default:
		if rows == "" {
			rows = filepath.Join(dir, RowsFile)
		}
		s, err := sink.OpenFile(sink.FileOptions{Path: rows})
		if err != nil {
			return nil, "", nil, err
		}
		pub, closeRows = s, func() { s.Close() }
	}
	pw := m.Password
	return &waveSetup{opts: wave.Options{
		Node: o.Node, HTTPAddr: o.WaveListen, Coord: c, Publisher: pub, Logger: o.Logger,
		Password: func(cluster.Source) (config.Secret, error) { return pw, nil },
	}}, rows, closeRows, nil
}

// defineInstance stores the instance unless the same definition is there already; a
// changed one replaces it, and capture starts again at the source's current position.
func defineInstance(ctx context.Context, c coord.Coordinator, inst *cluster.Instance, node string, logger *slog.Logger) error {
	if err := inst.Validate(); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	want, err := inst.Marshal()
	if err != nil {
		return err
	}
	cur, err := c.Get(ctx, cluster.InstanceKey(inst.ID))
	switch {
	case errors.Is(err, coord.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read instance %s: %w", inst.ID, err)
	case string(cur.Data) == string(want):
		_, err := cluster.MoveInstance(ctx, c, inst.ID, node, nil)
		return err
	default:
		logger.Warn("the source or its subscriptions changed: capture starts again at the source's current position",
			"component", "up", "instance", inst.ID)
		if err := cluster.RemoveInstance(ctx, c, inst.ID); err != nil {
			return err
		}
	}
	_, err = cluster.AddInstance(ctx, c, inst, node, nil)
	return err
}

// detectFlavor asks the server whether it is MariaDB.
func detectFlavor(ctx context.Context, m MySQL) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := client.ConnectWithContext(cctx, m.Addr, m.User, m.Password.Reveal(), "", 10*time.Second)
	if err != nil {
		return "", fmt.Errorf("mysql %s: %w", m, err)
	}
	defer conn.Close()
	if strings.Contains(strings.ToLower(conn.GetServerVersion()), "mariadb") {
		return cluster.FlavorMariaDB, nil
	}
	return cluster.FlavorMySQL, nil
}
