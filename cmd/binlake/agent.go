package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, rf := newRoleFlags(stderr, "agent", "Usage: "+progName+" agent [flags]\n\nCollects host, wave and process metrics every interval and pushes them to Kafka or the judge.",
		"the config (its secret and TLS files too)")
	node := fs.String("node", "", "override the config's node id")
	var interval config.Duration
	fs.Var(&interval, "interval", "override the config's collection interval (e.g. 10s)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfgPath, check := rf.config, rf.check
	cfg, err := loadConfig(rf, agent.Load)
	if err != nil {
		return err
	}
	if *node != "" {
		cfg.Node = *node
	}
	// Given, it is the interval, 0s too, which Validate then refuses: an -interval 0s
	// ignored ran the config's 10s without a word (an outside trial).
	intervalSet := flagSet(fs, "interval")
	if intervalSet {
		cfg.Interval = interval
	}
	logger, stopProfile, err := rf.start(stderr, &cfg.Log, *node != "" || intervalSet, func() error { return cfg.Validate() })
	if err != nil {
		return err
	}
	defer stopProfile()
	deps, err := prepareAgent(*cfgPath, &cfg, logger)
	if err != nil {
		return err
	}
	warnings := cfg.Warnings()
	for _, w := range warnings {
		logger.Warn(w, "component", "agent", "config", *cfgPath)
	}
	if *check {
		fmt.Fprintf(stdout, "%s is valid: node %s, interval %s, sink %s", *cfgPath, cfg.Node, cfg.Interval, cfg.Sink.Kind)
		if len(warnings) > 0 {
			fmt.Fprintf(stdout, "; %s above", count(len(warnings), "warning", "warnings"))
		}
		fmt.Fprintln(stdout)
		return nil
	}

	var sink agent.Sink
	switch cfg.Sink.Kind {
	case agent.SinkKafka:
		k := cfg.Sink.Kafka
		b, err := kafka.New(*deps.kafka)
		if err != nil {
			return err
		}
		defer b.Close() // after the agent closed its publisher
		sink = agent.NewBusSink(b, agent.BusSinkOptions{
			Topic: k.Topic, Partitions: k.Partitions, Replication: k.Replication,
			Endpoint: "kafka " + strings.Join(k.Brokers, ","), Logger: logger.With("component", "agent"),
		})
	case agent.SinkHTTP:
		sink = agent.NewHTTPSink(cfg.Sink.HTTP.URL, deps.token, deps.http)
	}
	return agent.Run(ctx, agent.Options{Config: cfg, ConfigFile: rf.configFile(), Version: buildinfo.String(), Sink: sink, Logger: logger})
}

// agentDeps is what agent.yaml resolves to before the agent connects anywhere.
type agentDeps struct {
	kafka *kafka.Options // sink kind kafka
	token config.Secret  // sink kind http
	http  *http.Client   // sink kind http
}

// prepareAgent runs every check the agent's start makes beyond agent.Load's: the Kafka
// sink's TLS files and SASL password, the HTTP sink's token and CA. --check calls it and
// stops, start calls it and goes on: one function, so that --check passes exactly the
// configs the agent starts on. Every problem is reported, each at its line.
func prepareAgent(cfgPath string, cfg *agent.Config, logger *slog.Logger) (agentDeps, error) {
	var d agentDeps
	var errs []error
	switch cfg.Sink.Kind {
	case agent.SinkKafka:
		d.kafka = &kafka.Options{ClientID: "binlake-agent-" + cfg.Node, Logger: logger}
		if err := d.kafka.FromConfig(cfg.Sink.Kafka.Kafka, "sink.kafka"); err != nil {
			errs = append(errs, err)
		}
	case agent.SinkHTTP:
		h := cfg.Sink.HTTP
		var err error
		if d.token, err = h.Token().ResolveToken(); err != nil {
			errs = append(errs, config.Bad("sink.http.token_file", "%w", err))
		}
		tc, err := h.TLS.Load("sink.http.tls")
		if err != nil {
			errs = append(errs, err)
		}
		d.http = httpapi.TLSClient(tc, h.Timeout.D())
	}
	return d, config.Locate(cfgPath, errors.Join(errs...))
}
