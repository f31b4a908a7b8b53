//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/binlake/binlake/judge/bench"
)

const benchJudgeUsage = `Usage: binlake bench judge [flags]

Starts a real judge as its own process (this binary, 'binlake judge --config <generated
yaml>' in a temporary folder, HTTP ingest only, on a port the kernel picks) and loads it
over HTTP from this process. The judge is stopped (SIGTERM) and its data deleted at the
end unless -keep.

  -mode placement (default)
      seed -nodes nodes over POST /v1/metrics, keep re-sending their batches at
      -ingest-rate points/s so that they stay live, and drive POST /v1/placement from
      -concurrency keep-alive clients for -duration. Prints req/s, latency p50, p90,
      p99, p99.9 and max, mean bytes per answer, errors by status, the ingest rate
      achieved meanwhile and the CPU of both processes.
  -mode ingest
      send -points points in batches of -batch from -nodes nodes with -concurrency
      senders, as fast as the judge writes them without overflowing its store buffer,
      then count them in the store itself. Prints points/s from the first send to
      every point written, and the judge's CPU. With -bus kafka the points are
      produced into a topic of the run's own before the judge starts; the judge
      consumes it as its bus (committing a batch once stored) and the clock runs
      from the judge serving to every point written: its rate from Kafka to stored.

Examples:
  binlake bench judge                                   # 1,000 nodes, leastload, 15 s
  binlake bench judge -mode ingest                      # 2,000,000 points into SQLite
  binlake bench judge -mode ingest -bus kafka           # the same through Kafka
  binlake bench judge -mode ingest -store elastic -es http://127.0.0.1:9200
  binlake bench judge -json > placement.json            # the figures as JSON, the rest on stderr`

func runBenchJudge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench judge: the binlake binary to start as the judge: %w", err)
	}
	o := bench.DefaultOptions()
	if es := os.Getenv("BINLAKE_TEST_ES"); es != "" {
		o.ES = es
	}
	brokers := benchBrokers()
	fs := flag.NewFlagSet("bench judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Mode, "mode", o.Mode, "placement or ingest")
	fs.StringVar(&o.Bus, "bus", o.Bus, "ingest: how points reach the judge: http (POST /v1/metrics), remote-write (POST /api/v1/write, a snappy protobuf WriteRequest of one series per point, as Prometheus sends) or kafka (a topic of the run's own, which the judge consumes)")
	fs.StringVar(&brokers, "brokers", brokers, "-bus kafka: Kafka brokers, comma-separated ($BINLAKE_TEST_KAFKA when set)")
	fs.IntVar(&o.Partitions, "partitions", o.Partitions, "-bus kafka: partitions of the run's topic")
	fs.StringVar(&o.Store, "store", o.Store, "the judge's store: sqlite (a file in the temporary folder) or elastic (at -es)")
	fs.StringVar(&o.ES, "es", o.ES, "Elasticsearch URL for -store elastic ($BINLAKE_TEST_ES when set); the run writes indices of a prefix of its own")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "nodes reporting metrics")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "placement clients, or ingest senders; 4 × GOMAXPROCS keeps more requests in flight than the judge has cores")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "placement: how long the clients send requests")
	fs.StringVar(&o.Algorithm, "algorithm", o.Algorithm, "placement: the algorithm asked for (random, leastload, balanced, p2c, predictive, utilisation)")
	fs.IntVar(&o.IngestRate, "ingest-rate", o.IngestRate, "placement: points/s re-sent meanwhile, each node's 8 series in turn (0: none after seeding)")
	fs.IntVar(&o.Points, "points", o.Points, "ingest: points to send")
	fs.IntVar(&o.Batch, "batch", o.Batch, "ingest: points per batch (the 8 node-level series, then per-instance wave series)")
	fs.IntVar(&o.Buffer, "buffer", o.Buffer, "the judge's store.buffer.capacity (points)")
	fs.IntVar(&o.StoreBatch, "store-batch", o.StoreBatch, "the judge's store.buffer.batch (points per store write)")
	fs.StringVar(&o.Binary, "judge-binary", self, "the binlake binary started as the judge")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary folder (config, judge log, SQLite file) and the Elasticsearch indices")
	asJSON := fs.Bool("json", false, "write the figures to stdout as one JSON object (rates per second, latencies in ms, CPU in cores); what is started, progress and the text report go to stderr")
	fs.Usage = func() { fmt.Fprintln(stderr, benchJudgeUsage+"\n\nFlags:"); fs.PrintDefaults() }
	if err := parseBenchFlags(fs, args, stderr); err != nil {
		return err
	}
	o.Brokers = strings.Split(brokers, ",")
	o.Out = stdout
	if *asJSON {
		o.Out = stderr
	}
	res, err := bench.Run(ctx, o)
	if err != nil || !*asJSON {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res.Report())
}
