package analysis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/lbplugins"
)

// DefaultMetrics are the node-level series the historical analysis computes when none
// are configured: those the placement algorithms and the status page read.
var DefaultMetrics = []string{
	lbplugins.CPUUtil, lbplugins.MemUsedPct, lbplugins.Load1, lbplugins.NetRxBps, lbplugins.NetTxBps,
	lbplugins.WaveTPS, lbplugins.WaveInstances, metric.DiskUsedPct,
}

// HistoricalOptions configure the historical analysis.
type HistoricalOptions struct {
	Store store.Store
	// Metrics are the node-level series to analyse; DefaultMetrics when empty.
	Metrics []string
	// Every is the refresh period; 10 min when zero.
	Every time.Duration
	// Timeout bounds one refresh; Every when zero.
	Timeout time.Duration
	// Workers is how many store queries run at once; 4 when zero.
	Workers int
	// ExtraNodes lists nodes to analyse besides those the store knows (the incremental
	// analysis's), so a node appears as soon as it has history. May be nil.
	ExtraNodes func() []string
	// Instances lists, per node, the capture instances whose work (wave.tps,
	// wave.bytes_per_s and wave.binlog_bytes_per_s per instance) gets an hour-of-day
	// profile: the daily shape the rebalancing plans keep every wave under its cap at.
	// May be nil (no profiles).
	Instances func() map[string][]string
	// Now is the clock; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// Snapshot is one completed refresh. It is never modified after it is published.
type Snapshot struct {
	// AsOf is when the refresh ran; the windows end at the start of that hour.
	AsOf  time.Time
	Until time.Time
	Took  time.Duration
	Nodes map[string]map[string]lbplugins.History // node → metric → history
	// Instances holds the hour-of-day profiles of each instance's work, per node: the
	// nodes that list it, and the others where it has points in the 7 days.
	Instances map[string]map[string]InstanceProfile // node → instance → profile

	// listing is what the refresh's listing of where the instances ran covered.
	listing listing
}

// listing is what a refresh listed: the instances (HistoricalOptions.Instances), and the
// end of the last refresh that asked the store where they ran over the whole week.
type listing struct {
	instances map[string]bool
	weekUntil time.Time
}

// relistEvery is how long the refreshes list only the hours since the last before one
// lists the whole week again: a point that arrives late, dated before the last refresh,
// on a wave its instance was not known on, is found within a day.
const relistEvery = 24 * time.Hour

// InstanceProfile is an instance's work per UTC hour of the day over the last 7 days on
// one node: mean rows/s and bytes/s published, and how many points each hour had (0: no
// data); mean binlog bytes/s read, and its points (0: none, as from an agent that does
// not report the binlog read).
type InstanceProfile struct {
	Rows, Bytes [24]float64
	Count       [24]int64
	Read        [24]float64
	ReadCount   [24]int64
}

// InstanceMetrics are the per-instance series InstanceProfile averages.
var InstanceMetrics = []string{metric.WaveTPS, metric.WaveBytesPerS, metric.WaveBinlogBytesPerS}

// InstanceLabel is the per-instance series' one label: it names the instance.
const InstanceLabel = "instance"

// Historical recomputes per node and metric the last 24 h and 7 d statistics and the
// hour-of-day profile over the hours before the current one, in the background. Readers
// get the last completed snapshot and never wait for a refresh.
type Historical struct {
	o    HistoricalOptions
	log  *slog.Logger
	snap atomic.Pointer[Snapshot]

	refreshes, failures atomic.Int64
	lastErr             atomic.Pointer[string]
	running             sync.Mutex // one refresh at a time
}

// NewHistorical validates the options.
func NewHistorical(o HistoricalOptions) (*Historical, error) {
	if o.Store == nil {
		return nil, errors.New("historical analysis: no store")
	}
	if len(o.Metrics) == 0 {
		o.Metrics = DefaultMetrics
	}
	if o.Every < 0 || o.Timeout < 0 || o.Workers < 0 {
		return nil, errors.New("historical analysis: negative period, timeout or workers")
	}
	if o.Every == 0 {
		o.Every = 10 * time.Minute
	}
	if o.Timeout == 0 {
		o.Timeout = o.Every
	}
	if o.Workers == 0 {
		o.Workers = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Historical{o: o, log: o.Logger.With("component", "judge.historical")}, nil
}

// Snapshot returns the last completed refresh, or nil before the first one.
func (h *Historical) Snapshot() *Snapshot { return h.snap.Load() }

// Counts returns how many refreshes completed and failed, and the last error ("" if none).
func (h *Historical) Counts() (ok, failed int64, lastErr string) {
	if p := h.lastErr.Load(); p != nil {
		lastErr = *p
	}
	return h.refreshes.Load(), h.failures.Load(), lastErr
}

// Run refreshes at once (unless a refresh already completed) and then every period until
// ctx ends. A failed refresh keeps the
// previous snapshot and is retried at the next period: the store being down must not
// take the placement API with it.
func (h *Historical) Run(ctx context.Context) error {
	t := time.NewTicker(h.o.Every)
	defer t.Stop()
	// A refresh already made (the judge's restore makes the first) is not made again.
	refresh := h.refreshes.Load() == 0
	for {
		if !refresh {
			refresh = true
		} else if err := h.Refresh(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("historical refresh failed; keeping the previous analysis", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Refresh computes a new snapshot and publishes it when every query succeeded.
func (h *Historical) Refresh(ctx context.Context) error {
	h.running.Lock()
	defer h.running.Unlock()
	err := h.refresh(ctx)
	if err != nil {
		h.failures.Add(1)
		msg := err.Error()
		h.lastErr.Store(&msg)
		return err
	}
	h.refreshes.Add(1)
	empty := ""
	h.lastErr.Store(&empty)
	return nil
}

func (h *Historical) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
	defer cancel()
	start := h.o.Now()
	until := start.UTC().Truncate(time.Hour)
	dayFrom, weekFrom := until.Add(-24*time.Hour), until.Add(-7*24*time.Hour)

	ids, err := h.o.Store.Nodes(ctx, weekFrom, until)
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	if h.o.ExtraNodes != nil {
		for _, id := range h.o.ExtraNodes() {
			set[id] = true
		}
	}
	type job struct{ node, metric string }
	type result struct {
		job
		hist lbplugins.History
		ok   bool
	}
	jobs := make([]job, 0, len(set)*len(h.o.Metrics))
	for id := range set {
		for _, m := range h.o.Metrics {
			jobs = append(jobs, job{id, m})
		}
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].node < jobs[j].node })
	results := make([]result, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(h.o.Workers)
	for i, j := range jobs {
		g.Go(func() error {
			q := store.Query{Node: j.node, Name: j.metric, From: weekFrom, To: until}
			week, err := h.o.Store.Stats(gctx, q)
			if err != nil {
				return fmt.Errorf("%s %s last 7 d: %w", j.node, j.metric, err)
			}
			if week.Count == 0 {
				return nil
			}
			q.From = dayFrom
			day, err := h.o.Store.Stats(gctx, q)
			if err != nil {
				return fmt.Errorf("%s %s last 24 h: %w", j.node, j.metric, err)
			}
			q.From = weekFrom
			prof, err := h.o.Store.Profile(gctx, q)
			if err != nil {
				return fmt.Errorf("%s %s profile: %w", j.node, j.metric, err)
			}
			r := result{job: j, ok: true, hist: lbplugins.History{Day: window(day), Week: window(week)}}
			for hr := range prof {
				r.hist.Profile[hr] = window(prof[hr])
			}
			results[i] = r
			return nil
		})
	}
	profiles, lst, err := h.instanceProfiles(gctx, weekFrom, until)
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	snap := &Snapshot{AsOf: start, Until: until, Nodes: map[string]map[string]lbplugins.History{}, Instances: profiles, listing: lst}
	for _, r := range results {
		if !r.ok {
			continue
		}
		m := snap.Nodes[r.node]
		if m == nil {
			m = map[string]lbplugins.History{}
			snap.Nodes[r.node] = m
		}
		m[r.metric] = r.hist
	}
	snap.Took = h.o.Now().Sub(start)
	h.snap.Store(snap)
	h.log.Debug("historical refresh done", "nodes", len(snap.Nodes), "took", snap.Took)
	return nil
}

// instanceProfiles queries the hour-of-day profile of every listed instance's work, one
// profile per instance, node and metric, with the refresh's workers: on the nodes that
// list it now and on every other node the store has its work from in [from, until). A
// moved instance's week is on the waves it left: once the incremental analysis dropped
// its series there (an hour after its last sample), listing only the nodes that report
// it now gave it the hours since the move alone, and the plans priced its other hours
// at its rate now until its new wave had a day of it. It returns the profiles and what
// it listed.
//
// Where the store has had them is asked over the whole week at the first refresh (and
// whenever an instance is listed that the last refresh did not list, and once a day:
// relistEvery); between those only over the hours since the last, beside the last
// snapshot's nodes of each instance: on Elasticsearch the listing is an aggregation over
// the documents of its range, and a week of every instance's every 10 s at every refresh
// is what the profiles' own queries read one instance at a time.
func (h *Historical) instanceProfiles(ctx context.Context, from, until time.Time) (map[string]map[string]InstanceProfile, listing, error) {
	out := map[string]map[string]InstanceProfile{}
	listed := map[string]bool{}
	if h.o.Instances == nil {
		return out, listing{instances: listed}, nil
	}
	type pair struct{ node, inst string }
	pairs := map[pair]bool{}
	lists := map[pair]bool{} // the pairs listed now: profiled even without points
	for node, insts := range h.o.Instances() {
		for _, inst := range insts {
			pairs[pair{node, inst}], lists[pair{node, inst}] = true, true
			listed[inst] = true
		}
	}
	listFrom, weekUntil := from, until
	if prev := h.snap.Load(); prev != nil && !prev.Until.Before(from) && !prev.Until.After(until) && subset(listed, prev.listing.instances) &&
		until.Sub(prev.listing.weekUntil) < relistEvery {
		listFrom, weekUntil = prev.Until, prev.listing.weekUntil
		for node, insts := range prev.Instances {
			for inst := range insts {
				if listed[inst] {
					pairs[pair{node, inst}] = true
				}
			}
		}
	}
	if listFrom.Before(until) {
		keys, err := h.o.Store.Series(ctx, metric.WaveTPS, listFrom, until)
		if err != nil {
			return nil, listing{}, fmt.Errorf("where the instances ran: %w", err)
		}
		for _, k := range keys {
			if inst := k.Labels[InstanceLabel]; len(k.Labels) == 1 && listed[inst] {
				pairs[pair{k.Node, inst}] = true
			}
		}
	}
	type job struct{ node, inst, metric string }
	jobs := make([]job, 0, len(pairs)*len(InstanceMetrics))
	for _, p := range slices.SortedFunc(maps.Keys(pairs), func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.inst, b.inst))
	}) {
		for _, m := range InstanceMetrics {
			jobs = append(jobs, job{p.node, p.inst, m})
		}
	}
	profs := make([]store.HourProfile, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(h.o.Workers)
	for i, j := range jobs {
		g.Go(func() error {
			q := store.Query{Node: j.node, Name: j.metric, Labels: map[string]string{InstanceLabel: j.inst}, From: from, To: until}
			p, err := h.o.Store.Profile(gctx, q)
			if err != nil {
				return fmt.Errorf("%s %s{instance=%q} profile: %w", j.node, j.metric, j.inst, err)
			}
			profs[i] = p
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, listing{}, err
	}
	for i, j := range jobs {
		byInst := out[j.node]
		if byInst == nil {
			byInst = map[string]InstanceProfile{}
			out[j.node] = byInst
		}
		ip := byInst[j.inst]
		for hr, st := range profs[i] {
			switch j.metric {
			case metric.WaveTPS:
				ip.Rows[hr], ip.Count[hr] = st.Avg, st.Count
			case metric.WaveBytesPerS:
				ip.Bytes[hr] = st.Avg
			case metric.WaveBinlogBytesPerS:
				ip.Read[hr], ip.ReadCount[hr] = st.Avg, st.Count
			}
		}
		byInst[j.inst] = ip
	}
	// A node that no longer lists an instance and has none of its points in the week
	// is not carried to the next refresh.
	for node, byInst := range out {
		for inst, ip := range byInst {
			if !lists[pair{node, inst}] && !ip.hasPoints() {
				delete(byInst, inst)
			}
		}
		if len(byInst) == 0 {
			delete(out, node)
		}
	}
	return out, listing{instances: listed, weekUntil: weekUntil}, nil
}

// hasPoints reports whether any hour of the profile has a point.
func (p *InstanceProfile) hasPoints() bool {
	return slices.ContainsFunc(p.Count[:], func(c int64) bool { return c > 0 }) ||
		slices.ContainsFunc(p.ReadCount[:], func(c int64) bool { return c > 0 })
}

// subset reports whether every key of a is in b.
func subset(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func window(s store.Stats) lbplugins.Window {
	return lbplugins.Window{Count: s.Count, Avg: s.Avg, Max: s.Max, P95: s.P95}
}
