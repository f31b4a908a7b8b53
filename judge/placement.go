package judge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/utilisation"
)

// DefaultSnapshotEvery is how often, at most, the placement snapshot is rebuilt while
// batches keep arriving (placement.snapshot_every).
const DefaultSnapshotEvery = 200 * time.Millisecond

// DefaultCapacityEvery is how often, at most, a build computes the waves' loads in the
// load model anew (placement.capacity_every): about ten times a snapshot build's cost
// for a fleet of waves, while a wave's peak and prices move over minutes, and the
// reservations in cores cover the placements made meanwhile.
const DefaultCapacityEvery = 5 * time.Second

// placer answers placements from an immutable snapshot of the analyses. Ingest marks it
// dirty; the first placement after SnapshotEvery rebuilds it (one at a time, without
// making others wait: they answer from the previous snapshot meanwhile). A placement
// takes no lock: it loads the snapshot and the reservations through atomic pointers.
type placer struct {
	snap     atomic.Pointer[placementSnapshot]
	changes  atomic.Uint64 // bumped by every ingested batch
	building sync.Mutex
	res      *reservations
	byAlgo   map[string]*algoMetrics
	recent   [maxRecent]atomic.Pointer[Placement]
	recentN  atomic.Uint64
	// caps is the last computation of the waves' loads, which the builds until the next
	// one take (Options.CapacityEvery); capsBusy is set while one runs in the background.
	caps     atomic.Pointer[capSet]
	capsBusy atomic.Bool
}

type placementSnapshot struct {
	*lbplugins.Snapshot
	reserved *lbplugins.Reserved // the reservations per node, counted by placements
	changes  uint64              // the placer's change count it was built from
	hist     *analysis.Snapshot  // the historical analysis it carries
	load     placementLoad       // the load model's figures besides the nodes' capacities
	built    time.Time           // wall-clock build time (coalescing uses real time)
}

// algoMetrics are one algorithm's placement counters, resolved once so that a placement
// does not look labels up.
type algoMetrics struct {
	ok, noCandidates, failed prometheus.Counter
	seconds                  prometheus.Observer
}

const maxRecent = 20

// Placement is one answered (or refused) placement, for the status page.
type Placement struct {
	At        time.Time
	Instance  string
	Algorithm string
	Node      string
	Error     string
	seq       uint64
}

func (j *Judge) initPlacer() {
	j.res = newReservations(j.o.ReservationTTL, func(instance string, r *api.Reservation) {
		j.records.put(reservationRecord(instance, r))
	})
	j.byAlgo = make(map[string]*algoMetrics, len(j.plugins))
	for name := range j.plugins {
		j.byAlgo[name] = &algoMetrics{
			ok:           j.m.placements.WithLabelValues(name, "ok"),
			noCandidates: j.m.placements.WithLabelValues(name, "no_candidates"),
			failed:       j.m.placements.WithLabelValues(name, "error"),
			seconds:      j.m.placementSeconds.WithLabelValues(name),
		}
	}
}

// snapshot returns the current placement snapshot, rebuilding it first when the
// analyses changed and the last build is older than SnapshotEvery (or there is none).
func (j *Judge) snapshot() *placementSnapshot {
	cur := j.snap.Load()
	if cur != nil && !j.stale(cur) {
		return cur
	}
	if cur == nil {
		j.building.Lock() // the first placement waits for the first snapshot
	} else if !j.building.TryLock() {
		return cur // another placement is rebuilding: answer from the previous one
	}
	defer j.building.Unlock()
	if now := j.snap.Load(); now != cur && now != nil {
		return now
	}
	return j.rebuild()
}

func (j *Judge) stale(s *placementSnapshot) bool {
	if s.changes == j.changes.Load() && s.hist == j.hist.Snapshot() {
		return false
	}
	return time.Since(s.built) >= j.o.SnapshotEvery
}

// rebuild builds and publishes a snapshot of the analyses. Callers hold building.
func (j *Judge) rebuild() *placementSnapshot {
	changes := j.changes.Load() // before reading, so that a concurrent batch marks it stale
	hist := j.hist.Snapshot()
	vs, _ := j.inc.Views()
	for _, v := range vs {
		if hist != nil {
			v.History = hist.Nodes[v.Node]
		}
	}
	ps := &placementSnapshot{changes: changes, hist: hist, built: time.Now()}
	ps.load = j.capacities(vs, hist)
	plugins := make([]lbplugins.Plugin, 0, len(j.plugins))
	for _, p := range j.plugins {
		plugins = append(plugins, p)
	}
	ps.Snapshot = lbplugins.NewSnapshot(vs, j.o.Filters, j.now(), plugins...)
	// Reservations whose nodes now report their instances, or that expired, end here.
	j.res.Rebase(ps.Snapshot, j.now(), ps.load.reports, func(r *lbplugins.Reserved) {
		ps.reserved = r
		j.snap.Store(ps)
	})
	j.m.snapshotBuilds.Inc()
	return ps
}

// sweepEvery is how often, at least, the judge looks for reservations that ended
// while no placement came (refreshReservations); placement.snapshot_every when longer.
const sweepEvery = time.Second

// reservationLoop sweeps the reservations every sweepEvery (or SnapshotEvery) while
// no placement does (refreshReservations).
func (j *Judge) reservationLoop(ctx context.Context) {
	t := time.NewTicker(max(sweepEvery, j.o.SnapshotEvery))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			j.refreshReservations()
		}
	}
}

// refreshReservations ends the reservations whose nodes report their instances, or that
// expired, without waiting for a placement: it rebuilds the placement snapshot, whose
// build sweeps them (rebuild), when one is pending and the analyses changed since the
// last build. They were swept only by the next placement's build, so with no placement
// a node listed a reservation for two minutes (its TTL) after it reported the instance
// running. The sweep stays the snapshot's: a reservation ends in the build whose loads
// (the capacities the utilisation algorithm reads) count the instance it held, never
// before. Nothing is done while no reservation is pending.
func (j *Judge) refreshReservations() {
	if j.res.size.Load() == 0 {
		return
	}
	if now := j.now(); j.res.Due(now) {
		j.res.Expire(now)
	}
	cur := j.snap.Load()
	if cur == nil || !j.stale(cur) || !j.building.TryLock() {
		return
	}
	defer j.building.Unlock()
	if j.snap.Load() == cur {
		j.rebuild()
	}
}

// reportedInstances is the wave.instances a node last reported.
func reportedInstances(s *lbplugins.Snapshot, node string) (float64, bool) {
	i, ok := s.Index(node)
	if !ok {
		return 0, false
	}
	c, ok := s.Views[i].Current[lbplugins.WaveInstances]
	if !ok || !c.HasLevel() {
		return 0, false
	}
	return c.Last, true
}

// PlacementAnswer is a decision and the reservation it made (none for a dry run).
type PlacementAnswer struct {
	lbplugins.Decision
	Reservation *api.Reservation
	// InstanceCost is what the instance costs where it runs now (explain "all" only):
	// what the placement moves onto the chosen node.
	InstanceCost *api.InstanceCost
	// Expected is the instance's expected work the decision weighed: with the
	// utilisation algorithm, or a request with a hint (nil otherwise).
	Expected *api.ExpectedWork
}

// Place answers a placement request. It reads only the in-memory snapshot, never the
// store, and reserves capacity on the chosen node unless the request is a dry run.
func (j *Judge) Place(req api.PlacementRequest) (PlacementAnswer, error) {
	start := time.Now()
	algo := req.Algorithm
	if algo == "" {
		algo = j.o.Algorithm
	}
	p, ok := j.plugins[algo]
	if !ok {
		_, err := lbplugins.Lookup(algo)
		if err == nil {
			err = fmt.Errorf("algorithm %q is not available", algo)
		}
		j.m.placements.WithLabelValues("unknown", "invalid").Inc()
		return PlacementAnswer{}, err
	}
	snap := j.snapshot()
	now := j.now()
	if j.res.Due(now) {
		j.res.Expire(now)
	}
	if !req.DryRun {
		// Asked again for the same instance: the answer replaces the last one, which
		// then weighs on no node as this decision is made.
		j.res.Drop(req.Instance)
	}
	// Every placement weighs the instance's expected work, whatever the algorithm, so
	// that its reservation holds it in cores for the utilisation algorithm.
	exp := snap.load.expected(req.Expected, req.Instance)
	d, err := snap.Decide(p, lbplugins.Request{Instance: req.Instance, Exclude: req.Exclude, Algorithm: algo,
		Reserved: snap.reserved, TopK: req.Top, ExplainAll: req.Explain == api.ExplainAll,
		Expected: lbplugins.Work{Rows: exp.RowsPerS, Bytes: exp.BytesPerS, Read: exp.BinlogBytesPerS}, RunsOn: snap.load.runsOn[req.Instance],
		MaxUtilisation: j.o.Rebalance.MaxUtilisation, StaleAt: j.stalenessNow(now)}, now)
	am := j.byAlgo[algo]
	am.seconds.Observe(time.Since(start).Seconds())
	ans := PlacementAnswer{Decision: d}
	if req.Explain == api.ExplainAll {
		ans.InstanceCost = j.instanceCost(req.Instance)
	}
	if algo == utilisation.Name || req.Expected != nil {
		e := exp // a copy of its own: &exp would put exp on the heap in every placement
		ans.Expected = &e
	}
	rec := Placement{At: now, Instance: req.Instance, Algorithm: algo, Node: d.Node}
	switch {
	case err == nil:
		am.ok.Inc()
		if !req.DryRun {
			count, has := reportedInstances(snap.Snapshot, d.Node)
			if r, ok := j.res.Reserve(d.Node, req.Instance, now, count, has, exp.Work); ok {
				ans.Reservation = &r
			}
		}
	case errors.Is(err, lbplugins.ErrNoCandidates):
		am.noCandidates.Inc()
		rec.Error = err.Error()
	default:
		am.failed.Inc()
		rec.Error = err.Error()
	}
	j.remember(&rec)
	return ans, err
}

// remember keeps a placement for the status page in a lock-free ring.
func (j *Judge) remember(p *Placement) {
	p.seq = j.recentN.Add(1)
	j.recent[p.seq%maxRecent].Store(p)
}

// Recent returns the last placements, newest first.
func (j *Judge) Recent() []Placement {
	out := make([]Placement, 0, maxRecent)
	for i := range j.recent {
		if p := j.recent[i].Load(); p != nil {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b Placement) int { return cmp.Compare(b.seq, a.seq) })
	return out
}

// Reservations returns a node's pending reservations, oldest first: not those expired
// by now, which the next sweep drops.
func (j *Judge) Reservations(node string) []api.Reservation { return j.res.Node(node, j.now()) }
