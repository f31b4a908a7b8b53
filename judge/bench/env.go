package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/judge"
)

// env is what a run sets up around the judge: a temporary folder with the generated
// config and the judge's log, and the store it writes to.
type env struct {
	binary, dir, config, log string
	// via says how points reach the judge; topic and group are the run's own with
	// BusKafka, deleted by close.
	via, topic, group string
	brokers           []string
	// store says where the points go, for the log; stored counts them in the engine
	// itself and drop deletes them (nil for SQLite, whose file is in dir).
	store  string
	stored func(context.Context) (int64, error)
	drop   func(context.Context) error
}

// newEnv creates the folder and writes judge.yaml, checked with the judge's own loader
// so that a mistake here is reported before any process starts, and the topic with
// BusKafka.
func newEnv(ctx context.Context, o Options) (*env, error) {
	dir, err := os.MkdirTemp("", "binlake-bench-judge-")
	if err != nil {
		return nil, fmt.Errorf("bench judge: %w", err)
	}
	e := &env{binary: o.Binary, dir: dir, config: filepath.Join(dir, "judge.yaml"), log: filepath.Join(dir, "judge.log"), via: "over HTTP"}
	if o.Bus == BusRemoteWrite {
		e.via = "through POST /api/v1/write (Prometheus remote write, one series per point)"
	}
	if o.Bus == BusKafka {
		// Names of the run's own, so that parallel runs never read each other's points.
		e.topic = fmt.Sprintf("binlake-bench-judge-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
		e.group, e.brokers = e.topic, o.Brokers
		e.via = fmt.Sprintf("through Kafka topic %s (%d partitions)", e.topic, o.Partitions)
	}
	cfg, err := e.judgeConfig(o)
	if err == nil {
		err = os.WriteFile(e.config, cfg, 0o600)
	}
	if err == nil {
		_, err = judge.Load(e.config)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench judge: judge config %s: %w", e.config, err)
	}
	if e.topic != "" {
		if err := benchkit.CreateTopic(ctx, o.Brokers, e.topic, o.Partitions, slog.New(slog.DiscardHandler)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("bench judge: %w", err)
		}
	}
	fmt.Fprintf(o.Out, "bench judge: %s mode; judge config %s, log %s; points come %s and go to %s\n", o.Mode, e.config, e.log, e.via, e.store)
	return e, nil
}

// judgeConfig is the judge.yaml of the run: HTTP ingest only (no bus) or the run's topic
// read from its start, on a port the kernel picks, the chosen store, the production
// placement filters.
func (e *env) judgeConfig(o Options) ([]byte, error) {
	st := map[string]any{"kind": o.Store, "buffer": map[string]any{"capacity": o.Buffer, "batch": o.StoreBatch}}
	switch o.Store {
	case StoreSQLite:
		path := filepath.Join(e.dir, "judge.db")
		st["sqlite"] = map[string]any{"path": path}
		e.store = "sqlite " + path
		e.stored = func(ctx context.Context) (int64, error) { return sqliteCount(ctx, path) }
	case StoreElastic:
		// A prefix of the run's own, so that parallel runs and other users of the
		// engine never see each other's points.
		prefix := fmt.Sprintf("binlake-bench-%d-%d-", os.Getpid(), time.Now().UnixNano()%1e9)
		st["elastic"] = map[string]any{"addresses": []string{o.ES}, "prefix": prefix}
		es := newEngine(o.ES, prefix)
		e.store = fmt.Sprintf("elastic %s, indices %s*", strings.TrimRight(o.ES, "/"), prefix)
		e.stored, e.drop = es.count, es.drop
	}
	bus := map[string]any{"kind": judge.BusNone}
	if e.topic != "" {
		bus = map[string]any{"kind": judge.BusKafka, "brokers": o.Brokers, "topic": e.topic, "partitions": o.Partitions,
			"group": e.group, "start": "oldest"}
	}
	return yaml.Marshal(map[string]any{
		"log":   map[string]any{"level": "info", "format": "text"},
		"http":  map[string]any{"listen": "127.0.0.1:0"},
		"bus":   bus,
		"store": st,
		// -bus remote-write: every point is a series of its own under its own name, named
		// by a node label, and kept as it is: each sample is stored, as a point is.
		"remote_write": map[string]any{"node_label": "node", "unmapped": "keep"},
		"placement": map[string]any{
			"algorithm":  o.Algorithm,
			"thresholds": map[string]float64{"cpu.util": 90, "mem.used_pct": 95},
		},
	})
}

// close deletes what the run created unless keep.
func (e *env) close(keep bool, out io.Writer) error {
	if keep {
		fmt.Fprintf(out, "kept %s and the points in %s\n", e.dir, e.store)
		if e.topic != "" {
			fmt.Fprintf(out, "kept topic %s and group %s\n", e.topic, e.group)
		}
		return nil
	}
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e.drop != nil {
		err = e.drop(ctx)
	}
	if e.topic != "" {
		k := benchkit.NewKafka(e.brokers)
		defer k.Close()
		err = errors.Join(err, k.DeleteTopic(ctx, e.topic), k.DeleteGroup(ctx, e.group))
	}
	os.RemoveAll(e.dir)
	return err
}
