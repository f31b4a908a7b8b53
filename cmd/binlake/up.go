//go:build !agentonly

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/wave/cluster"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./data", "folder for the judge's store ("+StoreFile+"), the coordinator file ("+CoordFile+") and the wave's rows; one binlake up at a time may use it")
	node := fs.String("node", "", "this host's node id, for the agent and the wave (default: the host name)")
	judgeHTTP := fs.String("judge-http", DefaultJudgeListen, "address of the status page and the judge API: host:port, or a port alone on 127.0.0.1 (0 picks a free one)")
	alarmHTTP := fs.String("alarm-http", DefaultAlarmListen, "address of the alarm API (/v1/alerts, /v1/silences): host:port, or a port alone on 127.0.0.1 (0 picks a free one)")
	waveHTTP := fs.String("wave-http", DefaultWaveListen, "address of the wave's /metrics and /status (only with -mysql): host:port, or a port alone on 127.0.0.1 (0 picks a free one)")
	agentMetrics := fs.String("agent-metrics", agent.MetricsListenOff, "address of the agent's own /metrics, or off")
	interval := config.Duration(agent.DefaultInterval)
	fs.Var(&interval, "interval", "how often the agent collects this host's metrics (e.g. 10s, 500ms)")
	retention := config.Duration(DefaultUpRetention)
	fs.Var(&retention, "retention", "how long the judge keeps the points it stores in the data folder ("+StoreFile+"), checked every hour; 0 keeps them all (the file then grows by some 12 MB a day at the default -interval)")
	algorithm := fs.String("algorithm", judge.DefaultAlgorithm, "the judge's default placement algorithm (GET /v1/plugins lists them)")
	policies := fs.String("policies", "", "alert policy file (see deploy/policies.example.yaml); default: built-in policies for a dead agent, CPU, memory, disk, capture lag, a capture that is not running, a wave process down, publish errors and the cluster's capacity. With -channels, every channel a policy names must be there; without, alerts for channels up does not have go to the log")
	channels := fs.String("channels", "", "the alarm's config file (deploy/alarm.example.yaml) or a file with just its channels: section; only the channels are used, and each must build (every missing url_file or password_file is reported, with its line and key). Alerts always go to the log too")
	mysqlDSN := fs.String("mysql", "", "also capture this MySQL/MariaDB source with a wave: user[:password]@tcp(host:port)/ or mysql://user[:password]@host[:port]/ (port 3306 by default, the password URL-encoded; better from $"+MySQLPasswordEnv+", kept out of the process list)")
	flavor := fs.String("mysql-flavor", "", "mysql or mariadb (default: ask the server)")
	tlsCA := fs.String("mysql-tls-ca", "", "connect to the source over TLS, trusting the CA in this PEM file (?tls=true in the DSN trusts the system's CAs)")
	snapshot := fs.Bool("mysql-snapshot", false, "at the first start on the data folder, emit the subscribed tables' existing rows (\"type\":\"snapshot\") before the binlog, without a gap")
	serverID := fs.Uint("mysql-server-id", 0, "replica server id the wave registers with, unique on the source (default: derived from the data folder)")
	var subs stringList
	fs.Var(&subs, "mysql-sub", "a subscription, name=topic:include[,include…][;exclude=…][;events=…][;partition_by=…][;format=…]; repeatable (default: every table outside the system schemas, topic "+DefaultRowsTopic+")")
	rows := fs.String("rows", "", "file the wave appends rows to as JSON lines, or - for stdout, which then carries rows only: the addresses and the log go to stderr (default: "+RowsFile+" in the data folder)")
	shutdown := config.Duration(DefaultShutdownTimeout)
	fs.Var(&shutdown, "shutdown-timeout", "how long stopping may take after Ctrl-C")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: binlake up [flags]

Runs the judge, the alarm and an agent for this host in one process on embedded defaults:
an in-process bus, the judge's SQLite store and the single-node coordinator in the data
folder, alert notifications in the log. No config file, Kafka, Elasticsearch or ZooKeeper
is needed. With -mysql a wave captures that source too and writes its rows to a file or
stdout. Ctrl-C stops it.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("up takes no arguments, got %q (flags go before them?)", fs.Args())
	}
	if flagSet(fs, "mysql") && strings.TrimSpace(*mysqlDSN) == "" {
		// -mysql "$DSN" with DSN unset started up without a capture, and without a word.
		return errors.New("-mysql is empty (an unset variable?): give the source, such as root@tcp(127.0.0.1:3306)/, or leave -mysql out to run without a capture")
	}
	if _, err := logging.ParseLevel(*logLevel); err != nil {
		return fmt.Errorf("bad -log-level %q: want debug, info, warn or error", *logLevel)
	}
	logger, err := logging.New(stderr, *logLevel, *logFormat)
	if err != nil {
		return fmt.Errorf("bad -log-format %q: want text or json", *logFormat)
	}
	if interval.D() < 10*time.Millisecond || interval.D() > 24*time.Hour {
		// The agent's own bounds (agent.Config.Validate): a 25h up started.
		return fmt.Errorf("bad -interval %s: want between 10ms and 24h", interval)
	}
	if err := positiveShutdown(shutdown); err != nil {
		return err
	}
	if retention.D() < 0 {
		return fmt.Errorf("bad -retention %s: want 0 (keep all) or more", retention)
	}
	for _, l := range []struct {
		name string
		v    *string
	}{{"-judge-http", judgeHTTP}, {"-alarm-http", alarmHTTP}, {"-wave-http", waveHTTP}} {
		if *l.v, err = upListen(l.name, *l.v); err != nil {
			return err
		}
	}
	chans, err := LoadChannels(*channels, logger)
	if err != nil {
		return fmt.Errorf("-channels: %w", err)
	}
	pols, toLog, err := LoadPolicies(*policies, chans)
	if err != nil {
		return fmt.Errorf("-policies: %w", err)
	}
	if len(toLog) > 0 {
		logger.Warn("the policies name channels that up does not have without -channels: their alerts go to the log only; -channels with the alarm's config file sends them",
			"component", "up", "policies_file", *policies, "channels", strings.Join(toLog, ", "))
	}
	// With -rows - stdout is the row stream a pipe consumes: nothing else may go there.
	banner := stdout
	if *rows == "-" {
		banner = stderr
	}
	opts := upOptions{
		DataDir: *dataDir, Node: *node, JudgeListen: *judgeHTTP, AlarmListen: *alarmHTTP, WaveListen: *waveHTTP,
		AgentMetrics: *agentMetrics, AgentInterval: interval.D(), Retention: retention.D(), Algorithm: *algorithm,
		Policies: pols, PoliciesFile: *policies, Channels: &chans, Rows: *rows, Stdout: stdout, ShutdownTimeout: shutdown.D(), Logger: logger,
		Ready: func(u upURLs) { printURLs(banner, u) },
	}
	if *mysqlDSN != "" {
		m, err := ParseDSN(*mysqlDSN)
		if err != nil {
			return err
		}
		if pw := os.Getenv(MySQLPasswordEnv); pw != "" {
			m.Password = config.Secret(pw)
		}
		switch *flavor {
		case "", cluster.FlavorMySQL, cluster.FlavorMariaDB:
			m.Flavor = *flavor
		default:
			return fmt.Errorf("bad -mysql-flavor %q: want mysql or mariadb", *flavor)
		}
		if *serverID > 1<<32-1 {
			return fmt.Errorf("bad -mysql-server-id %d: at most %d", *serverID, uint32(1<<32-1))
		}
		m.ServerID, m.Snapshot = uint32(*serverID), *snapshot
		if *tlsCA != "" {
			if m.TLS != nil && m.TLS.InsecureSkipVerify {
				return fmt.Errorf("-mysql-tls-ca with tls=skip-verify in the DSN: the CA would not be checked; give one of them")
			}
			m.TLS = &config.ClientTLS{CAFile: *tlsCA}
			if _, _, err := config.LoadCAPool(*tlsCA); err != nil {
				return fmt.Errorf("-mysql-tls-ca: %w", err)
			}
		}
		for _, s := range subs {
			sub, err := cluster.ParseSubscriptionFlag(s)
			if err != nil {
				return fmt.Errorf("-mysql-sub: %w", err)
			}
			m.Subscriptions = append(m.Subscriptions, sub)
		}
		opts.MySQL = &m
	} else if len(subs) > 0 || *flavor != "" || *serverID != 0 || *rows != "" || *snapshot || *tlsCA != "" {
		return fmt.Errorf("-mysql-sub, -mysql-flavor, -mysql-server-id, -mysql-snapshot, -mysql-tls-ca and -rows need -mysql")
	}
	if *rows == "-" {
		var stop func()
		opts.Stdout, ctx, stop = watchRowsPipe(ctx, stdout, logger)
		defer stop()
	}
	err = runSuite(ctx, opts)
	if cause := context.Cause(ctx); err == nil && errors.Is(cause, errRowsReaderGone) {
		// A supervisor sees the stop for what it was, not a clean one (it exited 0: an
		// outside trial).
		return cause
	}
	return err
}

// printURLs tells the user where to look: on stdout (logs go to stderr), or on stderr
// when stdout carries the rows (-rows -).
func printURLs(w io.Writer, u upURLs) {
	fmt.Fprintf(w, "binlake is up:\n")
	fmt.Fprintf(w, "  status page  %s\n", u.Status)
	fmt.Fprintf(w, "  judge API    %s/v1/nodes  (POST /v1/placement, /openapi.json)\n", u.Judge)
	fmt.Fprintf(w, "  alarm API    %s/v1/alerts\n", u.Alarm)
	if u.Wave != "" {
		fmt.Fprintf(w, "  wave         %s/status  (rows to %s)\n", u.Wave, u.Rows)
	}
	if u.Agent != "" {
		fmt.Fprintf(w, "  agent        %s\n", u.Agent)
	}
	fmt.Fprintf(w, "Ctrl-C stops it.\n")
}
