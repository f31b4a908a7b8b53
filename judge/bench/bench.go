// Package bench is `binlake bench judge`: it starts a real judge as its own process
// (`binlake judge --config <generated yaml>` in a temporary folder, HTTP ingest only,
// SQLite or Elasticsearch store) and acts as the load generator against its HTTP API.
//
// Placement mode seeds N nodes over POST /v1/metrics, keeps re-sending their batches at
// a steady rate so they stay live and the analyses keep moving, and drives
// POST /v1/placement from C closed-loop keep-alive clients for a fixed time: req/s,
// latency percentiles, bytes per answer, errors by status, the ingest rate achieved
// meanwhile and the CPU both processes used.
//
// Ingest mode sends P points in batches from N nodes with C senders as fast as the
// judge takes them without overflowing its store buffer, and times first send to every
// point written (the judge's GET /healthz counters), then counts the points in the
// engine itself.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/lbplugins"
)

// Modes and stores.
const (
	ModePlacement  = "placement"
	ModeIngest     = "ingest"
	StoreSQLite    = judge.StoreSQLite
	StoreElastic   = judge.StoreElastic
	BusHTTP        = "http"
	BusKafka       = judge.BusKafka
	BusRemoteWrite = "remote-write" // POST /api/v1/write, as Prometheus remote-writes
)

// DefaultES is the Elasticsearch URL of the test services.
const DefaultES = "http://127.0.0.1:9200"

// DefaultOptions are the command's defaults: 1,000 nodes, leastload for 15 s with 1,000
// points/s of ingest (1,000 nodes × 8 series every 8 s, an agent's pace), or 2,000,000
// points in batches of 100 into SQLite, the judge's own store buffer defaults.
//
// Concurrency is 4 × GOMAXPROCS. The clients are closed-loop (a client sends its next
// request when the answer is read), so the judge is only kept busy if more requests
// are in flight than it has cores: one being served per core, one in the socket or
// being read by the client, and the rest of the factor covers the load generator's
// own scheduling on the same machine. More only queues requests inside the judge,
// which raises latency without raising req/s.
func DefaultOptions() Options {
	return Options{
		Mode: ModePlacement, Bus: BusHTTP, Brokers: []string{benchkit.DefaultBrokers}, Partitions: 3,
		Store: StoreSQLite, ES: DefaultES,
		Nodes: 1000, Concurrency: 4 * runtime.GOMAXPROCS(0),
		Duration: 15 * time.Second, Algorithm: "leastload", IngestRate: 1000,
		Points: 2_000_000, Batch: 100,
		Buffer: 100_000, StoreBatch: 5_000, // the judge's store.buffer defaults
		Progress: 2 * time.Second,
	}
}

// Options configures a run; start from DefaultOptions. Every field is checked, none
// is defaulted: a zero count is an error.
type Options struct {
	// Mode is ModePlacement or ModeIngest.
	Mode string
	// Bus is how ingest reaches the judge: BusHTTP (POST /v1/metrics) or, in ingest
	// mode, BusKafka (a topic of the run's own on Brokers, with Partitions, which the
	// judge consumes as its bus).
	Bus        string
	Brokers    []string
	Partitions int
	// Binary is the binlake executable started as the judge. Required (the command
	// passes its own, os.Executable).
	Binary string
	// Store is StoreSQLite (a file in the temporary folder) or StoreElastic.
	Store string
	// ES is the Elasticsearch URL for StoreElastic. The judge writes to indices of a
	// prefix of the run's own, deleted at the end unless Keep.
	ES string
	// Nodes is how many nodes report.
	Nodes int
	// Concurrency is the number of placement clients, or of ingest senders.
	Concurrency int
	// Duration of the placement load.
	Duration time.Duration
	// Algorithm asked for in every placement request.
	Algorithm string
	// IngestRate is the points/s re-sent while placements run (nodes' batches in turn,
	// 8 points each); 0 sends none and declares an interval that keeps the seeded nodes
	// live for the whole run.
	IngestRate int
	// Points to send in ingest mode, in batches of Batch points (at most
	// metric.MaxPoints).
	Points, Batch int
	// Buffer and StoreBatch are the judge's store.buffer.capacity and .batch.
	Buffer, StoreBatch int
	// Keep leaves the temporary folder (config, log, SQLite file) and the
	// Elasticsearch indices in place.
	Keep bool
	// Out receives what is started, progress lines and the report (nil: discarded).
	Out io.Writer
	// Progress is the period of progress lines.
	Progress time.Duration
}

func (o *Options) validate() error {
	if o.Mode != ModePlacement && o.Mode != ModeIngest {
		return fmt.Errorf("bench judge: -mode %q: want %s or %s", o.Mode, ModePlacement, ModeIngest)
	}
	switch o.Bus {
	case BusHTTP:
	case BusRemoteWrite:
		if o.Mode != ModeIngest {
			return fmt.Errorf("bench judge: -bus %s: only with -mode %s", BusRemoteWrite, ModeIngest)
		}
	case BusKafka:
		if o.Mode != ModeIngest {
			return fmt.Errorf("bench judge: -bus %s: only with -mode %s (placements are asked over HTTP)", BusKafka, ModeIngest)
		}
		if err := benchkit.CheckBrokers(o.Brokers); err != nil {
			return fmt.Errorf("bench judge: %w", err)
		}
		if o.Partitions < 1 {
			return fmt.Errorf("bench judge: -partitions %d: must be at least 1", o.Partitions)
		}
	default:
		return fmt.Errorf("bench judge: -bus %q: want %s, %s or %s", o.Bus, BusHTTP, BusRemoteWrite, BusKafka)
	}
	if err := benchkit.CheckBinary("judge", o.Binary); err != nil {
		return fmt.Errorf("bench judge: %w", err)
	}
	switch o.Store {
	case StoreSQLite:
	case StoreElastic:
		u, err := url.Parse(o.ES)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("bench judge: -es %q: want an http:// or https:// URL such as %s", config.Redact(o.ES), DefaultES)
		}
	default:
		return fmt.Errorf("bench judge: -store %q: want %s or %s", o.Store, StoreSQLite, StoreElastic)
	}
	for _, c := range []struct {
		flag string
		v    int
	}{{"-nodes", o.Nodes}, {"-concurrency", o.Concurrency}, {"-points", o.Points}, {"-batch", o.Batch},
		{"-buffer", o.Buffer}, {"-store-batch", o.StoreBatch}} {
		if c.v < 1 {
			return fmt.Errorf("bench judge: %s %d: must be at least 1", c.flag, c.v)
		}
	}
	if o.IngestRate < 0 {
		return fmt.Errorf("bench judge: -ingest-rate %d: must not be negative (0 sends nothing after seeding)", o.IngestRate)
	}
	if o.Batch > metric.MaxPoints {
		return fmt.Errorf("bench judge: -batch %d: a metric batch holds at most %d points", o.Batch, metric.MaxPoints)
	}
	if o.Mode == ModeIngest && o.Buffer < o.Batch {
		// The senders keep what the judge has not written within the buffer's capacity;
		// a batch larger than it could never be sent.
		return fmt.Errorf("bench judge: -buffer %d is smaller than -batch %d", o.Buffer, o.Batch)
	}
	if o.Duration <= 0 {
		return fmt.Errorf("bench judge: -duration %s: must be positive", o.Duration)
	}
	if o.Progress <= 0 {
		return fmt.Errorf("bench judge: progress period %s: must be positive", o.Progress)
	}
	if _, err := lbplugins.Lookup(o.Algorithm); err != nil {
		return fmt.Errorf("bench judge: -algorithm: %w", err)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return nil
}

// Result holds the figures of a run: Placement or Ingest, by mode.
type Result struct {
	Placement *PlacementResult
	Ingest    *IngestResult
	// JudgeCPU and BenchCPU are the CPU time (user + system) the judge process and the
	// load generator used during the measured window; JudgeCPU is negative where
	// /proc/<pid>/stat cannot be read.
	JudgeCPU, BenchCPU time.Duration
	// Window is the measured time: the placement load, or first send to all points
	// written.
	Window time.Duration
}

// Run starts the judge, runs the chosen mode against it, stops the judge, prints the
// report and cleans up.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	env, err := newEnv(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.close(opts.Keep, opts.Out)) }()
	var produced time.Duration
	if opts.Mode == ModeIngest && opts.Bus == BusKafka {
		if produced, err = prefill(ctx, opts, env); err != nil {
			return nil, err
		}
	}
	j, err := startJudge(ctx, env, opts.Out)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, j.Stop()) }()
	if opts.Mode == ModeIngest {
		return runIngest(ctx, opts, env, j, produced)
	}
	return runPlacement(ctx, opts, j)
}
