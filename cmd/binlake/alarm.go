//go:build !agentonly

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/logging"
)

func runAlarm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "test" {
		return runAlarmTest(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("alarm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "/etc/binlake/alarm.yaml", "alarm config file (see deploy/alarm.example.yaml)")
	polPath := fs.String("policies", "/etc/binlake/policies.yaml", "alert policy file (see deploy/policies.example.yaml)")
	listen := fs.String("http", "", "override http.listen (host:port)")
	logLevel := fs.String("log-level", "", "override log.level: debug, info, warn or error")
	check := fs.Bool("check", false, "validate the config and policy files and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	shutdown := config.Duration(DefaultShutdownTimeout)
	fs.Var(&shutdown, "shutdown-timeout", "how long stopping may take after SIGTERM or Ctrl-C: the notification log writes, the "+
		"notifications still grouped or queued; what is left then is handed back to the log for another alarm process and logged")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: binlake alarm [flags]\n       binlake alarm test -policies FILE [flags]  (try policies on stored or recorded history: binlake alarm test -h)\n\nEvaluates alert policies over the metric stream and notifies channels.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := alarm.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.HTTP.Listen = *listen
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("flags: %w", err)
		}
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	logger, err := logging.New(stderr, cfg.Log.Level, cfg.Log.Format)
	if err != nil {
		return err
	}
	pols, err := policy.Load(*polPath)
	if err != nil {
		return err
	}
	channels, chanDesc, err := cfg.BuildChannels(logger)
	if err != nil {
		return fmt.Errorf("%s: %w", *cfgPath, err)
	}
	for _, p := range pols {
		for _, c := range p.Channels {
			if channels[c] == nil {
				return fmt.Errorf("%s:%d: policy %q names channel %q, which %s does not configure", *polPath, p.Line, p.Name, c, *cfgPath)
			}
		}
	}
	if *check {
		for _, m := range unknownMetricMessages(pols, *polPath, knownMetricNames(), knownFromSenders) {
			fmt.Fprintln(stderr, "warning: "+m)
		}
		fmt.Fprintf(stdout, "%s and %s are valid: %d policies, channels %s\n", *cfgPath, *polPath, len(pols), strings.Join(chanDesc, ", "))
		return nil
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	token, err := config.ResolveSecret(cfg.HTTP.Token, alarm.TokenEnv, cfg.HTTP.TokenFile)
	if err != nil {
		return fmt.Errorf("http token: %w", err)
	}

	c, coordDesc, err := Open(ctx, cfg.Coordinator, logger)
	if err != nil {
		return err
	}
	defer c.Close()

	sub, closeBus, busDesc, err := Subscribe(ctx, cfg.Bus, "binlake-alarm", logger)
	if err != nil {
		return err
	}
	defer closeBus()

	logUnknownMetrics(logger, pols, *polPath, knownMetricNames(), knownFromSenders)
	logger.Info("alarm starting", "config", *cfgPath, "policies_file", *polPath, "policies", len(pols),
		"channels", strings.Join(chanDesc, ", "), "bus", busDesc, "coordinator", coordDesc, "listen", cfg.HTTP.Listen,
		"auth", token != "", "shutdown_timeout", shutdown.D())
	return alarm.Run(ctx, alarm.Options{
		Policies: pols, Channels: channels, Subscriber: sub, Coordinator: c,
		Listen: cfg.HTTP.Listen, TLS: cfg.HTTP.TLS, Token: token, ExternalURL: cfg.HTTP.ExternalURL,
		ShutdownTimeout: shutdown.D(),
		Inhibition:      cfg.Inhibit(), GroupWait: cfg.Notify.GroupWait.D(),
		GroupInterval: cfg.Notify.GroupInterval.D(), EvalInterval: cfg.Evaluation.Interval.D(),
		ResolvedRetention: cfg.Evaluation.ResolvedRetention.D(), StaleIntervals: cfg.Evaluation.StaleIntervals,
		Dispatch: notify.DispatcherOptions{Queue: cfg.Notify.Queue, Attempts: cfg.Notify.Attempts, Backoff: cfg.Notify.Backoff.D(),
			MaxBackoff: cfg.Notify.MaxBackoff.D(), Timeout: cfg.Notify.Timeout.D()},
		Logger: logger,
		Ready: func(addr string) {
			fmt.Fprintf(stdout, "alarm serving on %s://%s (alerts at /v1/alerts)\n", scheme(cfg.HTTP.TLS), addr)
		},
	})
}
