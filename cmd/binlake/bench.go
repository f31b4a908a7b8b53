//go:build !agentonly

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/bench"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

const benchUsage = `Usage: binlake bench wave|judge|alarm|fleet [flags]

  wave   load N rows into the test MariaDB, capture them to Kafka with a wave pipeline
         (acks from the broker), and time mariadb-binlog decoding the same binlog range
         as a reference; prints both rates and their ratio (-snapshot: time a snapshot
         of the loaded rows instead)
  judge  start a real judge process and load it over HTTP: placement requests with N
         live nodes reporting (req/s, latency percentiles, bytes per answer), or
         -mode ingest: points/s from the first send to every point in the store
  alarm  start a real alarm process on a metric topic of its own and produce agent
         batches to Kafka at a target rate with injected violations: points/s
         evaluated, consumer lag, violation → webhook latency, CPU
  fleet  simulate a heterogeneous fleet of waves and instances with known CPU costs and
         drive a judge through its API round by round like a balancer: the true
         utilisation of its plans (peak, spread, per capacity class) against a greedy
         reference and a lower bound, and the moves

Run 'binlake bench <benchmark> -h' for its flags.`

const benchWaveUsage = `Usage: binlake bench wave [flags]

The binlog path into Kafka: loads -rows rows into a database of its own on the source
(-mysql, PREFIX_<tag>), captures them with a wave's pipeline (this process) to a topic of
its own (PREFIX.<tag>, -partitions) with the broker's acknowledgements, and times
mariadb-binlog decoding the same binlog range as a reference (-mariadb-binlog; "-" skips
it). -snapshot times a snapshot of the loaded rows instead of their capture.

Prints the load's and the capture's rows/s, the reference's and their ratio, the wave's
CPU, and the messages' bytes. The database and the topic are dropped at the end unless
-keep; a run drops the PREFIX_ databases older than 6 h (a killed run's).

Examples:
  binlake bench wave -rows 1000000 -mariadb-binlog -
  binlake bench wave -rows 200000 -format debezium-json -prefix mine_bench

Flags:`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, benchUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "wave":
		return runBenchWave(ctx, args[1:], stdout, stderr)
	case "judge":
		return runBenchJudge(ctx, args[1:], stdout, stderr)
	case "alarm":
		return runBenchAlarm(ctx, args[1:], stdout, stderr)
	case "fleet":
		return runBenchFleet(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "%s\n\nbinlake bench: unknown benchmark %q\n", benchUsage, args[0])
	return errUsage
}

// parseBenchFlags parses a benchmark's flags, which take no further arguments.
func parseBenchFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "Usage: binlake %s [flags]  (binlake %s -h lists them)\nbinlake %s: unexpected argument %q\n", fs.Name(), fs.Name(), fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}

// benchBrokers is the default of -brokers: the test services' Kafka.
func benchBrokers() string {
	if k := os.Getenv("BINLAKE_TEST_KAFKA"); k != "" {
		return k
	}
	return benchkit.DefaultBrokers
}

func runBenchWave(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench wave", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int("rows", 1_000_000, "rows to load and capture")
	prefix := fs.String("prefix", bench.DefaultPrefix, "beginning of the run's database (PREFIX_<tag>) and topic (PREFIX.<tag>) names; a run drops the PREFIX_ databases older than 6 h (a killed run's): one of your own on a shared server")
	perTxn := fs.Int("rows-per-txn", 100, "rows per INSERT transaction")
	addr := fs.String("mysql", "127.0.0.1:3307", "source host:port (log_bin, binlog_format=ROW)")
	user := fs.String("user", "root", "source user (needs REPLICATION SLAVE and CREATE/DROP)")
	pwEnv := fs.String("password-env", "", "environment variable holding the source password")
	pwFile := fs.String("password-file", "", "file holding the source password")
	brokers := fs.String("kafka", benchBrokers(), "Kafka brokers, comma-separated ($BINLAKE_TEST_KAFKA when set, as the other benches' -brokers)")
	partitions := fs.Int("partitions", 3, "partitions of the benchmark topic")
	kbatch := fs.Int("kafka-batch-size", 1000, "producer messages per partition per request (sink.kafka.batch_size)")
	batchRows := fs.Int("batch-rows", 5000, "row messages per publish call (pipeline.batch_rows)")
	inFlight := fs.Int("in-flight", wave.DefaultPublishInFlight, "batches on their way at once (pipeline.publish_in_flight)")
	linger := fs.Duration("linger", time.Millisecond, "how long a produce request that is not full waits (sink.kafka.linger)")
	compression := fs.String("compression", "lz4", "codec of produced batches: none, gzip, snappy, lz4 or zstd (sink.kafka.compression)")
	cpuProfile := fs.String("cpuprofile", "", "write the wave's CPU profile during the capture to this file")
	tracePath := fs.String("trace", "", "write an execution trace of the capture to this file (go tool trace): where the pipeline waited")
	ref := fs.String("mariadb-binlog", "", `reference decoder binary (mariadb-binlog or mysqlbinlog from PATH when empty; "-" to skip)`)
	keep := fs.Bool("keep", false, "keep the benchmark database and topic (a later run drops bench databases older than 6 h: a killed run's)")
	snapshot := fs.Bool("snapshot", false, "time a snapshot of the loaded rows (snapshot.initial on an instance started after the load) instead of their binlog capture")
	chunkRows := fs.Int("chunk-rows", cluster.DefaultSnapshotChunkRows, "with -snapshot: rows per read (snapshot.chunk_rows)")
	format := fs.String("format", rowenc.FormatJSON, "the subscription's message format: "+strings.Join(rowenc.FormatNames(), ", "))
	fs.Usage = func() { fmt.Fprintln(stderr, benchWaveUsage); fs.PrintDefaults() }
	if err := parseBenchFlags(fs, args, stderr); err != nil {
		return err
	}
	// An explicit 0 was taken for "unset", and -rows 0 ran the full million rows (an
	// outside trial).
	for _, c := range []struct {
		name string
		v    int
	}{{"rows", *rows}, {"rows-per-txn", *perTxn}, {"partitions", *partitions}, {"kafka-batch-size", *kbatch},
		{"batch-rows", *batchRows}, {"in-flight", *inFlight}, {"chunk-rows", *chunkRows}} {
		if c.v <= 0 {
			return fmt.Errorf("bench wave: -%s %d: want at least 1", c.name, c.v)
		}
	}
	if *linger <= 0 {
		return fmt.Errorf("bench wave: -linger %s: want more than 0", *linger)
	}
	pw, err := config.ResolveSecret("", *pwEnv, *pwFile)
	if err != nil {
		return fmt.Errorf("bench wave: password: %w", err)
	}
	var profile func() (func(), error)
	if *cpuProfile != "" || *tracePath != "" {
		profile = func() (func(), error) { return startProfiles(*cpuProfile, *tracePath) }
	}
	_, err = bench.Run(ctx, bench.Options{
		Rows: *rows, Prefix: *prefix, RowsPerTxn: *perTxn, Addr: *addr, User: *user, Password: pw,
		Brokers: strings.Split(*brokers, ","), Partitions: *partitions, KafkaBatchSize: *kbatch,
		BatchRows: *batchRows, InFlight: *inFlight, Linger: *linger, Compression: *compression,
		MariadbBinlog: *ref, Keep: *keep, Out: stdout, Profile: profile, Snapshot: *snapshot, ChunkRows: *chunkRows, Format: *format,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	return err
}
