//go:build !agentonly

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/sink"
	"github.com/binlake/binlake/wave/tail"
)

const tailUsage = `Usage: binlake tail [<instance>[/<subscription>]] [flags]

Prints the row messages a wave published: those of an instance's subscription (its topic
read from the instance's definition in the coordinator), of a topic (-topic), or of a
file sink's file (-file, such as binlake up's data/rows.jsonl). Each partition from -from
to its end, the partitions one after the other; then, with -follow (-f), new messages as
they come, until Ctrl-C. Nothing is committed: no consumer group is joined.

  binlake tail orders -config /etc/binlake/wave.yaml     last 10 messages of each partition
  binlake tail orders/audit -zk zk-1:2181 -brokers kafka-1:9092 -from end -follow -o line
  binlake tail -topic binlake.rows -brokers kafka-1:9092 -from 2026-11-29T14:00:00Z
  binlake tail -file data/rows.jsonl -from start -o json
  binlake up --mysql 'repl@tcp(db-1:3306)/' --rows - | binlake tail -file - -o line

-config wave.yaml takes the coordinator and the sink (the Kafka brokers with their TLS and
SASL, or the file) from a wave's config. Otherwise -zk names the coordinator and -brokers
the Kafka cluster, with -tls-* and -sasl-* as its listener needs. A topic that other
instances write to as well shows this instance's rows only.

-o pretty: a header line (topic, partition, offset, time, key, format) and the message
indented.
-o json: one object per message (topic, partition, offset, time, key, format, message).
-o line: one line per row (each row of a canal-protobuf message that groups several):
topic and partition:offset (binlake.rows 2:0, from Kafka and from a file alike, so that
lines of several topics read and merge the same), the event's time, instance ("-" for a
format that names none: canal's, debezium-json), type, table, primary key (the values
in the message's key for a format that names no key column: debezium-json's and
maxwell-json's under partition_by pk; else "-"), the row (for
an update the changed columns, before → after; for a ddl the statement), gtid, xid, and
"commit" on the last row of a transaction, which may be on another partition than the
transaction's other rows.
A message that is in no format known here is shown as it is, with the reason.`

// tailStdin is what -file - reads; tests replace it.
var tailStdin io.Reader = os.Stdin

// errTailDone ends a Read once -n messages were printed.
var errTailDone = errors.New("enough messages")

func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "a wave.yaml: take the coordinator and the sink (Kafka or file) from it")
	zkServers := fs.String("zk", "", "ZooKeeper servers, comma-separated host:port: the coordinator holding the instance")
	root := fs.String("root", "/binlake", "with -zk: the coordinator root")
	zkUser := fs.String("zk-user", "", "with -zk: the ZooKeeper digest user, when the cluster sets coordinator.auth")
	zkPasswordFile := fs.String("zk-password-file", "", "with -zk-user: the file holding its password (or set "+zkPasswordEnv+")")
	topic := fs.String("topic", "", "read this topic instead of an instance's")
	file := fs.String("file", "", "read this file sink's file (binlake up: data/"+RowsFile+") instead of Kafka; - reads the rows piped in (binlake up --rows - | binlake tail -file -)")
	kf := addKafkaFlags(fs)
	partitions := fs.String("partition", "", "only these partitions, comma-separated (default: all)")
	fromFlag := fs.String("from", "-10", "where to start in each partition: start (the oldest message kept), end (new messages only, with -follow), an offset, -N for the last N messages, or an RFC 3339 time (-file -: start or an offset; start by default)")
	follow := fs.Bool("follow", false, "after the end, print new messages as they come, until Ctrl-C (or -n)")
	fs.BoolVar(follow, "f", false, "the same as -follow")
	limit := fs.Int("n", 0, "stop after printing this many messages (0: no limit)")
	output := fs.String("o", tail.Pretty, "output: pretty, json or line")
	format := fs.String("format", tail.Auto, "the messages' format: "+strings.Join(tail.FormatNames(), ", ")+" (auto: detected per message)")
	fs.Usage = func() { fmt.Fprintln(stderr, tailUsage+"\n\nFlags:"); fs.PrintDefaults() }
	// Allow the instance before the flags: binlake tail orders -f.
	var target string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if target == "" && fs.NArg() > 0 {
		target, args = fs.Arg(0), fs.Args()[1:]
	} else {
		args = fs.Args()
	}
	if len(args) > 0 {
		return fmt.Errorf("tail: one instance at a time: %q is extra", strings.Join(args, " "))
	}

	if *file == "-" && !flagSet(fs, "from") {
		*fromFlag = "start" // a stream has no end to count back from
	}
	from, err := tail.ParseFrom(*fromFlag)
	if err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	if err := tail.CheckMode(*output); err != nil {
		return fmt.Errorf("tail: -o: %w", err)
	}
	if err := tail.CheckFormat(*format); err != nil {
		return fmt.Errorf("tail: -format: %w", err)
	}
	if *limit < 0 {
		return fmt.Errorf("tail: -n %d: want 0 (no limit) or more", *limit)
	}
	parts, err := parsePartitions(*partitions)
	if err != nil {
		return err
	}
	kafkaFlags := kf.set()
	switch {
	case *cfgPath != "" && *zkServers != "":
		return errors.New("tail: give one of -config and -zk")
	case *cfgPath != "" && kafkaFlags != "":
		return fmt.Errorf("tail: -config takes the Kafka cluster from its sink.kafka section: drop %s", kafkaFlags)
	case kf.brokers == "" && kafkaFlags != "":
		return fmt.Errorf("tail: %s goes with -brokers", kafkaFlags)
	case *file != "" && kf.brokers != "":
		return errors.New("tail: give one of -file and -brokers")
	case target != "" && *topic != "":
		return fmt.Errorf("tail: give an instance (%s) or -topic, not both", target)
	case target != "" && *file != "" && *cfgPath == "" && *zkServers == "":
		// An instance names its topic through the coordinator: without one, the name
		// cannot pick lines of the file (it asked which coordinator: an outside trial).
		return fmt.Errorf("tail: -file %s reads the whole file: drop the instance name %s (lines of one topic: -topic; the topic of %s: with -config wave.yaml or -zk)", *file, target, target)
	case target == "" && *topic == "" && *file == "":
		fmt.Fprintln(stderr, "Usage: binlake tail [<instance>[/<subscription>]] [flags]  (binlake tail -h explains them)")
		fmt.Fprintln(stderr, "binlake tail: what to read? give an instance (with -config or -zk), -topic or -file")
		return errUsage
	}

	var cfg *wave.Config
	if *cfgPath != "" {
		c, err := wave.Load(*cfgPath)
		if err != nil {
			return err
		}
		cfg = &c
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	instance := ""
	if target != "" {
		var cc config.Coordinator
		switch {
		case cfg != nil:
			cc = cfg.Coordinator
		case *zkServers != "":
			if cc, err = zkCoordinator("tail", *zkServers, *root, *zkUser, *zkPasswordFile); err != nil {
				return err
			}
		default:
			// A topic's name given where an instance belongs reads alike: say how to read it.
			return fmt.Errorf("tail %s: which coordinator holds the instance? give -config wave.yaml or -zk host:port (a topic by its name: -topic %s; binlake up's rows: -file data/%s)", target, target, RowsFile)
		}
		if instance, *topic, err = subscriptionTopic(ctx, cc, target, logger); err != nil {
			return err
		}
	}

	var r bus.Reader
	switch {
	case *file == "-":
		r = &sink.StreamReader{In: tailStdin, Name: "stdin"}
	case *file != "":
		r = &sink.FileReader{Path: *file, Log: logger}
	case cfg != nil && cfg.Sink.Kind == wave.SinkFile:
		r = &sink.FileReader{Path: cfg.Sink.File.Path, Log: logger}
	case cfg != nil && cfg.Sink.Kind == wave.SinkKafka:
		kopts := kafka.Options{ClientID: "binlake-tail", Logger: logger}
		if err := kopts.FromConfig(cfg.Sink.Kafka.Kafka, "sink.kafka"); err != nil {
			return fmt.Errorf("%s: %w", *cfgPath, err)
		}
		b, err := kafka.New(kopts)
		if err != nil {
			return err
		}
		defer b.Close()
		r = b
	case cfg != nil:
		return fmt.Errorf("tail: %s: sink %s: its rows went to the wave's stdout, there is nothing to read back", *cfgPath, cfg.Sink.Kind)
	case kf.brokers != "":
		kopts, err := kf.options("tail", "binlake-tail", logger)
		if err != nil {
			return err
		}
		b, err := kafka.New(kopts)
		if err != nil {
			return fmt.Errorf("tail: %w", err)
		}
		defer b.Close()
		r = b
	default:
		return fmt.Errorf("tail: where are the messages? give -brokers (Kafka), -config wave.yaml or -file")
	}

	p := &tail.Printer{W: stdout, Mode: *output, Format: *format, Instance: instance}
	printed := 0
	err = r.Read(ctx, bus.ReadOptions{Topic: *topic, Partitions: parts, From: from, Follow: *follow}, func(m bus.Message) error {
		ok, err := p.Print(m)
		if err != nil {
			return err
		}
		if ok {
			printed++
		}
		if *limit > 0 && printed >= *limit {
			return errTailDone
		}
		return nil
	})
	if errors.Is(err, errTailDone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	switch {
	case printed > 0 || *file == "" || *file == "-":
	case *topic != "":
		// A rows file holds every topic of its wave: a topic none of its lines has (not
		// written yet, or a typo) printed nothing at all, where Kafka says "unknown topic".
		fmt.Fprintf(stderr, "binlake tail: no message of topic %s in %s (-from %s)\n", *topic, *file, *fromFlag)
	case !*follow:
		// -from past the file's end printed nothing and exited 0 (an outside trial).
		fmt.Fprintf(stderr, "binlake tail: no message in %s from -from %s (the file ends before it, or is empty)\n", *file, *fromFlag)
	}
	return nil
}

// parsePartitions reads -partition: "" (all) or comma-separated partition numbers.
func parsePartitions(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var parts []int
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 0 {
			return nil, fmt.Errorf("tail: -partition %q: want partition numbers (0, 1, …), comma-separated", s)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// subscriptionTopic reads instance[/subscription]'s definition from the coordinator and
// returns the instance's id and the subscription's topic. Without a subscription the
// instance's topic is meant: it must have one (all its subscriptions write to it).
func subscriptionTopic(ctx context.Context, cc config.Coordinator, target string, logger *slog.Logger) (id, topic string, err error) {
	id, subName, _ := strings.Cut(target, "/")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if cc.Kind == config.CoordZK {
		if err := probeZK(cctx, cc.Servers); err != nil {
			return "", "", fmt.Errorf("tail %s: %w", target, err)
		}
	}
	c, _, err := Open(cctx, cc, logger)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	inst, err := cluster.GetInstance(cctx, c, id)
	if err != nil {
		return "", "", fmt.Errorf("tail: %w", err)
	}
	var names, topics []string
	for _, s := range inst.Subscriptions {
		if subName != "" && s.Name == subName {
			return id, s.Topic, nil
		}
		names = append(names, s.Name+" (→ "+s.Topic+")")
		if !slices.Contains(topics, s.Topic) {
			topics = append(topics, s.Topic)
		}
	}
	switch {
	case subName != "":
		return "", "", fmt.Errorf("tail: instance %s has no subscription %q; it has %s", id, subName, strings.Join(names, ", "))
	case len(topics) != 1:
		return "", "", fmt.Errorf("tail: instance %s publishes to %d topics: name one subscription, as %s/NAME: %s", id, len(topics), id, strings.Join(names, ", "))
	}
	return id, topics[0], nil
}
