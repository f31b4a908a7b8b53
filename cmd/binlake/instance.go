//go:build !agentonly

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/cluster"
)

const instanceUsage = `Usage: binlake instance <add|list|show|remove|move|set|snapshot|rebalance> [flags] [id]

  add    -f instance.yaml [-node wave-1]   store an instance and assign it (judge placement
                                            with -judge, weighing the source's binlog bytes/s
                                            measured over -measure, else a random live wave);
                                            says how the wave was chosen; reads the source
                                            first as --check -connect does
  add    --check -f instance.yaml           check a definition (deploy/instance.example.yaml
         [-connect]                         has every key) without connecting to anything;
                                            -connect reads the source too, as add does: a
                                            server_id the source or a replica of it has
                                            refuses, binlog_format other than ROW,
                                            binlog_row_image other than FULL and log_bin OFF
                                            warn (they stop the instance at such an event)
  list                                      ids, assignment, leader, state (with the error's
                                            class) and since when; "(last known)" when the
                                            wave that recorded it is gone (or another leads)
  show   <id> [-sample 2s] [-json]          leader, state and error, position, lag, rows/s
  remove <id>                               delete the instance, its offset and status:
                                            withdraws it first, waits for its wave to let
                                            go, then deletes it (again finishes a removal
                                            that stopped half-way); remove and add again
                                            to change its source or start
  move   <id> [-node wave-2]                assign to another wave (judge or random when
                                            -node is empty); the new wave resumes from
                                            the committed offset
  set    <id> [-on-unreadable skip|stop]   change what the instance does with a change it
         [-on-too-large skip|stop]          cannot publish, in place: its wave starts again
                                            from the committed offset (an instance stopped
                                            on statement_dml or row_image_partial gets past
                                            it with -on-unreadable skip, nothing after lost)
  set    <id> -f instance.yaml              redefine it in place, from the committed offset:
                                            subscriptions, user, password, server_id and the
                                            rest; the source's address, flavor and start
                                            stay (a file that changes them is refused)
  snapshot <id> [-tables db.t1,db.t2]       emit the tables' existing rows (default: every
                                            subscribed table) as "snapshot" messages while
                                            the binlog streams on; progress in show; an
                                            instance stopped on a purged binlog restarts
                                            at the source's end with it
  rebalance [-apply] [-wait 30m] [-json]    the judge's plan to even the waves' load (a
                                            dry run); -apply has the cluster's balancer
                                            execute it one move at a time, followed here

add and move -node must name a live wave (the error lists them); -force assigns to a wave
yet to start. A judge's choice that is not a live wave (its host's agent still reports)
is excluded and the judge asked again.

Coordinator flags (every subcommand): -zk host:port,… -root /binlake (with -zk-user and
-zk-password-file when the cluster sets coordinator.auth), or -config wave.yaml
to use that file's coordinator section (and, for add, move and rebalance, its
balancer.judge when -judge is not given), or
-data DIR for the folder of a 'binlake up' (the default, ./data, when neither -zk nor
-config is given). up's coordinator is a single-process file that a running up holds:
stop up (Ctrl-C) first, run binlake instance, then start up again on the same folder;
while up runs, its wave's /status shows the instance. -judge http://judge:8090 for
placement and rebalance plans, with -judge-token-file (or BINLAKE_JUDGE_TOKEN) when the
judge has a token.`

// zkPasswordEnv holds the ZooKeeper digest password of -zk-user (it wins over the file).
const zkPasswordEnv = "BINLAKE_ZK_PASSWORD"

// instanceFlags are the flags of binlake instance: the coordinator's and the judge's,
// which every subcommand takes, and each subcommand's own (its help names it).
type instanceFlags struct {
	zkServers, root, zkUser, zkPasswordFile, cfgPath, dataDir *string
	judgeURL, judgeCAFile, judgeTokenFile                     *string
	file, node, tables, onUnreadable, onTooLarge              *string
	check, connect, force, asJSON, apply                      *bool
	sample, wait, measure                                     *time.Duration
}

func newInstanceFlags(fs *flag.FlagSet) *instanceFlags {
	return &instanceFlags{
		zkServers:      fs.String("zk", "", "ZooKeeper servers, comma-separated host:port"),
		root:           fs.String("root", "/binlake", "coordinator root"),
		zkUser:         fs.String("zk-user", "", "with -zk: the ZooKeeper digest user, when the cluster sets coordinator.auth"),
		zkPasswordFile: fs.String("zk-password-file", "", "with -zk-user: the file holding its password (or set "+zkPasswordEnv+")"),
		cfgPath:        fs.String("config", "", "take the coordinator from this wave.yaml"),
		dataDir:        fs.String("data", "./data", "the data folder of a binlake up, whose coordinator file ("+CoordFile+") to use when neither -zk nor -config is given; up must be stopped"),
		judgeURL:       fs.String("judge", "", "judge base URL for placement (POST /v1/placement) and rebalance plans (POST /v1/rebalance)"),
		judgeCAFile:    fs.String("judge-ca-file", "", "the CA of the judge's certificate, for an https -judge the system does not trust"),
		judgeTokenFile: fs.String("judge-token-file", "", "file holding the judge's token, when it has one (or set "+judge.TokenEnv+")"),
		file:           fs.String("f", "", "add, set: instance definition (YAML)"),
		check:          fs.Bool("check", false, "add: check the -f definition (every key and value) and exit, connecting to nothing"),
		connect:        fs.Bool("connect", false, "add --check: also read the source from here, as add does (its password here): binlog settings and server_id"),
		node:           fs.String("node", "", "add, move: the wave to assign to (skips placement); it must be live"),
		force:          fs.Bool("force", false, "add, move: assign to a -node that is not live (a wave yet to start); until it is, a running balancer places the instance elsewhere after its failover grace"),
		sample:         fs.Duration("sample", 2*time.Second, "show: how long to watch the offset for rows/s (0 to skip)"),
		asJSON:         fs.Bool("json", false, "show, list: print JSON"),
		apply:          fs.Bool("apply", false, "rebalance: have the balancer execute the plan"),
		wait:           fs.Duration("wait", 30*time.Minute, "rebalance -apply: how long to follow the run"),
		tables:         fs.String("tables", "", "snapshot: comma-separated db.table names (default: every subscribed table)"),
		onUnreadable:   fs.String("on-unreadable", "", "set: stop or skip a change the binlog holds but not as rows the wave can publish"),
		onTooLarge:     fs.String("on-too-large", "", "set: stop or skip a row message larger than the sink accepts"),
		measure:        fs.Duration("measure", 2*time.Second, "add -judge: how long to measure the source's binlog growth, sent to the judge as the instance's expected bytes/s (0: do not)"),
	}
}

// instanceCmd is one run of a binlake instance subcommand: its flags, the instance id
// it names, and the coordinator and judge it talks to.
type instanceCmd struct {
	sub, id string
	f       *instanceFlags
	ctx     context.Context // the command's; cctx bounds the coordinator's operations
	cctx    context.Context
	out     io.Writer
	c       coord.Coordinator
	placer  cluster.Placer
	planner balancer.Planner
	jp      *judgePlacer
	// judgeFrom says where the judge's URL came from, for saying how a wave was chosen.
	judgeFrom string
	// judgeBalancer is -config's balancer section when the judge's URL came from it: its
	// token and tls block serve where no flag says otherwise.
	judgeBalancer *wave.BalancerConfig
	// upData says the coordinator is that of an up's -data folder: up is stopped, so no
	// wave is live, and the advice differs.
	upData bool
	// coordDesc names the coordinator (CoordDesc), for saying where nothing was found.
	coordDesc string
}

// instanceSubcommands run each subcommand once the coordinator is open.
var instanceSubcommands = map[string]func(*instanceCmd) error{
	"add": (*instanceCmd).add, "list": (*instanceCmd).list, "show": (*instanceCmd).show, "remove": (*instanceCmd).remove,
	"move": (*instanceCmd).move, "set": (*instanceCmd).set, "snapshot": (*instanceCmd).snapshot, "rebalance": (*instanceCmd).rebalance,
}

func runInstance(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, instanceUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, args := args[0], args[1:]
	run, ok := instanceSubcommands[sub]
	if !ok {
		usageLine, _, _ := strings.Cut(instanceUsage, "\n")
		fmt.Fprintf(stderr, "%s  (binlake instance -h explains them)\nbinlake instance: unknown subcommand %q\n", usageLine, sub)
		return errUsage
	}
	fs := flag.NewFlagSet("instance "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := newInstanceFlags(fs)
	fs.Usage = func() { fmt.Fprintln(stderr, instanceUsage+"\n\nFlags:"); fs.PrintDefaults() }
	// Allow the id before the flags: binlake instance show orders -json.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if id == "" && len(rest) > 0 {
		// The id after some flags: the flags after it are read too ("-data d orders
		// -json").
		id = rest[0]
		if err := parseFlags(fs, rest[1:]); err != nil {
			return err
		}
		rest = fs.Args()
	}
	// An argument no subcommand reads was dropped without a word ("instance rebalance
	// orders" planned for every instance).
	switch {
	case id != "" && (sub == "add" || sub == "list" || sub == "rebalance"):
		return fmt.Errorf("instance %s takes no instance id, got %q", sub, id)
	case len(rest) > 0:
		return fmt.Errorf("instance %s: unexpected argument %q after the instance id", sub, rest[0])
	}
	if *f.sample < 0 || *f.wait < 0 {
		return fmt.Errorf("instance %s: -sample and -wait take a duration of 0 or more", sub)
	}

	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if n := btoi(set["data"]) + btoi(set["zk"]) + btoi(set["config"]); n > 1 {
		return fmt.Errorf("instance %s: give one of -data, -zk and -config", sub)
	}
	if *f.connect && !*f.check {
		return fmt.Errorf("instance %s: -connect is for instance add --check (add itself always reads the source)", sub)
	}
	if *f.check {
		if sub != "add" {
			return fmt.Errorf("instance %s: --check is for instance add", sub)
		}
		return checkInstanceFile(ctx, *f.file, *f.connect, stdout)
	}
	// Before anything opens; -config's balancer.judge was checked by wave.Load.
	if err := checkBaseURLFlag("-judge", *f.judgeURL, "use -judge-token-file"); err != nil {
		return fmt.Errorf("instance %s: %w", sub, err)
	}
	ic := &instanceCmd{sub: sub, id: id, f: f, ctx: ctx, out: stdout, judgeFrom: "-judge"}
	cc, unlock, err := ic.coordinator()
	if err != nil {
		return err
	}
	defer unlock() // after c.Close below: up's folder stays ours until its file is saved
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ic.cctx = cctx
	if cc.Kind != config.CoordSingle {
		if err := probeZK(cctx, cc.Servers); err != nil {
			return fmt.Errorf("instance %s: %w", sub, err)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, desc, err := Open(cctx, cc, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	ic.c, ic.coordDesc = c, desc
	if err := ic.openJudge(); err != nil {
		return err
	}
	return run(ic)
}

// coordinator is the coordinator the flags name: -config's, -zk's, or by default the
// file of an up's -data folder, which it holds until unlock.
func (ic *instanceCmd) coordinator() (cc config.Coordinator, unlock func(), err error) {
	f, sub := ic.f, ic.sub
	unlock = func() {}
	switch {
	case *f.cfgPath != "":
		cfg, err := wave.Load(*f.cfgPath)
		if err != nil {
			return cc, unlock, err
		}
		if *f.judgeURL == "" && (sub == "rebalance" || sub == "add" || sub == "move") {
			*f.judgeURL, ic.judgeFrom = cfg.Balancer.Judge, "balancer.judge of "+*f.cfgPath
			ic.judgeBalancer = &cfg.Balancer
		}
		return cfg.Coordinator, unlock, nil
	case *f.zkServers != "":
		cc, err := zkCoordinator("instance "+sub, *f.zkServers, *f.root, *f.zkUser, *f.zkPasswordFile)
		return cc, unlock, err
	default:
		path, unlock, err := openUpData(*f.dataDir)
		if err != nil {
			return cc, func() {}, fmt.Errorf("instance %s: %w", sub, err)
		}
		ic.upData = true
		return config.Coordinator{Kind: config.CoordSingle, Path: path}, unlock, nil
	}
}

// openJudge makes the judge of -judge (or -config's balancer.judge) the placer and the
// planner; without one, placement is random and there is no planner.
func (ic *instanceCmd) openJudge() error {
	f := ic.f
	if *f.judgeURL == "" {
		return nil
	}
	// The flags win over -config's balancer section.
	tokenRef, tlsBlock, tlsKey := config.SecretRef{File: *f.judgeTokenFile, Env: judge.TokenEnv}, (*config.ClientTLS)(nil), "-judge-ca-file"
	if b := ic.judgeBalancer; b != nil {
		if *f.judgeTokenFile == "" {
			tokenRef = b.JudgeToken()
		}
		tlsBlock, tlsKey = b.TLS, "balancer.tls of "+*f.cfgPath
	}
	if *f.judgeCAFile != "" {
		tlsBlock, tlsKey = &config.ClientTLS{CAFile: *f.judgeCAFile}, "-judge-ca-file"
	}
	token, err := tokenRef.Resolve()
	if err != nil {
		return fmt.Errorf("instance %s: judge token: %w", ic.sub, err)
	}
	tc, err := tlsBlock.Load("tls")
	if err != nil {
		return fmt.Errorf("instance %s: %s: %w", ic.sub, tlsKey, err)
	}
	hc := httpapi.TLSClient(tc, client.DefaultTimeout)
	jc := &client.Client{URL: *f.judgeURL, Token: token, HTTP: hc}
	ic.jp = &judgePlacer{c: jc}
	// The judge hears from agents, whose hosts may run no live wave: only live waves.
	ic.placer, ic.planner = cluster.LivePlacer{Coord: ic.c, Placer: ic.jp}, jc
	return nil
}

// needID is the error of a subcommand that names no instance.
func (ic *instanceCmd) needID() error {
	if ic.id == "" {
		return fmt.Errorf("instance %s: which instance? give its id", ic.sub)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// openUpData locks the data folder of a `binlake up` as up itself does and returns the
// path of its coordinator file, and the function that releases the folder. The single
// coordinator is one process's file (it is locked, and up keeps its state in memory), so
// a running up cannot be changed, or read consistently, from here: that is reported as
// such rather than as a lock failure.
func openUpData(dataDir string) (path string, unlock func(), err error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return "", nil, fmt.Errorf("data folder %s: %w", dataDir, err)
	}
	path = filepath.Join(dir, CoordFile)
	if _, err := os.Stat(path); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, StoreFile)); errors.Is(err, fs.ErrNotExist) && serr == nil {
			// up ran here but kept no instance: it was started without -mysql, or its
			// -mysql was refused before anything was stored.
			return "", nil, fmt.Errorf("%s is the data folder of a binlake up that has no instance: up defines one when it runs with -mysql (one it refused, as its log said, defines none)", dir)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("%s has no %s, so it is not the data folder of a binlake up: give that folder with -data, or a cluster's coordinator with -zk or -config", dir, CoordFile)
		}
		return "", nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	lock, err := lockDataDir(dir)
	if errors.Is(err, ErrDataDirBusy) {
		holder := "a binlake up"
		if b, rerr := os.ReadFile(filepath.Join(dir, lockName)); rerr == nil && strings.TrimSpace(string(b)) != "" {
			holder += " (pid " + strings.TrimSpace(string(b)) + ")"
		}
		return "", nil, fmt.Errorf("%s is in use by %s, which holds its coordinator while it runs: stop it (Ctrl-C), run binlake instance again, then start up again on the same folder", dir, holder)
	}
	if err != nil {
		return "", nil, err
	}
	return path, func() { lock.Close() }, nil
}

// probeZK dials each ZooKeeper server once, so that an unreachable ensemble fails at once
// with the address and the cause (connection refused, no such host) instead of a session
// timeout. One reachable server is enough; the client finds the others.
func probeZK(ctx context.Context, servers []string) error {
	var errs []error
	for _, s := range servers {
		addr := strings.TrimSpace(s)
		if _, _, err := net.SplitHostPort(addr); err != nil {
			addr = net.JoinHostPort(addr, "2181") // the client's default port
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("zookeeper %s: %w", strings.Join(servers, ","), errors.Join(errs...))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
