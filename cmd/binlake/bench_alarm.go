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

	"github.com/binlake/binlake/alarm/bench"
)

const benchAlarmUsage = `Usage: binlake bench alarm [flags]

The metric path through Kafka into a real alarm: creates a metric topic of its own
(-partitions), writes an alarm config with -policies policies over -nodes nodes and a
webhook channel pointing at a receiver inside the bench, and starts this binary as
'binlake alarm' in a temporary folder. A producer (asynchronous, batched, keyed by node
like the agents) sends agent-shaped batches of -batch points at -rate points/s for
-duration, and injects -violations points over a policy's threshold at known times.

Prints the offered and sustained points/s (the alarm's binlake_alarm_points_total),
the consumer lag when the load stopped and at the end, the violations that reached the
webhook with their latency (p50, p99), and the CPU of the alarm, the bench and the
Kafka broker (when it runs on this machine). The alarm is stopped and the folder, topic
and consumer group deleted at the end unless -keep.

Examples:
  binlake bench alarm                                 # 100,000 points/s for 30 s
  binlake bench alarm -rate 1000000 -partitions 3`

func runBenchAlarm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench alarm: the binlake binary to start as the alarm: %w", err)
	}
	o := bench.DefaultOptions()
	brokers := benchBrokers()
	fs := flag.NewFlagSet("bench alarm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Bus, "bus", o.Bus, "the metric bus between the producer and the alarm: kafka")
	fs.StringVar(&brokers, "brokers", brokers, "Kafka brokers, comma-separated ($BINLAKE_TEST_KAFKA when set)")
	fs.IntVar(&o.Partitions, "partitions", o.Partitions, "partitions of the run's metric topic")
	fs.IntVar(&o.Policies, "policies", o.Policies, "alert policies, each over every node")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "nodes reporting")
	fs.IntVar(&o.Rate, "rate", o.Rate, "target points/s")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "how long the load lasts")
	fs.IntVar(&o.Batch, "batch", o.Batch, "points per batch (the 8 node-level series, then per-instance wave series)")
	fs.IntVar(&o.Violations, "violations", o.Violations, "violations injected during the load, each on a node of its own")
	fs.StringVar(&o.Binary, "alarm-binary", self, "the binlake binary started as the alarm")
	fs.StringVar(&o.CPUProfile, "alarm-cpuprofile", "", "have the alarm write a CPU profile of its run to this file (go tool pprof)")
	fs.StringVar(&o.Prefix, "prefix", bench.DefaultPrefix, "beginning of the run's topic and consumer group names (its process id and a number follow): one of your own on shared brokers")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary folder (configs, alarm log), the topic and the consumer group")
	fs.Usage = func() { fmt.Fprintln(stderr, benchAlarmUsage+"\n\nFlags:"); fs.PrintDefaults() }
	if err := parseBenchFlags(fs, args, stderr); err != nil {
		return err
	}
	o.Brokers = strings.Split(brokers, ",")
	o.Out = stdout
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	_, err = bench.Run(ctx, o)
	return err
}
