//go:build !agentonly

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

func runJudge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "/etc/binlake/judge.yaml", "judge config file (see deploy/judge.example.yaml)")
	listen := fs.String("http", "", "override http.listen (host:port)")
	algorithm := fs.String("algorithm", "", "override placement.algorithm")
	logLevel := fs.String("log-level", "", "override log.level: debug, info, warn or error")
	check := fs.Bool("check", false, "validate the config (and read the token and password files) and exit; connects to nothing")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: binlake judge [flags]\n\nStores the metric stream, analyses load and answers placement requests over HTTP.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := judge.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *listen != "" || *algorithm != "" {
		if *listen != "" {
			cfg.HTTP.Listen = *listen
		}
		if *algorithm != "" {
			cfg.Placement.Algorithm = *algorithm
		}
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
	token, err := config.ResolveSecret(cfg.HTTP.Token, judge.TokenEnv, cfg.HTTP.TokenFile)
	if err != nil {
		return fmt.Errorf("%s: http token: %w", *cfgPath, err)
	}
	if *check {
		if cfg.Store.Kind == judge.StoreElastic {
			if _, _, err := cfg.ElasticCredentials(); err != nil {
				return fmt.Errorf("%s: %w", *cfgPath, err)
			}
		}
		fmt.Fprintf(stdout, "%s is valid: store %s, bus %s, algorithm %s\n", *cfgPath, cfg.Store.Kind, cfg.Bus.Kind, cfg.Placement.Algorithm)
		return nil
	}

	// The store: the sink, opened first and closed last. The judge writes to it through
	// its bounded, retrying buffer (store.buffer), so neither kind is wrapped here.
	var st store.Store
	storeDesc := ""
	switch cfg.Store.Kind {
	case judge.StoreSQLite:
		path := cfg.Store.SQLite.Path
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		s, err := sqlite.Open(sqlite.Options{Path: path})
		if err != nil {
			return err
		}
		st, storeDesc = s, "sqlite "+path
	case judge.StoreElastic:
		s, desc, err := elasticStore(cfg, *cfgPath, logger)
		if err != nil {
			return err
		}
		st, storeDesc = s, desc
	}
	defer st.Close()

	sub, closeBus, busDesc, err := Subscribe(ctx, cfg.Bus, "binlake-judge", logger)
	if err != nil {
		return err
	}
	defer closeBus()
	if sub == nil {
		busDesc = "none (HTTP ingest only)"
	}

	status, err := statusOptions(cfg.Status.AlarmURL, cfg.Status.AlarmCAFile)
	if err != nil {
		return fmt.Errorf("%s: field \"status.alarm_ca_file\": %w", *cfgPath, err)
	}
	logger.Info("judge starting", "config", *cfgPath, "listen", cfg.HTTP.Listen, "store", storeDesc, "bus", busDesc,
		"algorithm", cfg.Placement.Algorithm, "auth", token != "")
	return judge.Run(ctx, judge.Options{
		Store: st, Subscriber: sub, Listen: cfg.HTTP.Listen, TLS: cfg.HTTP.TLS, Token: token,
		Algorithm: cfg.Placement.Algorithm, Filters: cfg.Filters(), Plugins: cfg.Placement.Plugins,
		SnapshotEvery: cfg.Placement.SnapshotEvery.D(), CapacityEvery: cfg.Placement.CapacityEvery.D(), ReservationTTL: cfg.Placement.ReservationTTL.D(),
		EWMAAlpha: cfg.Analysis.EWMAAlpha, HistoricalEvery: cfg.Analysis.HistoricalEvery.D(),
		HistoricalMetrics: cfg.Analysis.HistoricalMetrics, Retention: cfg.Store.Retention.D(), Buffer: cfg.Store.Buffer.Options(),
		Rebalance: new(cfg.Rebalance.Options()), Logger: logger, Status: status,
		Ready: func(addr string) {
			fmt.Fprintf(stdout, "judge serving on %s://%s (status page at /)\n", scheme(cfg.HTTP.TLS), addr)
		},
	})
}

// statusOptions connects the status page to the alarm at alarmURL, when there is one.
func statusOptions(alarmURL, caFile string) (judge.StatusOptions, error) {
	if alarmURL == "" {
		return judge.StatusOptions{}, nil
	}
	hc, err := httpapi.Client(caFile, 2*time.Second)
	if err != nil {
		return judge.StatusOptions{}, err
	}
	return judge.StatusOptions{AlarmURL: alarmURL, Alerts: judge.AlarmAlerts(alarmURL, hc)}, nil
}
