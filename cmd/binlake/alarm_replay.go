//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/history"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
	"github.com/binlake/binlake/judge/store/sqlite"
)

const alarmTestUsage = `Usage: binlake alarm test -policies FILE [-data DIR | -judge-config FILE | -stream FILE] [flags]

Tries alert policies before they are deployed: replays metric history through the
alarm's engine on the history's own clock and prints when each alert would have fired
and resolved, with its node, labels and summary. Nothing is sent.

The history comes from one of:
  -data DIR           the data folder of a binlake up (its judge.db; the default, ./data,
                      when no other source is given), read beside a running up
  -judge-config FILE  the judge's config file: the history in its store (SQLite or
                      Elasticsearch)
  -stream FILE        a recorded stream: one metric batch per line, the JSON the agents
                      send (kcat -C -t binlake.metrics -e writes it); - reads stdin

Stored points carry no interval_s: each node's interval is measured from its batches
(-interval sets one for all). The engine's timer ticks every evaluation.interval (1 s;
-config takes it, stale_intervals and the notify defaults from the alarm's config).

Flags:`

// runAlarmTest is `binlake alarm test`.
func runAlarmTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("alarm test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	polPath := fs.String("policies", "/etc/binlake/policies.yaml", "the alert policy file to try (see deploy/policies.example.yaml)")
	dataDir := fs.String("data", "", "the data folder of a binlake up: its store "+StoreFile+" (default ./data when neither -judge-config nor -stream is given)")
	judgeCfg := fs.String("judge-config", "", "the judge's config file (deploy/judge.example.yaml): the history in its store")
	streamPath := fs.String("stream", "", "a recorded stream file, one metric batch (JSON) per line; - for stdin")
	fromFlag := fs.String("from", "24h", "where the history starts: an RFC 3339 time, or a duration before -to")
	toFlag := fs.String("to", "", "where the history ends (excluded): an RFC 3339 time (default now; for -stream, the end of the file); "+
		"the alarm's timer runs to it, so a node silent since its last batch is dead by nodata as the live alarm finds it")
	interval := fs.Duration("interval", 0, "the interval of every node's batches, for stored history (default: measured per node)")
	cfgPath := fs.String("config", "", "the alarm's config file (deploy/alarm.example.yaml), for its evaluation and notify settings (default: the alarm's defaults)")
	asJSON := fs.Bool("json", false, "print the alerts as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, alarmTestUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("alarm test takes no arguments, got %q (flags go before them?)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if n := len(slices.DeleteFunc([]string{*dataDir, *judgeCfg, *streamPath}, func(s string) bool { return s == "" })); n > 1 {
		return errors.New("alarm test: give one of -data, -judge-config and -stream")
	}
	if *interval < 0 {
		return fmt.Errorf("alarm test: -interval %s: must be positive", *interval)
	}
	from, to, err := historyRange(*fromFlag, *toFlag, time.Now())
	if err != nil {
		return err
	}
	if defaultMissing(fs, "policies") {
		return needPolicies("alarm test", *polPath)
	}
	// The config first: the channels the policies name are checked against its.
	var cfg *alarm.Config
	if *cfgPath != "" {
		c, err := alarm.Load(*cfgPath)
		if err != nil {
			return err
		}
		cfg = &c
	}
	pols, err := loadAlarmPolicies(*polPath, cfg, *cfgPath)
	if err != nil {
		return err
	}
	// Inhibition on, as the alarm has it unless its config turns it off.
	ro := alarm.ReplayOptions{Policies: pols, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Inhibition: alarm.Inhibition{Enabled: true}}
	if cfg != nil {
		ro.EvalInterval, ro.StaleIntervals = cfg.Evaluation.Interval.D(), cfg.Evaluation.StaleIntervals
		ro.GroupWait, ro.GroupInterval = cfg.Notify.GroupWait.D(), cfg.Notify.GroupInterval.D()
		ro.Inhibition = cfg.Inhibit()
	}
	rp, err := alarm.NewReplay(ro)
	if err != nil {
		return err
	}
	var h replayed
	// The engine's timer runs to the window's end, not only to the last batch: a node
	// silent since is dead by nodata then, as the live alarm finds it, and a series gone
	// quiet goes stale. A stream without -to ends at its last batch.
	end := to
	if *streamPath != "" {
		// A stream is replayed whole unless -from or -to is given.
		var sf, st time.Time
		if set["from"] {
			sf = from
		}
		if set["to"] {
			st = to
		} else {
			end = time.Time{}
		}
		h, err = replayStream(*streamPath, sf, st, rp)
	} else {
		h, err = replayStore(ctx, *dataDir, *judgeCfg, from, to, *interval, rp, stderr)
	}
	if err != nil {
		for _, w := range h.skipped { // the lines that made a stream no stream
			fmt.Fprintln(stderr, "warning: "+w)
		}
		return err
	}
	eps, messages := rp.Finish(end)
	for _, w := range append(h.skipped, replayWarnings(pols, *polPath, h)...) {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	if *asJSON {
		if eps == nil {
			eps = []alarm.Episode{}
		}
		return json.NewEncoder(stdout).Encode(replayReport{Source: h.source, From: tp(h.first), To: tp(h.last), Batches: h.batches,
			BatchesBefore: h.warmed, Nodes: len(h.nodes), Alerts: eps, Notifications: messages})
	}
	printEpisodes(stdout, eps)
	fmt.Fprintln(stdout, replaySummary(h, len(pols), eps, messages))
	return nil
}

// historyRange parses -from (a time, or a duration before -to) and -to (a time, or now).
func historyRange(fromS, toS string, now time.Time) (from, to time.Time, err error) {
	to = now
	if toS != "" {
		if to, err = time.Parse(time.RFC3339Nano, toS); err != nil {
			return from, to, fmt.Errorf("alarm test: -to %q: want an RFC 3339 time (2026-11-29T14:00:00Z)", toS)
		}
	}
	if d, derr := time.ParseDuration(fromS); derr == nil {
		if d <= 0 {
			return from, to, fmt.Errorf("alarm test: -from %q: a duration before -to must be positive", fromS)
		}
		return to.Add(-d), to, nil
	}
	if from, err = time.Parse(time.RFC3339Nano, fromS); err != nil {
		return from, to, fmt.Errorf("alarm test: -from %q: want an RFC 3339 time or a duration before -to (24h)", fromS)
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("alarm test: -from %s is not before -to %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return from, to, nil
}

// replayed is what a replay read.
type replayed struct {
	source      string
	batches     int
	warmed      int // batches before the range, read into the time windows only
	nodes       map[string]bool
	names       []string // the metric names of its points, sorted
	first, last time.Time
	skipped     []string // the stream's lines skipped as the alarm skips them, each said
}

func (h *replayed) saw(b metric.Batch) {
	if h.nodes == nil {
		h.nodes = map[string]bool{}
	}
	h.nodes[b.Node] = true
	if h.batches == 0 {
		h.first = b.TS
	}
	h.batches++
	h.last = b.TS
}

// historyScanner is a store's history: the judge's store, or up's file read beside it.
type historyScanner interface {
	Scan(ctx context.Context, from, to time.Time, fn func([]store.Point) error) error
	Close() error
}

// replayStore replays the history of [from, to) in up's data folder or the judge's store.
func replayStore(ctx context.Context, dataDir, judgeCfg string, from, to time.Time, interval time.Duration, rp *alarm.Replay, stderr io.Writer) (replayed, error) {
	var (
		sc  historyScanner
		h   replayed
		err error
	)
	switch {
	case judgeCfg != "":
		cfg, lerr := judge.Load(judgeCfg)
		if lerr != nil {
			return h, lerr
		}
		switch cfg.Store.Kind {
		case judge.StoreElastic:
			logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var es *elastic.Store
			es, h.source, err = elasticStore(cfg, judgeCfg, logger)
			if err == nil {
				sc = es
				// The points of the last refresh_interval (10 s by default) are stored but
				// not yet searchable: without them the timer run to now found every node
				// silent that long, and a live agent "still firing" agent-dead.
				if rerr := es.Refresh(ctx); rerr != nil {
					fmt.Fprintf(stderr, "warning: %s: refresh: %v: the points of the last store.elastic.refresh_interval may be missing, and a node may read silent for as long\n", h.source, rerr)
				}
			}
		default:
			path := cfg.Store.SQLite.Path
			sc, err = sqlite.OpenReader(path)
			if errors.Is(err, os.ErrNotExist) && !filepath.IsAbs(path) {
				// The judge resolves it in its own working directory, not ours.
				err = fmt.Errorf("%w: %s's store.sqlite.path is relative to the judge's working directory (/var/lib/binlake/judge under systemd): give that folder's data/ with -data", err, judgeCfg)
			}
			h.source = "sqlite " + path
		}
	default:
		if dataDir == "" {
			dataDir = "./data"
		}
		path := filepath.Join(dataDir, StoreFile)
		sc, err = sqlite.OpenReader(path)
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w: no store of a binlake up in %s (give the data folder with -data, the judge's config with -judge-config, or a recorded stream with -stream)", err, dataDir)
		}
		h.source = "sqlite " + path
	}
	if err != nil {
		return h, err
	}
	defer sc.Close()
	// The windows' past first, as a running alarm reads it back (alarm.History): the
	// range's first points are judged on whole windows.
	if lb := rp.Lookback(); lb > 0 {
		w := history.NewBatcher(interval, agent.DefaultInterval, func(batch metric.Batch) error {
			h.warmed++
			return rp.Warm(batch)
		})
		err = sc.Scan(ctx, from.Add(-lb), from, w.Add)
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			return h, fmt.Errorf("%s: %w", h.source, err)
		}
	}
	var replayErr error
	b := history.NewBatcher(interval, agent.DefaultInterval, func(batch metric.Batch) error {
		h.saw(batch)
		replayErr = rp.Observe(batch)
		return replayErr
	})
	err = sc.Scan(ctx, from, to, b.Add)
	if err == nil {
		err = b.Flush()
	}
	if err != nil {
		if replayErr != nil {
			return h, replayErr
		}
		return h, fmt.Errorf("%s: %w", h.source, err)
	}
	h.names = b.Seen()
	return h, nil
}

// replayStream replays a recorded stream file (- for stdin).
func replayStream(path string, from, to time.Time, rp *alarm.Replay) (replayed, error) {
	h := replayed{source: path}
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return h, fmt.Errorf("-stream: %w", err)
		}
		defer f.Close()
		r = f
	} else {
		h.source = "stdin"
	}
	// The windows' past before -from too, as the store's replay reads it.
	readFrom := from
	if lb := rp.Lookback(); !from.IsZero() && lb > 0 {
		readFrom = from.Add(-lb)
	}
	batches, skipped, err := readStream(r, h.source, readFrom, to)
	h.skipped = skipped
	if err != nil {
		return h, err
	}
	names := map[string]bool{}
	for _, b := range batches {
		if b.TS.Before(from) {
			h.warmed++
			if err := rp.Warm(b); err != nil {
				return h, err
			}
			continue
		}
		h.saw(b)
		for _, p := range b.Points {
			names[p.Name] = true
		}
		if err := rp.Observe(b); err != nil {
			return h, err
		}
	}
	h.names = slices.Sorted(maps.Keys(names))
	return h, nil
}

// replayWarnings are the policies the history could not try: a metric that is not a
// known name (likely a typo, with the closest name), or a known one the history has no
// point of.
func replayWarnings(pols []*policy.Policy, polPath string, h replayed) []string {
	known := knownMetricNames(h.names)
	out := unknownMetricMessages(pols, polPath, known, "a canonical metric, one the agents' collectors send, or one in the history replayed")
	for _, p := range pols {
		if p.Metric != "" && slices.Contains(known, p.Metric) && !slices.Contains(h.names, p.Metric) {
			out = append(out, fmt.Sprintf("%s:%d: policy %q: the history has no point of metric %q, so it was not tried", polPath, p.MetricLine, p.Name, p.Metric))
		}
	}
	return out
}

// replayReport is the -json output.
type replayReport struct {
	Source  string     `json:"source"`
	From    *time.Time `json:"from"` // the first batch's time; null without any
	To      *time.Time `json:"to"`   // the last batch's
	Batches int        `json:"batches"`
	// BatchesBefore are those before the range read into the time windows only, as a
	// running alarm reads a partition's history back.
	BatchesBefore int             `json:"batches_before"`
	Nodes         int             `json:"nodes"`
	Alerts        []alarm.Episode `json:"alerts"`
	Notifications int             `json:"notifications"`
}

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// reservedLabels are the labels every alert has, shown in their own columns.
var reservedLabels = []string{policy.LabelAlertName, policy.LabelNode, policy.LabelSeverity, policy.LabelMetric}

func printEpisodes(w io.Writer, eps []alarm.Episode) {
	if len(eps) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIRED\tRESOLVED\tPOLICY\tSEVERITY\tNODE\tLABELS\tVALUE\tSUMMARY")
	for _, e := range eps {
		resolved := "still firing"
		if e.ResolvedAt != nil {
			resolved = stamp(*e.ResolvedAt)
		}
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
			if !slices.Contains(reservedLabels, k) {
				labels = append(labels, k+"="+e.Labels[k])
			}
		}
		summary := e.Annotations["summary"]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.4g\t%s\n", stamp(e.FiredAt), resolved, e.Policy, e.Severity, e.Node,
			orDash(strings.Join(labels, ",")), e.Value, orDash(summary))
	}
	tw.Flush()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// replaySummary is the last line: what was replayed and what came of it.
func replaySummary(h replayed, policies int, eps []alarm.Episode, messages int) string {
	if h.batches == 0 {
		return fmt.Sprintf("no batches in %s for the time range: nothing replayed", h.source)
	}
	firing := 0
	for _, e := range eps {
		if e.ResolvedAt == nil {
			firing++
		}
	}
	before := ""
	if h.warmed > 0 {
		before = fmt.Sprintf(", after %s before it into the time windows", count(h.warmed, "batch", "batches"))
	}
	what := fmt.Sprintf("replayed %s of %s from %s (%s to %s%s) through %s: ",
		count(h.batches, "batch", "batches"), count(len(h.nodes), "node", "nodes"), h.source, stamp(h.first), stamp(h.last), before,
		count(policies, "policy", "policies"))
	if len(eps) == 0 {
		return what + "no alert fired"
	}
	return what + fmt.Sprintf("%s fired, %d resolved, %d still firing at the end; %s would have been sent",
		count(len(eps), "alert", "alerts"), len(eps)-firing, firing, count(messages, "notification", "notifications"))
}
