//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/fleetsim"
)

const benchFleetUsage = `Usage: binlake bench fleet [flags]

Simulates a heterogeneous fleet of waves and capture instances whose true CPU costs are
known, and drives a judge through its HTTP API alone, as agents and the wave's balancer
do: the agents report every wave (cpu.cores, cpu.util, mem.used_pct, load.1,
wave.cpu_cores, wave.instances, per instance wave.tps, wave.bytes_per_s,
wave.instance_running and, with a -read-price, wave.binlog_bytes_per_s) for -history of
simulated time, then a balancer asks POST /v1/rebalance with the assignment, applies the
moves, lets -round-every pass with the agents reporting, and asks again, until a plan is
empty or -rounds.

Each wave uses row_price·rows/s + byte_price·bytes/s + read_price·binlog bytes/s + idle
cores, with prices that differ between hosts (a speed factor); instances have lognormal
rows/s and row sizes and a diurnal cycle peaking at different hours. A wave reads its
instances' whole sources: an instance whose filters keep part of its source (-filtered
of them) reads a lognormal multiple of what it publishes (median -read-ratio), the
others what they publish. The fleet starts round-robin by count.

The report gives the true utilisation (CPU demand over cores) now and at each wave's
daily peak: peak, spread and each capacity class's mean and max, for the initial
assignment, the judge's, a greedy reference (instances by descending true cost, each to
the wave with the lowest resulting utilisation), a descent reference (from the initial
assignment, one move at a time off the busiest wave: the moves a good plan needs) and a
lower bound; and the ratio of the judge's peak to greedy's.

By default the judge runs in this process on a SQLite file in a temporary folder,
served on 127.0.0.1, with a simulated clock: a day of history takes seconds to minutes.
The simulator makes its historical refreshes, at simulated instants (once the history
is in, then every -historical-every), so that a seed plans alike on a busy machine.
-judge URL drives an external judge instead, in real time: its history goes in with past
timestamps (only the current hour reaches its current-hour analysis), every round waits
-round-every for real, the cooldown is the judge's (10 minutes by default), its
historical refresh comes every analysis.historical_every (10 minutes; set -history-wait
above it or to 0), and the run's nodes stay in its store: use a scratch judge.

Presets (-preset; flags given override them):
  hetero       24 waves (8 × 2, 8 × 4, 8 × 8 cores), 400 instances (the default)
  large        200 waves (67 × 2, 67 × 4, 66 × 8 cores), 5,000 instances (-history-wait 10m)
  homogeneous  24 identical hosts of 4 cores (-speed-sigma 0), 400 instances
  filtered     hetero's fleet with reading priced: -read-price 1e-8 -filtered 0.5 -read-ratio 5
  shared       hetero's fleet two waves to a host, loaded by other work: -host-share 2 -host-other 0.1

Examples:
  binlake bench fleet
  binlake bench fleet -preset large
  binlake bench fleet -preset filtered -filtered 0.2
  binlake bench fleet -cores 2:4,16:4 -instances 200 -seed 7 -json
  binlake bench fleet -judge-config judge.yaml     # the in-process judge with these rebalance goals
  binlake bench fleet -json -truth > run.json      # and the true costs, to check the plans offline
                                                   # (docs/tools/min_moves.py: the fewest moves to the targets)`

func runBenchFleet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d := fleetsim.DefaultOptions()
	fs := flag.NewFlagSet("bench fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	preset := fs.String("preset", "hetero", "the fleet: "+strings.Join(fleetsim.Presets, ", "))
	seed := fs.Uint64("seed", d.Seed, "seed of the fleet and of every noise")
	waves := fs.Int("waves", 0, "waves in all, keeping the -cores mix's proportions (0: the mix's own counts)")
	instances := fs.Int("instances", d.Instances, "capture instances")
	cores := fs.String("cores", fleetsim.FormatCores(d.Cores), "capacity mix, cores:waves,…")
	util := fs.Float64("util", d.TargetUtil, "the fleet's mean utilisation at the start (total demand over total cores)")
	speedSigma := fs.Float64("speed-sigma", d.SpeedSigma, "σ of the hosts' lognormal speed factor, which scales each wave's prices (0: identical hosts)")
	amplitude := fs.Float64("diurnal", d.DiurnalAmplitude, "the largest diurnal swing of an instance's rates (0: flat; each draws 30–100 % of it)")
	readPrice := fs.Float64("read-price", d.ReadPrice, "the fleet's mean cores per binlog byte/s read, scaled by each host's speed (0: reading is free and not reported)")
	filtered := fs.Float64("filtered", d.FilteredShare, "share of instances whose filters keep part of their source, reading more than they publish (needs a -read-price)")
	readRatio := fs.Float64("read-ratio", d.ReadRatioMedian, "median of what a filtered instance reads over what it publishes (lognormal, at least 1)")
	hostShare := fs.Int("host-share", d.HostShare, "waves to a host, of one capacity class (1: each its own); their agents report the host's cores, CPU and boot id")
	hostOther := fs.Float64("host-other", d.HostOther, "other work on each shared host, a share of its cores on average (each draws from none to twice it)")
	history := fs.Duration("history", d.History, "simulated time the agents report before the balancer starts")
	historyStep := fs.Duration("history-step", d.HistoryStep, "the agents' interval over the history")
	warmup := fs.Duration("warmup", d.Warmup, "the end of the history, reported every -step (at most -history: a shorter -history alone is reported every -step throughout)")
	step := fs.Duration("step", d.Step, "the agents' interval near now and between rounds")
	rounds := fs.Int("rounds", d.Rounds, "the most rounds of the balancer")
	roundEvery := fs.Duration("round-every", d.RoundEvery, "simulated time between two rounds (the balancer's auto_after)")
	settle := fs.Duration("settle", d.Settle, "simulated time the balancer goes on asking after the first plan that says the fleet is balanced (its moves then are counted apart; 0: the run ends there)")
	judgeURL := fs.String("judge", "", "an external judge's base URL, driven in real time (empty: one in this process)")
	tokenFile := fs.String("judge-token-file", "", "file holding the judge's bearer token ($"+judge.TokenEnv+" when set)")
	caFile := fs.String("judge-ca-file", "", "CA of an https judge's certificate")
	judgeConfig := fs.String("judge-config", "", "judge.yaml whose rebalance, analysis and placement sections the in-process judge takes")
	historyWait := fs.Duration("history-wait", d.HistoryWait, "how long to wait after the history for an external judge's historical refresh (0: not at all)")
	historicalEvery := fs.Duration("historical-every", d.HistoricalEvery, "the in-process judge's historical refresh period, in simulated time (an external judge refreshes on its own clock)")
	senders := fs.Int("senders", d.Senders, "batches posted at once")
	prefix := fs.String("prefix", "", "prefix of every node and instance name")
	asJSON := fs.Bool("json", false, "print the report as JSON (progress goes to stderr)")
	truth := fs.Bool("truth", false, "with -json, put the fleet's true costs in the report (every instance's CPU on every wave, and the targets), to check the plans offline")
	logLevel := fs.String("log-level", "error", "the in-process judge's log level: debug, info, warn or error")
	fs.Usage = func() { fmt.Fprintln(stderr, benchFleetUsage+"\n\nFlags:"); fs.PrintDefaults() }
	if err := parseBenchFlags(fs, args, stderr); err != nil {
		return err
	}
	o, err := fleetsim.Preset(*preset)
	if err != nil {
		return fmt.Errorf("bench fleet: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["cores"] {
		if o.Cores, err = fleetsim.ParseCores(*cores); err != nil {
			return fmt.Errorf("bench fleet: %w", err)
		}
	}
	if set["waves"] {
		if o.Cores, err = fleetsim.ScaleWaves(o.Cores, *waves); err != nil {
			return fmt.Errorf("bench fleet: %w", err)
		}
	}
	for name, apply := range map[string]func(){
		"seed": func() { o.Seed = *seed }, "instances": func() { o.Instances = *instances },
		"util": func() { o.TargetUtil = *util }, "speed-sigma": func() { o.SpeedSigma = *speedSigma },
		"diurnal": func() { o.DiurnalAmplitude = *amplitude }, "history": func() { o.History = *history },
		"history-step": func() { o.HistoryStep = *historyStep }, "warmup": func() { o.Warmup = *warmup },
		"step": func() { o.Step = *step }, "rounds": func() { o.Rounds = *rounds },
		"round-every": func() { o.RoundEvery = *roundEvery }, "settle": func() { o.Settle = *settle }, "history-wait": func() { o.HistoryWait = *historyWait },
		"historical-every": func() { o.HistoricalEvery = *historicalEvery }, "senders": func() { o.Senders = *senders },
		"read-price": func() { o.ReadPrice = *readPrice }, "filtered": func() { o.FilteredShare = *filtered },
		"read-ratio": func() { o.ReadRatioMedian = *readRatio }, "host-share": func() { o.HostShare = *hostShare },
		"host-other": func() { o.HostOther = *hostOther },
	} {
		if set[name] {
			apply()
		}
	}
	if !set["warmup"] {
		o.Warmup = min(o.Warmup, o.History) // -history 2h alone: all of it every -step
	}
	o.JudgeURL, o.CAFile, o.Prefix, o.Truth = *judgeURL, *caFile, *prefix, *truth
	if err := checkBaseURLFlag("-judge", *judgeURL, "use -judge-token-file"); err != nil {
		return fmt.Errorf("bench fleet: %w", err)
	}
	if *truth && !*asJSON {
		return fmt.Errorf("bench fleet: -truth puts the true costs in the JSON report: give -json too")
	}
	if o.Token, err = config.ResolveSecret("", judge.TokenEnv, *tokenFile); err != nil {
		return fmt.Errorf("bench fleet: -judge-token-file: %w", err)
	}
	if *judgeConfig != "" {
		if o.JudgeURL != "" {
			return fmt.Errorf("bench fleet: -judge-config configures the in-process judge; an external one (-judge) has its own")
		}
		cfg, err := judge.Load(*judgeConfig)
		if err != nil {
			return fmt.Errorf("bench fleet: -judge-config: %w", err)
		}
		o.Judge = func(jo *judge.Options) {
			jo.Rebalance = new(cfg.Rebalance.Options())
			jo.EWMAAlpha, jo.HistoricalMetrics = cfg.Analysis.EWMAAlpha, cfg.Analysis.HistoricalMetrics
			jo.Algorithm, jo.Filters, jo.Plugins = cfg.Placement.Algorithm, cfg.Filters(), cfg.Placement.Plugins
		}
	}
	o.Progress = stdout
	if *asJSON {
		o.Progress = stderr
	}
	if o.Logger, err = logging.New(stderr, *logLevel, "text"); err != nil {
		return fmt.Errorf("bench fleet: -log-level: %w", err)
	}
	rep, err := fleetsim.Run(ctx, o)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteText(stdout)
	return nil
}
