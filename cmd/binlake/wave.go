//go:build !agentonly

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/sink"
)

func runWave(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, rf := newRoleFlags(stderr, "wave", "Usage: binlake wave [flags]\n\nCaptures the binlogs of the instances assigned to this node and publishes their rows.",
		"the config (secret and TLS files, the ZooKeeper root too)")
	node := fs.String("node", "", "override the config's node id")
	httpAddr := fs.String("http", "", "override the config's http.listen")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfgPath, check := rf.config, rf.check
	cfg, err := loadConfig(rf, wave.Load)
	if err != nil {
		return err
	}
	if *node != "" {
		cfg.Node = *node
	}
	if *httpAddr != "" {
		cfg.HTTP.Listen = *httpAddr
	}
	logger, stopProfile, err := rf.start(stderr, &cfg.Log, *node != "" || *httpAddr != "", cfg.Validate)
	if err != nil {
		return err
	}
	defer stopProfile()
	deps, err := prepareWave(*cfgPath, &cfg, logger)
	if err != nil {
		return err
	}
	if *check {
		fmt.Fprintf(stdout, "%s is valid: node %s, coordinator %s, sink %s\n", *cfgPath, cfg.Node, cfg.Coordinator.Kind, cfg.Sink.Kind)
		return nil
	}

	// Said before anything opens, so that a coordinator or a broker that is down fails a
	// wave that has already said what it was starting.
	judgeURL := cfg.Balancer.Judge
	if judgeURL == "" {
		judgeURL = "none"
	}
	logger.Info("wave starting", "version", buildinfo.String(), "config", rf.configFile(), "node", cfg.Node,
		"listen", "http://"+cfg.HTTP.Listen, "advertise", cmp.Or(cfg.AdvertiseAddr, "the bound listen address"),
		"coordinator", CoordDesc(deps.coord), "sink", waveSinkDesc(&cfg, deps), "balancer", cfg.Balancer.Enabled, "judge", judgeURL, "auto_balance", cfg.Balancer.Auto)

	waiting := serveStarting(cfg.HTTP.Listen, config.HTTPTLS{}, cfg.Node, "coordinator", logger)
	c, _, err := OpenCoordinator(ctx, deps.coord)
	waiting.Stop()
	if err != nil {
		return err
	}
	defer c.Close() // last: the wave resigns its leaderships first

	opts := wave.Options{
		Node: cfg.Node, HTTPAddr: cfg.HTTP.Listen, AdvertiseAddr: cfg.AdvertiseAddr, Coord: c,
		Pipeline: cfg.PipelineOptions(), PollInterval: cfg.Pipeline.PollInterval.D(), Logger: logger,
		Balancer: cfg.Balancer.Options(),
	}
	if deps.planner != nil { // a nil *client.Client in the interface would read as a judge
		opts.Balancer.Planner = deps.planner
	}
	switch cfg.Sink.Kind {
	case wave.SinkKafka:
		k := cfg.Sink.Kafka
		b, err := kafka.New(*deps.kafka)
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

// waveSinkDesc names where the wave's rows go, for its start line.
func waveSinkDesc(cfg *wave.Config, deps waveDeps) string {
	switch cfg.Sink.Kind {
	case wave.SinkKafka:
		desc := "kafka " + strings.Join(cfg.Sink.Kafka.Brokers, ",")
		if deps.kafka.TLS != nil || deps.kafka.SASL != nil {
			desc += " (" + deps.kafka.Security() + ")"
		}
		return desc
	case wave.SinkFile:
		return "file " + cfg.Sink.File.Path
	}
	return cfg.Sink.Kind
}

// waveDeps is what wave.yaml resolves to before the wave connects anywhere.
type waveDeps struct {
	coord   CoordOptions
	kafka   *kafka.Options // sink kind kafka
	planner *client.Client // balancer.judge set
}

// prepareWave runs every check the wave's start makes beyond wave.Load's: the
// coordinator's root and password, the Kafka sink's TLS files and SASL password, the
// judge's token and CA. --check calls it and stops, start calls it and goes on: one
// function, so that --check passes exactly the configs the wave starts on. Every
// problem is reported, each at its line.
func prepareWave(cfgPath string, cfg *wave.Config, logger *slog.Logger) (waveDeps, error) {
	var d waveDeps
	var errs []error
	var err error
	if d.coord, err = CoordinatorOptions(cfg.Coordinator, logger); err != nil {
		errs = append(errs, err)
	}
	if cfg.Sink.Kind == wave.SinkKafka {
		k := cfg.Sink.Kafka
		// One attempt per produce request, bounded by the write timeout: kafka-go's own
		// retries would keep a lost leader's batch in flight for up to 5 × 10 s; the wave
		// retries itself and stops once its leadership is lost (Config.KafkaWriteTimeout).
		d.kafka = &kafka.Options{ClientID: "binlake-wave-" + cfg.Node,
			BatchSize: k.BatchSize, BatchBytes: int64(k.MaxMessageBytes), BatchTimeout: k.Linger.D(), Compression: k.Compression,
			MaxAttempts: 1, WriteTimeout: cfg.KafkaWriteTimeout(), Logger: logger}
		if err := d.kafka.FromConfig(k.Kafka, "sink.kafka"); err != nil {
			errs = append(errs, err)
		}
	}
	if b := cfg.Balancer; b.Judge != "" {
		token, err := b.JudgeToken().Resolve()
		if err != nil {
			errs = append(errs, config.Bad("balancer.judge_token_file", "%w", err))
		}
		tc, err := b.TLS.Load("balancer.tls")
		if err != nil {
			errs = append(errs, err)
		}
		d.planner = &client.Client{URL: b.Judge, Token: token, HTTP: httpapi.TLSClient(tc, client.DefaultTimeout),
			TokenFrom: "balancer.judge_token_file or the variable balancer.judge_token_env names (BINLAKE_JUDGE_TOKEN by default) in " + cmp.Or(cfgPath, "the wave's config")}
	}
	return d, config.Locate(cfgPath, errors.Join(errs...))
}
