// Package bench is `binlake bench alarm`: the metric path through Kafka into a real alarm
// process. It creates a metric topic of its own, starts `binlake alarm` (the running
// executable) on a generated config of P policies and a webhook channel that points at a
// receiver inside the bench, and produces agent-shaped batches of N nodes at a target
// rate, keyed by node like the agents. During the load it injects V violations at known
// times and times each one to its webhook's arrival; it reads what the alarm evaluated
// from the alarm's /metrics, the consumer lag from Kafka, and the CPU of the alarm, the
// bench and the broker.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/metric"
)

// BusKafka is the only bus the alarm consumes the metric stream from.
const BusKafka = "kafka"

// DefaultOptions: 1,000 nodes under 100 policies, 100,000 points/s for 30 s in batches
// of 100 points (an agent with its node series and some thirty wave instances), 20
// violations, 3 partitions.
func DefaultOptions() Options {
	return Options{
		Bus: BusKafka, Brokers: []string{benchkit.DefaultBrokers}, Partitions: 3,
		Policies: 100, Nodes: 1000, Rate: 100_000, Duration: 30 * time.Second, Batch: 100, Violations: 20,
		Progress: 2 * time.Second, Drain: 2 * time.Minute,
	}
}

// Options configures a run; start from DefaultOptions. Every field is checked.
type Options struct {
	// Bus is BusKafka.
	Bus string
	// Binary is the binlake executable started as the alarm (the command passes its own).
	Binary string
	// Brokers are the Kafka brokers, host:port.
	Brokers []string
	// Partitions of the run's metric topic.
	Partitions int
	// Policies over Nodes nodes.
	Policies, Nodes int
	// Rate is the target in points/s for Duration, in batches of Batch points.
	Rate     int
	Duration time.Duration
	Batch    int
	// Violations are injected during the load, evenly spread.
	Violations int
	// CPUProfile, when set, is a file the alarm writes a CPU profile of its run to.
	CPUProfile string
	// Keep leaves the temporary folder, the topic and the consumer group in place.
	Keep bool
	// Prefix begins the names of the run's topic and consumer group (its process id and a
	// number follow): on shared brokers, a name of one's own. DefaultPrefix when empty.
	Prefix string
	// Out receives progress lines and the report (nil: discarded).
	Out io.Writer
	// Logger receives the Kafka client's log lines (nil: discarded).
	Logger *slog.Logger
	// Progress is the period of progress lines.
	Progress time.Duration
	// Drain is how long the alarm may take after the load to evaluate the backlog and
	// deliver the violations' notifications.
	Drain time.Duration
}

// DefaultPrefix begins the run's topic and group names unless Options.Prefix is given.
const DefaultPrefix = "binlake-bench-alarm"

// validPrefix is what a Kafka topic's and group's name may hold.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

func (o *Options) validate() error {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !validPrefix.MatchString(o.Prefix) {
		return fmt.Errorf("bench alarm: -prefix %q: want 1 to 100 of A-Z a-z 0-9 . _ - (it begins a Kafka topic's name)", o.Prefix)
	}
	if o.Bus != BusKafka {
		return fmt.Errorf("bench alarm: -bus %q: want %s (the alarm reads the metric stream from Kafka only)", o.Bus, BusKafka)
	}
	if err := errors.Join(benchkit.CheckBinary("alarm", o.Binary), benchkit.CheckBrokers(o.Brokers)); err != nil {
		return fmt.Errorf("bench alarm: %w", err)
	}
	for _, c := range []struct {
		flag string
		v    int
	}{{"-partitions", o.Partitions}, {"-policies", o.Policies}, {"-nodes", o.Nodes}, {"-rate", o.Rate}} {
		if c.v < 1 {
			return fmt.Errorf("bench alarm: %s %d: must be at least 1", c.flag, c.v)
		}
	}
	if o.Batch < len(benchkit.NodeMetrics) || o.Batch > metric.MaxPoints {
		return fmt.Errorf("bench alarm: -batch %d: want %d to %d points (every batch carries the %d node series the policies watch)",
			o.Batch, len(benchkit.NodeMetrics), metric.MaxPoints, len(benchkit.NodeMetrics))
	}
	if o.Violations < 0 || o.Violations > o.Nodes {
		// Each violation is on a node of its own, so that its alert is its own.
		return fmt.Errorf("bench alarm: -violations %d: want 0 to -nodes (%d), one node each", o.Violations, o.Nodes)
	}
	if o.Duration <= 0 {
		return fmt.Errorf("bench alarm: -duration %s: must be positive", o.Duration)
	}
	// A violation rides on its node's next batch: a run shorter than two of a node's
	// batch intervals sends some of them never, and failed as if the alarm had lost them
	// (an outside trial: -duration 1s, 0 of 20 "arrived").
	if every := time.Duration(float64(o.Nodes) * float64(o.Batch) / float64(o.Rate) * float64(time.Second)); o.Violations > 0 && o.Duration < 2*every {
		return fmt.Errorf("bench alarm: -duration %s: a node sends a batch every %s at -rate %d (-nodes %d of -batch %d points), and a violation rides on its node's batch: give -duration %s or more",
			o.Duration, every.Round(time.Millisecond), o.Rate, o.Nodes, o.Batch, (2 * every).Round(time.Second))
	}
	if o.Progress <= 0 || o.Drain <= 0 {
		return fmt.Errorf("bench alarm: progress period %s and drain time %s must be positive", o.Progress, o.Drain)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run sets up the topic, the webhook receiver and the alarm, runs the load, prints the
// report and cleans up.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	hook, err := newReceiver()
	if err != nil {
		return nil, err
	}
	defer hook.close()
	env, err := newEnv(ctx, opts, hook.url)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.close(opts.Keep, opts.Out)) }()
	a, err := startAlarm(ctx, env, opts.CPUProfile, opts.Out)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, a.Stop()) }()
	return runLoad(ctx, opts, env, a, hook)
}
