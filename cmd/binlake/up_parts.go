//go:build !agentonly

package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/agent/collector"
	wavecollector "github.com/binlake/binlake/agent/collector/wave"
	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/history"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge"
	judgeclient "github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave"
)

// suite is one run of `binlake up`: the parts started so far, in two stages, and where
// they answer.
type suite struct {
	o              *upOptions
	ctx            context.Context
	log            *slog.Logger
	dir            string
	deps           *suiteDeps
	status         *upStatus // the status page's alerts and instance errors (up_status.go)
	sinks, sources *stage
	urls           upURLs
	closers        closeStack // what the sources leave to close once stopped
	// ready receives each part's address once it serves (its Options.Ready).
	judgeReady, alarmReady chan string
}

// errNotReady: a part will not say it is ready, because a part of its stage failed or
// ctx ended; the stage's error says which.
var errNotReady = errors.New("a part did not start")

// newSinks builds the judge and the alarm on the dependencies.
func (s *suite) newSinks(pols []*policy.Policy, chans *Channels) (*judge.Judge, *alarm.Alarm, error) {
	o := s.o
	j, err := judge.New(judge.Options{
		Store: s.deps.store, Subscriber: s.deps.judgeSub, Relay: s.deps.relay, Listen: o.JudgeListen, Algorithm: o.Algorithm,
		Retention: o.Retention, SnapshotEvery: judge.DefaultSnapshotEvery, CapacityEvery: judge.DefaultCapacityEvery,
		Logger: o.Logger, Ready: readyTo(s.judgeReady), Status: s.status.options(),
	})
	if err != nil {
		return nil, nil, err
	}
	al, err := alarm.New(alarm.Options{
		Policies: pols, Channels: chans.Notifiers, Subscriber: s.deps.alarmSub, Coordinator: s.deps.coord,
		Listen: o.AlarmListen, Logger: o.Logger, Ready: readyTo(s.alarmReady), ExternalURL: upExternalURL(o.AlarmListen),
		// The bus starts empty at each start: the windows' past is in the judge's store.
		History: history.Store{Store: s.deps.store, Path: s.deps.storePath, FirstInterval: agent.DefaultInterval},
		// On, as the alarm role has it by default: the shipped policies count on it.
		Inhibition: alarm.Inhibition{Enabled: true},
		// Half the budget: the alarm stops after the sources, within the same deadline.
		ShutdownTimeout: o.ShutdownTimeout / 2,
	})
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	s.status.alarm.Store(al)
	return j, al, nil
}

// startAttrs are the start line's: what runs where.
func (s *suite) startAttrs(pols []*policy.Policy, chans *Channels) []any {
	o := s.o
	attrs := []any{"version", buildinfo.String(), "data", s.dir, "node", o.Node, "store", "sqlite " + s.deps.storePath,
		"coordinator", "single " + filepath.Join(s.dir, CoordFile), "bus", "in-process", "policies", len(pols),
		"channels", strings.Join(chans.Desc, ", "), "agent_interval", o.AgentInterval, "retention", o.Retention}
	if o.MySQL != nil {
		attrs = append(attrs, "mysql", o.MySQL.String())
	}
	return attrs
}

// start runs the sinks, then the sources, each once the one before it serves.
func (s *suite) start(j *judge.Judge, al *alarm.Alarm) error {
	addr, err := s.run(s.sinks, "judge", "-judge-http", s.judgeReady, j.Run)
	if err != nil {
		return err
	}
	s.urls.Judge, s.urls.Status = "http://"+addr, "http://"+addr+"/"
	if addr, err = s.run(s.sinks, "alarm", "-alarm-http", s.alarmReady, al.Run); err != nil {
		return err
	}
	s.urls.Alarm = "http://" + addr
	host, err := newCollector("host", nil)
	if err != nil {
		return err
	}
	collectors := []collector.Collector{host}
	if s.o.MySQL != nil {
		wc, err := s.startWave()
		if err != nil {
			return err
		}
		collectors = append(collectors, wc)
	}
	return s.startAgent(collectors)
}

// run starts a part in st and waits until it serves, for its address.
func (s *suite) run(st *stage, name, flagName string, ready <-chan string, run func(context.Context) error) (string, error) {
	st.run(name, listenFlag(run, flagName))
	select {
	case addr := <-ready:
		return addr, nil
	case <-st.ctx.Done():
	case <-s.ctx.Done():
	}
	return "", errNotReady
}

// startWave captures the MySQL source into the rows sink, and returns the agent's
// collector of the wave's /metrics.
func (s *suite) startWave() (collector.Collector, error) {
	w, rows, closeRows, err := s.o.newWave(s.ctx, s.deps.coord, s.dir)
	if err != nil {
		return nil, err
	}
	s.closers.push(func() error { closeRows(); return nil }) // after the wave stopped
	waveReady := make(chan string, 1)
	w.opts.Ready = readyTo(waveReady)
	// The suite's own judge plans for the balancer: one wave has nothing to move, but
	// the plans keep the cluster's load figures (and the capacity alert) current.
	w.opts.Balancer.Planner = &judgeclient.Client{URL: s.urls.Judge}
	wv, err := wave.New(w.opts)
	if err != nil {
		return nil, err
	}
	s.status.wave.Store(wv)
	addr, err := s.run(s.sources, "wave", "-wave-http", waveReady, wv.Run)
	if err != nil {
		return nil, err
	}
	s.urls.Wave, s.urls.Rows = "http://"+addr, rows
	return newCollector(wavecollector.Name, func(cfg any) {
		cfg.(*wavecollector.Config).URL = s.urls.Wave + "/metrics"
	})
}

// startAgent collects this host (and the wave) into the in-process bus.
func (s *suite) startAgent(collectors []collector.Collector) error {
	o := s.o
	acfg := agent.DefaultConfig()
	acfg.Node, acfg.Interval, acfg.HTTP.Listen = o.Node, config.Duration(o.AgentInterval), o.AgentMetrics
	agentReady := make(chan string, 1)
	ag, err := agent.New(agent.Options{
		Config: acfg, ConfigFile: "(binlake up)", Version: buildinfo.String(), Collectors: collectors, Logger: o.Logger,
		Sink:  agent.NewBusSink(s.deps.bus, agent.BusSinkOptions{Topic: metric.Topic, Partitions: 1, Endpoint: "in-process bus"}),
		Ready: readyTo(agentReady),
	})
	if err != nil {
		return err
	}
	s.closers.push(ag.Close)
	addr, err := s.run(s.sources, "agent", "-agent-metrics", agentReady, ag.Run)
	if err != nil {
		return err
	}
	if addr != "" {
		s.urls.Agent = "http://" + addr + "/metrics"
	}
	return nil
}

func (s *suite) logRunning() {
	u := s.urls
	running := []any{"status_page", u.Status, "judge_api", u.Judge + "/v1/nodes", "alarm_api", u.Alarm + "/v1/alerts"}
	if u.Wave != "" {
		running = append(running, "wave", u.Wave+"/status", "rows", u.Rows)
	}
	if u.Agent != "" {
		running = append(running, "agent_metrics", u.Agent)
	}
	s.log.Info("binlake up running", running...)
}

// shutdown stops the sources, then the sinks, within ShutdownTimeout, and returns cause
// or else the first part's error.
func (s *suite) shutdown(cause error) error {
	budget := s.o.ShutdownTimeout
	deadline := time.NewTimer(budget)
	defer deadline.Stop()
	errSrc := s.sources.stop(deadline.C, budget)
	errSink := s.sinks.stop(deadline.C, budget)
	return cmp.Or(cause, errSrc, errSink)
}

func (s *suite) closeParts() { s.closers.close() }

// readyTo is a part's Ready option that hands its address to ch (buffered: it is sent once).
func readyTo(ch chan<- string) func(string) { return func(a string) { ch <- a } }

// upExternalURL is the alarm's URL as up's own machine reaches it, for the links its
// notifications carry (an Alertmanager's generatorURL): "" for a port picked at start
// (0), unknown until it listens.
func upExternalURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
