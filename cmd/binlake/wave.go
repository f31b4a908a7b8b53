//go:build !agentonly

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/sink"
)

func runWave(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("wave", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "/etc/binlake/wave.yaml", "wave config file (see deploy/wave.example.yaml)")
	node := fs.String("node", "", "override the config's node id")
	httpAddr := fs.String("http", "", "override the config's http.listen")
	logLevel := fs.String("log-level", "", "override the config's log level: debug, info, warn or error")
	check := fs.Bool("check", false, "validate the config (and read balancer.judge_token_file) and exit; connects to nothing")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: binlake wave [flags]\n\nCaptures the binlogs of the instances assigned to this node and publishes their rows.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := wave.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *node != "" || *httpAddr != "" || *logLevel != "" {
		if *node != "" {
			cfg.Node = *node
		}
		if *httpAddr != "" {
			cfg.HTTP.Listen = *httpAddr
		}
		if *logLevel != "" {
			cfg.Log.Level = *logLevel
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("flags: %w", err)
		}
	}
	logger, err := logging.New(stderr, cfg.Log.Level, cfg.Log.Format)
	if err != nil {
		return fmt.Errorf("%s: field \"log\": %w", *cfgPath, err)
	}
	if *check {
		if cfg.Balancer.Judge != "" {
			if _, err := config.ResolveSecret("", judge.TokenEnv, cfg.Balancer.JudgeTokenFile); err != nil {
				return fmt.Errorf("%s: field \"balancer.judge_token_file\": %w", *cfgPath, err)
			}
		}
		fmt.Fprintf(stdout, "%s is valid: node %s, coordinator %s, sink %s\n", *cfgPath, cfg.Node, cfg.Coordinator.Kind, cfg.Sink.Kind)
		return nil
	}

	c, _, err := Open(ctx, cfg.Coordinator, logger)
	if err != nil {
		return err
	}
	defer c.Close() // last: the wave resigns its leaderships first

	opts := wave.Options{
		Node: cfg.Node, HTTPAddr: cfg.HTTP.Listen, AdvertiseAddr: cfg.AdvertiseAddr, Coord: c,
		Pipeline: cfg.PipelineOptions(), PollInterval: cfg.Pipeline.PollInterval.D(), Logger: logger,
		Balancer: cfg.Balancer.Options(),
	}
	if cfg.Balancer.Judge != "" {
		token, err := config.ResolveSecret("", judge.TokenEnv, cfg.Balancer.JudgeTokenFile)
		if err != nil {
			return fmt.Errorf("%s: field \"balancer.judge_token_file\": %w", *cfgPath, err)
		}
		hc, err := httpapi.Client(cfg.Balancer.JudgeCAFile, client.DefaultTimeout)
		if err != nil {
			return fmt.Errorf("%s: field \"balancer.judge_ca_file\": %w", *cfgPath, err)
		}
		opts.Balancer.Planner = &client.Client{URL: cfg.Balancer.Judge, Token: token, HTTP: hc}
	}
	logger.Info("balancer", "enabled", cfg.Balancer.Enabled, "judge", cfg.Balancer.Judge, "auto", cfg.Balancer.Auto)
	switch cfg.Sink.Kind {
	case wave.SinkKafka:
		k := cfg.Sink.Kafka
		// One attempt per produce request, bounded by the write timeout: kafka-go's own
		// retries would keep a lost leader's batch in flight for up to 5 × 10 s; the wave
		// retries itself and stops once its leadership is lost (Config.KafkaWriteTimeout).
		kopts := kafka.Options{ClientID: "binlake-wave-" + cfg.Node,
			BatchSize: k.BatchSize, BatchBytes: int64(k.MaxMessageBytes), BatchTimeout: k.Linger.D(), Compression: k.Compression,
			MaxAttempts: 1, WriteTimeout: cfg.KafkaWriteTimeout(), Logger: logger}
		if err := kopts.FromConfig(k.Kafka, "sink.kafka"); err != nil {
			return fmt.Errorf("%s: %w", *cfgPath, err)
		}
		b, err := kafka.New(kopts)
		if err != nil {
			return err
		}
		defer b.Close()
		opts.NewPublisher, opts.Topics = b.Publisher, b
		opts.TopicSpec = bus.TopicSpec{Partitions: k.Partitions, Replication: k.Replication, MaxMessageBytes: k.MaxMessageBytes}
		// The record overhead (headers, lengths) counts against the broker's limit.
		opts.MaxMessageBytes = k.MaxMessageBytes - 128
	case wave.SinkFile:
		s, err := sink.OpenFile(sink.FileOptions{Path: cfg.Sink.File.Path, Sync: cfg.Sink.File.Sync})
		if err != nil {
			return err
		}
		defer s.Close()
		opts.Publisher = s
	case wave.SinkStdout:
		s := sink.New(os.Stdout)
		defer s.Close()
		opts.Publisher = s
	}
	return wave.Run(ctx, opts)
}
