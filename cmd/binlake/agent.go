package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "/etc/binlake/agent.yaml", "agent config file (see deploy/agent.example.yaml)")
	node := fs.String("node", "", "override the config's node id")
	var interval config.Duration
	fs.Var(&interval, "interval", "override the config's collection interval (e.g. 10s)")
	logLevel := fs.String("log-level", "", "override log.level: debug, info, warn or error")
	check := fs.Bool("check", false, "validate the config (and read sink.http.token_file) and exit; connects to nothing")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: binlake agent [flags]\n\nCollects host, wave and process metrics every interval and pushes them to Kafka or the judge.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := agent.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	logger, err := logging.New(stderr, cfg.Log.Level, cfg.Log.Format)
	if err != nil {
		return err
	}
	if *node != "" || interval != 0 {
		if *node != "" {
			cfg.Node = *node
		}
		if interval != 0 {
			cfg.Interval = interval
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("flags: %w", err)
		}
	}
	if *check {
		if h := cfg.Sink.HTTP; cfg.Sink.Kind == agent.SinkHTTP {
			if _, err := config.ResolveSecret(h.Token, agent.TokenEnv, h.TokenFile); err != nil {
				return fmt.Errorf("%s: sink.http token: %w", *cfgPath, err)
			}
		}
		fmt.Fprintf(stdout, "%s is valid: node %s, interval %s, sink %s\n", *cfgPath, cfg.Node, cfg.Interval, cfg.Sink.Kind)
		return nil
	}

	var sink agent.Sink
	switch cfg.Sink.Kind {
	case agent.SinkKafka:
		k := cfg.Sink.Kafka
		kopts := kafka.Options{ClientID: "binlake-agent-" + cfg.Node, Logger: logger}
		if err := kopts.FromConfig(k.Kafka, "sink.kafka"); err != nil {
			return err
		}
		b, err := kafka.New(kopts)
		if err != nil {
			return err
		}
		defer b.Close() // after the agent closed its publisher
		sink = agent.NewBusSink(b, agent.BusSinkOptions{
			Topic: k.Topic, Partitions: k.Partitions, Replication: k.Replication,
			Endpoint: "kafka " + strings.Join(k.Brokers, ","),
		})
	case agent.SinkHTTP:
		h := cfg.Sink.HTTP
		token, err := config.ResolveSecret(h.Token, agent.TokenEnv, h.TokenFile)
		if err != nil {
			return fmt.Errorf("sink.http token: %w", err)
		}
		hc, err := httpapi.Client(h.CAFile, h.Timeout.D())
		if err != nil {
			return fmt.Errorf("%s: field \"sink.http.ca_file\": %w", *cfgPath, err)
		}
		sink = agent.NewHTTPSink(h.URL, token, hc)
	}
	return agent.Run(ctx, agent.Options{Config: cfg, ConfigFile: *cfgPath, Sink: sink, Logger: logger})
}
