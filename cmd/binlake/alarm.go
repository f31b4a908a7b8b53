//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/history"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
)

func runAlarm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "test" {
		return runAlarmTest(ctx, args[1:], stdout, stderr)
	}
	fs, rf := newRoleFlags(stderr, "alarm", "Usage: binlake alarm [flags]\n       binlake alarm test -policies FILE [flags]  (try policies on stored or recorded history: binlake alarm test -h)\n\nEvaluates alert policies over the metric stream and notifies channels.",
		"the config and policy files (secret and TLS files too)")
	polPath := fs.String("policies", "/etc/binlake/policies.yaml", "alert policy file (see deploy/policies.example.yaml)")
	listen := fs.String("http", "", "override http.listen (host:port)")
	judgeURL := fs.String("judge", "", "a judge's URL (http://judge:8090): the metric names it has seen count as known, "+
		"so that only a policy watching a name nothing sends (a typo) is warned of; with -check this is the one connection made")
	judgeCAFile := fs.String("judge-ca-file", "", "the CA of the judge's certificate, for an https -judge the system does not trust")
	shutdown := config.Duration(DefaultShutdownTimeout)
	fs.Var(&shutdown, "shutdown-timeout", "how long stopping may take after SIGTERM or Ctrl-C: the notification log writes, the "+
		"notifications still grouped or queued; what is left then is handed back to the log for another alarm process and logged")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := checkBaseURLFlag("-judge", *judgeURL, "the judge's metric names need none"); err != nil {
		return err
	}
	if err := positiveShutdown(shutdown); err != nil {
		return err
	}
	cfgPath, check := rf.config, rf.check
	cfg, err := loadConfig(rf, alarm.Load)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.HTTP.Listen = *listen
	}
	logger, stopProfile, err := rf.start(stderr, &cfg.Log, *listen != "", func() error { return cfg.Validate() })
	if err != nil {
		return err
	}
	defer stopProfile()
	if defaultMissing(fs, "policies") {
		return needPolicies("alarm", *polPath)
	}
	deps, err := prepareAlarm(*cfgPath, *polPath, &cfg, logger)
	known, knownFrom, judgeErr := knownToJudge(ctx, *judgeURL, *judgeCAFile)
	if err != nil {
		// A misspelt metric (cpu.utl) is said in the run that reports the file's errors,
		// not in the one after they are fixed.
		for _, m := range unknownMetricMessages(deps.policies, *polPath, known, knownFrom) {
			fmt.Fprintln(stderr, "warning: "+m)
		}
		return err
	}
	if *check {
		warnOpenAPI(logger, cfg.HTTP.HTTP, alarm.TokenEnv, deps.token)
		if judgeErr != nil {
			fmt.Fprintln(stderr, "warning: "+judgeErr.Error())
		}
		for _, m := range unknownMetricMessages(deps.policies, *polPath, known, knownFrom) {
			fmt.Fprintln(stderr, "warning: "+m)
		}
		history := ""
		if lb := alarm.Lookback(deps.policies); lb > 0 && deps.bus != nil {
			history = fmt.Sprintf("; the %s of history before a partition's first message is read back into the windows (the policies' longest look back)", lb)
		}
		fmt.Fprintf(stdout, "%s and %s are valid: %s, channels %s%s\n", *cfgPath, *polPath, count(len(deps.policies), "policy", "policies"), strings.Join(deps.chanDesc, ", "), history)
		return nil
	}

	// Said first, and before the coordinator and the bus open, so that one that fails to
	// has been named; the warnings about the config follow it.
	busDesc := "none"
	if deps.bus != nil {
		busDesc = BusDesc(cfg.Bus, deps.bus)
	}
	logger.Info("alarm starting", "version", buildinfo.String(), "config", rf.configFile(), "policies_file", *polPath, "policies", len(deps.policies),
		"channels", strings.Join(deps.chanDesc, ", "), "bus", busDesc, "coordinator", CoordDesc(deps.coord),
		"listen", scheme(cfg.HTTP.TLS)+"://"+cfg.HTTP.Listen, "auth", deps.token != "", "shutdown_timeout", shutdown.D())
	warnOpenAPI(logger, cfg.HTTP.HTTP, alarm.TokenEnv, deps.token)
	if judgeErr != nil {
		logger.Warn(judgeErr.Error())
	}
	logUnknownMetrics(logger, deps.policies, *polPath, known, knownFrom)

	waiting := serveStarting(cfg.HTTP.Listen, cfg.HTTP.TLS, "", "coordinator", logger)
	c, _, err := OpenCoordinator(ctx, deps.coord)
	if err != nil {
		waiting.Stop()
		return err
	}
	defer c.Close()

	waiting.Waiting("bus")
	sub, reader, closeBus, err := subscribeReading(ctx, cfg.Bus, deps.bus)
	waiting.Stop()
	if err != nil {
		return err
	}
	defer closeBus()
	var hist alarm.History
	if reader != nil {
		hist = history.Bus{Reader: reader, Topic: cfg.Bus.Topic}
	}
	return alarm.Run(ctx, alarm.Options{
		History:  hist,
		Policies: deps.policies, Channels: deps.channels, Subscriber: sub, Coordinator: c,
		Listen: cfg.HTTP.Listen, TLS: cfg.HTTP.TLS, Token: deps.token, ExternalURL: cfg.HTTP.ExternalURL,
		ShutdownTimeout: shutdown.D(),
		Inhibition:      cfg.Inhibit(), GroupWait: cfg.Notify.GroupWait.D(),
		GroupInterval: cfg.Notify.GroupInterval.D(), EvalInterval: cfg.Evaluation.Interval.D(),
		ResolvedRetention: cfg.Evaluation.ResolvedRetention.D(), StaleIntervals: cfg.Evaluation.StaleIntervals,
		Dispatch: notify.DispatcherOptions{Queue: cfg.Notify.Queue, Attempts: cfg.Notify.Attempts, Backoff: cfg.Notify.MinBackoff.D(),
			MaxBackoff: cfg.Notify.MaxBackoff.D(), Timeout: cfg.Notify.Timeout.D()},
		Logger: logger,
		Ready: func(addr string) {
			fmt.Fprintf(stdout, "alarm serving on %s://%s (alerts at /v1/alerts)\n", scheme(cfg.HTTP.TLS), addr)
		},
	})
}

// needPolicies is the error of cmd (alarm, alarm test) run without -policies where its
// default does not exist: "open /etc/binlake/policies.yaml" alone names a file the user
// never gave.
func needPolicies(cmd, def string) error {
	return fmt.Errorf("%s: -policies FILE is needed: the default, %s, does not exist (deploy/policies.yaml is the set binlake up runs built in; deploy/policies.example.yaml a commented example)", cmd, def)
}

// alarmDeps is what alarm.yaml and the policy file resolve to before the alarm connects
// anywhere.
type alarmDeps struct {
	policies []*policy.Policy
	channels map[string]notify.Notifier
	chanDesc []string
	token    config.Secret
	bus      *kafka.Options // bus kind kafka; nil for none
	coord    CoordOptions
}

// prepareAlarm runs every check the alarm's start makes beyond alarm.Load's: the
// policies and the channels they name, each channel's secrets, the token, the bus's
// TLS files and SASL password, the coordinator's root and password. --check calls it and
// stops, start calls it and goes on: one function, so that --check passes exactly the
// files the alarm starts on. The config's problems are all reported, each at its line.
func prepareAlarm(cfgPath, polPath string, cfg *alarm.Config, logger *slog.Logger) (alarmDeps, error) {
	var d alarmDeps
	pols, polErr := loadAlarmPolicies(polPath, cfg, cfgPath)
	d.policies = pols
	var errs []error
	var err error
	if d.channels, d.chanDesc, err = cfg.BuildChannels(logger); err != nil {
		errs = append(errs, err)
	}
	if d.token, err = cfg.HTTP.Token().ResolveToken(); err != nil {
		errs = append(errs, config.Bad("http.token_file", "%w", err))
	}
	if d.bus, err = BusOptions(cfg.Bus, "binlake-alarm", logger); err != nil {
		errs = append(errs, err)
	}
	if d.coord, err = CoordinatorOptions(cfg.Coordinator, logger); err != nil {
		errs = append(errs, err)
	}
	// The policy file's problems, the channels its policies name among them, and the
	// config's are reported together: one run shows them all.
	return d, errors.Join(polErr, config.Locate(cfgPath, errors.Join(errs...)))
}

// loadAlarmPolicies reads the policy file at polPath and checks every channel its
// policies name against cfg's (from cfgPath); with cfg nil, the channels are not
// checked. The alarm's start, --check and alarm test -config read the file so: every
// problem of the file in one error, in the file's order (policy.ParseWith).
func loadAlarmPolicies(polPath string, cfg *alarm.Config, cfgPath string) ([]*policy.Policy, error) {
	if cfg == nil {
		return policy.Load(polPath)
	}
	return policy.LoadWith(polPath, &policy.ChannelSet{In: cfgPath, Has: func(c string) bool {
		_, ok := cfg.Channels[c]
		return ok
	}})
}
