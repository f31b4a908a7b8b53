//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
	"github.com/binlake/binlake/judge/store/sqlite"
)

func runJudge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, rf := newRoleFlags(stderr, "judge", "Usage: binlake judge [flags]\n\nStores the metric stream, analyses load and answers placement requests over HTTP.",
		"the config (secret and TLS files, the index prefix too)")
	listen := fs.String("http", "", "override http.listen (host:port)")
	algorithm := fs.String("algorithm", "", "override placement.algorithm")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfgPath, check := rf.config, rf.check
	cfg, err := loadConfig(rf, judge.Load)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.HTTP.Listen = *listen
	}
	if *algorithm != "" {
		cfg.Placement.Algorithm = *algorithm
	}
	logger, stopProfile, err := rf.start(stderr, &cfg.Log, *listen != "" || *algorithm != "", func() error { return cfg.Validate() })
	if err != nil {
		return err
	}
	defer stopProfile()
	deps, err := prepareJudge(*cfgPath, &cfg, logger)
	if err != nil {
		return err
	}
	if *check {
		warnOpenAPI(logger, cfg.HTTP, judge.TokenEnv, deps.token)
		warnUnknownThresholds(logger, cfg.Placement.Thresholds)
		fmt.Fprintf(stdout, "%s is valid: store %s, bus %s, algorithm %s\n", *cfgPath, cfg.Store.Kind, cfg.Bus.Kind, cfg.Placement.Algorithm)
		return nil
	}

	// Said first, and before the store and the bus open, so that one that fails to has
	// been named; the warnings about the config follow it.
	busDesc := "none (HTTP ingest only)"
	if deps.bus != nil {
		busDesc = BusDesc(cfg.Bus, deps.bus)
	}
	alarmURL := cfg.Status.AlarmURL
	if alarmURL == "" {
		alarmURL = "none"
	}
	logger.Info("judge starting", "version", buildinfo.String(), "config", rf.configFile(), "node", cfg.Node,
		"listen", scheme(cfg.HTTP.TLS)+"://"+cfg.HTTP.Listen, "store", judgeStoreDesc(cfg), "bus", busDesc,
		"alarm", alarmURL, "algorithm", cfg.Placement.Algorithm, "auth", deps.token != "")
	warnOpenAPI(logger, cfg.HTTP, judge.TokenEnv, deps.token)
	warnUnknownThresholds(logger, cfg.Placement.Thresholds)

	// The store: the sink, opened first and closed last. The judge writes to it through
	// its bounded, retrying buffer (store.buffer), so neither kind is wrapped here.
	var st store.Store
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
		st = s
	case judge.StoreElastic:
		s, err := elastic.New(*deps.elastic)
		if err != nil {
			return err
		}
		st = s
	}
	defer st.Close()

	waiting := serveStarting(cfg.HTTP.Listen, cfg.HTTP.TLS, "", "bus", logger)
	sub, closeBus, _, err := SubscribeWith(ctx, cfg.Bus, deps.bus)
	waiting.Stop()
	if err != nil {
		return err
	}
	defer closeBus()

	return judge.Run(ctx, judge.Options{
		Store: st, Subscriber: sub, Listen: cfg.HTTP.Listen, TLS: cfg.HTTP.TLS, Token: deps.token,
		Algorithm: cfg.Placement.Algorithm, Filters: cfg.Filters(), Plugins: cfg.Placement.Plugins,
		SnapshotEvery: cfg.Placement.SnapshotEvery.D(), CapacityEvery: cfg.Placement.CapacityEvery.D(), ReservationTTL: cfg.Placement.ReservationTTL.D(),
		EWMAAlpha: cfg.Analysis.EWMAAlpha, HistoricalEvery: cfg.Analysis.HistoricalEvery.D(),
		HistoricalMetrics: cfg.Analysis.HistoricalMetrics, Retention: cfg.Store.Retention.D(), Buffer: cfg.Store.Buffer.Options(),
		Rebalance: new(cfg.Rebalance.Options()), RemoteWrite: cfg.RemoteWrite.Options(), Logger: logger, Status: deps.status,
		Ready: func(addr string) {
			fmt.Fprintf(stdout, "judge serving on %s://%s (status page at /)\n", scheme(cfg.HTTP.TLS), addr)
		},
	})
}

// judgeDeps is what judge.yaml resolves to before the judge connects anywhere.
type judgeDeps struct {
	token   config.Secret
	elastic *elastic.Options // store kind elastic: the client's configuration built
	bus     *kafka.Options   // bus kind kafka; nil for none
	status  judge.StatusOptions
}

// prepareJudge runs every check the judge's start makes on its config beyond
// judge.Load's (the token, the Elasticsearch prefix and credentials, the bus's TLS files
// and SASL password, the alarm's CA) and returns what start needs. --check calls it
// and stops, start calls it and goes on: one function, so that --check passes exactly
// the configs the judge starts on. Every problem is reported, each at its line.
func prepareJudge(cfgPath string, cfg *judge.Config, logger *slog.Logger) (judgeDeps, error) {
	var d judgeDeps
	var errs []error
	token, err := cfg.HTTP.Token().ResolveToken()
	if err != nil {
		errs = append(errs, config.Bad("http.token_file", "%w", err))
	}
	d.token = token
	if cfg.Store.Kind == judge.StoreElastic {
		if d.elastic, err = elasticOptions(*cfg, logger); err != nil {
			errs = append(errs, err)
		}
	}
	if d.bus, err = BusOptions(cfg.Bus, "binlake-judge", logger); err != nil {
		errs = append(errs, err)
	}
	if d.status, err = statusOptions(cfg.Status.AlarmURL, cfg.Status.TLS); err != nil {
		errs = append(errs, err)
	}
	return d, config.Locate(cfgPath, errors.Join(errs...))
}

// statusOptions connects the status page to the alarm at alarmURL, when there is one,
// with status.tls.
func statusOptions(alarmURL string, t *config.ClientTLS) (judge.StatusOptions, error) {
	if alarmURL == "" {
		return judge.StatusOptions{}, nil
	}
	tc, err := t.Load("status.tls")
	if err != nil {
		return judge.StatusOptions{}, err
	}
	hc := httpapi.TLSClient(tc, 2*time.Second)
	return judge.StatusOptions{AlarmURL: alarmURL, Alerts: judge.AlarmAlerts(alarmURL, hc)}, nil
}

// warnUnknownThresholds warns of each placement threshold on a metric nothing known
// sends: a typo (cpu.utl) passed, and the filter never applied. A warning, as for the
// alarm's policies: a sender of one's own may report a name of its own.
func warnUnknownThresholds(logger *slog.Logger, thresholds map[string]float64) {
	known := knownMetricNames()
	for _, name := range slices.Sorted(maps.Keys(thresholds)) {
		if _, ok := slices.BinarySearch(known, name); ok {
			continue
		}
		msg := fmt.Sprintf("placement.thresholds.%s: %q is not %s: the threshold filters nothing", name, name, knownFromSenders)
		if c := policy.Closest(name, known); c != "" {
			msg += "; did you mean " + c + "?"
		}
		logger.Warn(msg)
	}
}
