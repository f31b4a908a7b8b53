// Package storetest is the conformance suite every store.Store implementation passes
// (store/sqlite, store/elastic, and the store.Buffered wrapper around either).
//
// Percentiles are checked against store.P95 computed in Go from the very points written.
// An exact store must match it; an engine that uses a sketch (Elasticsearch's TDigest)
// must land within a rank window around it: between the Go quantiles at 0.95−d and
// 0.95+d with d = max(1%, 1/n). That is the error a TDigest of compression 100 promises
// near the tails, independent of the values' scale.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// Run runs the suite. newStore returns a store for one subtest; it may be shared with
// other tests (the Elasticsearch engine is), so the suite writes under node names unique
// to the run and only looks at its own nodes. Run closes every store it obtains. The
// suite calls Refresh between writing and reading, as the contract requires.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	r := newRun(newStore)
	t.Run("StatsAndLabels", r.statsAndLabels)
	t.Run("Profile", r.profile)
	t.Run("Nodes", r.nodes)
	t.Run("Series", r.series)
	t.Run("EmptySeries", r.emptySeries)
	t.Run("RewriteIsIdempotent", r.rewrite)
	t.Run("Scan", r.scan)
	t.Run("ConcurrentWrites", r.concurrentWrites)
	t.Run("InvalidInput", r.invalidInput)
	t.Run("DeleteBefore", r.deleteBefore)
	t.Run("Records", r.records)
	t.Run("Close", r.close)
}

// RunConcurrentWrites runs the suite's ConcurrentWrites case alone: writers and readers on
// one store at once. It serves a store whose whole suite is too slow under -race to run
// there (SQLite's engine is transpiled C): the race detector still sees its concurrent use.
func RunConcurrentWrites(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("ConcurrentWrites", newRun(newStore).concurrentWrites)
}

func newRun(newStore func(t *testing.T) store.Store) *run {
	return &run{
		newStore: newStore,
		prefix:   fmt.Sprintf("st%08x-", rand.Uint32()),
		// A random day in 2001–2010 keeps the suite's daily indices and deletions away
		// from live data and, mostly, from other runs of the suite.
		base: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rand.IntN(3600)),
	}
}

type run struct {
	newStore func(t *testing.T) store.Store
	prefix   string
	base     time.Time
	seq      int
	mu       sync.Mutex
}

// open returns a fresh store and a node-name prefix unique to the calling subtest.
func (r *run) open(t *testing.T) (store.Store, string) {
	t.Helper()
	s := r.newStore(t)
	t.Cleanup(func() { _ = s.Close() })
	r.mu.Lock()
	r.seq++
	p := fmt.Sprintf("%s%d-", r.prefix, r.seq)
	r.mu.Unlock()
	return s, p
}

// start returns the subtest's own day: distinct days keep one subtest's deletions from
// touching another's points on engines that delete whole daily indices.
func (r *run) day(n int) time.Time { return r.base.AddDate(0, 0, n) }

// refresh makes what was written visible, as a reader of the store must before it reads.
func refresh(t testing.TB, ctx context.Context, s store.Store) {
	t.Helper()
	if err := s.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// series names one label set of one metric of one node.
type series struct {
	name   string
	labels map[string]string
}

var allSeries = []series{
	{"cpu.util", nil},
	{"wave.tps", nil},
	{"wave.tps", map[string]string{"instance": "orders"}},
	{"wave.tps", map[string]string{"instance": "users"}},
	{"wave.lag_s", map[string]string{"instance": "orders", "source": "db-1"}},
}

// gen writes one point per series of each node every step over [from, to), with values
// that depend on the hour so that profiles differ between hours.
func gen(rng *rand.Rand, nodes []string, from, to time.Time, step time.Duration) []store.Point {
	var pts []store.Point
	for ts := from; ts.Before(to); ts = ts.Add(step) {
		for ni, n := range nodes {
			for si, s := range allSeries {
				v := float64(ts.Hour()*10+ni*3+si) + rng.Float64()*50
				if rng.IntN(40) == 0 {
					v += 500 // occasional spikes, so that p95 and max are not the same point
				}
				pts = append(pts, store.Point{Node: n, Name: s.name, Labels: s.labels, TS: ts, Value: v})
			}
		}
	}
	return pts
}

// Expected returns the values of pts selected by q, sorted ascending.
func Expected(pts []store.Point, q store.Query) []float64 {
	key := metric.LabelSetKey(q.Labels)
	var vs []float64
	for _, p := range pts {
		if p.Node == q.Node && p.Name == q.Name && metric.LabelSetKey(p.Labels) == key &&
			!p.TS.Before(q.From) && p.TS.Before(q.To) {
			vs = append(vs, p.Value)
		}
	}
	slices.Sort(vs)
	return vs
}

// CheckStats compares got with the statistics of the ascending values want: Count exact,
// Avg and Max to 1e-9 (relative beyond 1), P95 within the suite's TDigest rank window.
func CheckStats(t testing.TB, what string, got store.Stats, want []float64) {
	t.Helper()
	if got.Count != int64(len(want)) {
		t.Fatalf("%s: count %d, want %d", what, got.Count, len(want))
	}
	if len(want) == 0 {
		if got != (store.Stats{}) {
			t.Fatalf("%s: empty series gave %+v, want zero stats", what, got)
		}
		return
	}
	var sum float64
	for _, v := range want {
		sum += v
	}
	avg, max := sum/float64(len(want)), want[len(want)-1]
	if !close9(got.Avg, avg) {
		t.Fatalf("%s: avg %.12g, want %.12g", what, got.Avg, avg)
	}
	if !close9(got.Max, max) {
		t.Fatalf("%s: max %.12g, want %.12g", what, got.Max, max)
	}
	lo, hi := P95Window(want)
	if got.P95 < lo-1e-9 || got.P95 > hi+1e-9 {
		t.Fatalf("%s: p95 %.12g outside [%.12g, %.12g] around exact %.12g (n=%d)",
			what, got.P95, lo, hi, store.P95(want), len(want))
	}
}

// P95Window is the range a sketch-based p95 of the ascending values must fall in.
func P95Window(sorted []float64) (lo, hi float64) {
	d := math.Max(0.01, 1/float64(len(sorted)))
	return store.Quantile(sorted, math.Max(0, 0.95-d)), store.Quantile(sorted, math.Min(1, 0.95+d))
}

func close9(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func (r *run) statsAndLabels(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	nodes := []string{p + "a", p + "b", p + "c"}
	// Six hours across midnight, so that daily stores see two days.
	from := r.day(0).Add(20 * time.Hour)
	to := from.Add(6 * time.Hour)
	const step = 2 * time.Minute
	perSeries := int(to.Sub(from) / step)
	pts := gen(rand.New(rand.NewPCG(1, 2)), nodes, from, to, step)
	// Written in several batches, out of time order.
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
	for chunk := range slices.Chunk(pts, 1000) {
		if err := s.Write(ctx, chunk); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	refresh(t, ctx, s)
	ranges := []struct {
		name     string
		from, to time.Time
	}{
		{"all", from, to},
		// Boundaries fall exactly on points: From is included, To excluded.
		{"sub", from.Add(90 * time.Minute), from.Add(4 * time.Hour)},
		{"one-point", from.Add(time.Hour), from.Add(time.Hour + time.Second)},
		{"between points", from.Add(time.Hour + time.Second), from.Add(time.Hour + step)},
		{"wider", from.Add(-48 * time.Hour), to.Add(48 * time.Hour)},
		{"before", from.Add(-time.Hour), from},
		{"inverted", to, from},
	}
	for _, n := range nodes {
		for _, se := range allSeries {
			for _, rg := range ranges {
				q := store.Query{Node: n, Name: se.name, Labels: se.labels, From: rg.from, To: rg.to}
				got, err := s.Stats(ctx, q)
				if err != nil {
					t.Fatalf("stats %s: %v", describe(q), err)
				}
				CheckStats(t, rg.name+" "+describe(q), got, Expected(pts, q))
			}
		}
	}
	// Label selection: nil and empty select only unlabelled points, a subset of a
	// point's labels or a different value selects nothing.
	n := nodes[0]
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   int
	}{
		{"nil", nil, perSeries},
		{"empty", map[string]string{}, perSeries},
		{"exact", map[string]string{"instance": "orders"}, perSeries},
		{"other value", map[string]string{"instance": "payments"}, 0},
		{"superset", map[string]string{"instance": "orders", "extra": "x"}, 0},
	} {
		q := store.Query{Node: n, Name: "wave.tps", Labels: tc.labels, From: from, To: to}
		got, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatalf("labels %s: %v", tc.name, err)
		}
		if got.Count != int64(tc.want) {
			t.Errorf("labels %s: count %d, want %d", tc.name, got.Count, tc.want)
		}
	}
	// wave.lag_s carries two labels: one of them alone is not "exactly those labels".
	q := store.Query{Node: n, Name: "wave.lag_s", Labels: map[string]string{"instance": "orders"}, From: from, To: to}
	if got, err := s.Stats(ctx, q); err != nil || got.Count != 0 {
		t.Errorf("subset of labels: %+v, %v; want count 0", got, err)
	}
}

func describe(q store.Query) string {
	return fmt.Sprintf("%s/%s%s", q.Node, q.Name, metric.LabelSetKey(q.Labels))
}

func (r *run) profile(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	nodes := []string{p + "a", p + "b"}
	// Three days at 5-minute steps leave 36 points per hour of the day; the fourth
	// day fills only hours 0–5, so hours differ in count.
	from := r.day(10)
	to := from.Add(3*24*time.Hour + 6*time.Hour)
	pts := gen(rand.New(rand.NewPCG(5, 6)), nodes, from, to, 5*time.Minute)
	if err := s.Write(ctx, pts); err != nil {
		t.Fatalf("write: %v", err)
	}
	refresh(t, ctx, s)
	var byHour [24][]store.Point // the written points by hour of the day, grouped once
	for _, pt := range pts {
		h := pt.TS.UTC().Hour()
		byHour[h] = append(byHour[h], pt)
	}
	for _, rg := range []struct {
		name     string
		from, to time.Time
	}{
		{"all", from, to},
		{"part", from.Add(30 * time.Hour), from.Add(40 * time.Hour)}, // hours 6–15 only
	} {
		for _, n := range nodes {
			for _, se := range allSeries[:3] {
				q := store.Query{Node: n, Name: se.name, Labels: se.labels, From: rg.from, To: rg.to}
				prof, err := s.Profile(ctx, q)
				if err != nil {
					t.Fatalf("profile %s: %v", describe(q), err)
				}
				for h, sel := range byHour {
					CheckStats(t, fmt.Sprintf("%s hour %d %s", rg.name, h, describe(q)), prof[h], Expected(sel, q))
				}
			}
		}
	}
	// A series that does not exist has an all-zero profile.
	prof, err := s.Profile(ctx, store.Query{Node: p + "none", Name: "cpu.util", From: from, To: to})
	if err != nil || prof != (store.HourProfile{}) {
		t.Fatalf("profile of a missing series: %+v, %v", prof, err)
	}
}

func (r *run) nodes(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(20)
	// Node a: day 0 only; b: day 1 only; c: both days; d: at the very end of day 1.
	pts := []store.Point{
		{Node: p + "a", Name: "cpu.util", TS: d.Add(time.Hour), Value: 1},
		{Node: p + "b", Name: "cpu.util", TS: d.Add(25 * time.Hour), Value: 2},
		{Node: p + "c", Name: "cpu.util", TS: d.Add(2 * time.Hour), Value: 3},
		{Node: p + "c", Name: "wave.tps", Labels: map[string]string{"instance": "x"}, TS: d.Add(26 * time.Hour), Value: 4},
		{Node: p + "d", Name: "load.1", TS: d.Add(48*time.Hour - time.Second), Value: 5},
	}
	if err := s.Write(ctx, pts); err != nil {
		t.Fatalf("write: %v", err)
	}
	refresh(t, ctx, s)
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"day 0", d, d.Add(24 * time.Hour), []string{"a", "c"}},
		{"day 1", d.Add(24 * time.Hour), d.Add(48 * time.Hour), []string{"b", "c", "d"}},
		{"to excludes", d.Add(24 * time.Hour), d.Add(48*time.Hour - time.Second), []string{"b", "c"}},
		{"both", d, d.Add(48 * time.Hour), []string{"a", "b", "c", "d"}},
		{"none", d.Add(-24 * time.Hour), d, nil},
	} {
		got, err := s.Nodes(ctx, tc.from, tc.to)
		if err != nil {
			t.Fatalf("%s: nodes: %v", tc.name, err)
		}
		if !slices.IsSorted(got) {
			t.Errorf("%s: nodes not sorted: %v", tc.name, got)
		}
		var mine []string
		for _, n := range got {
			if rest, ok := strings.CutPrefix(n, p); ok {
				mine = append(mine, rest)
			}
		}
		if !slices.Equal(mine, tc.want) {
			t.Errorf("%s: nodes %v, want %v", tc.name, mine, tc.want)
		}
	}
}

// series checks Series: by name, node and labels, in range, sorted; an instance's
// series listed on every node it was reported by (it moved from a to b).
func (r *run) series(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(22)
	x, y := map[string]string{"instance": "x"}, map[string]string{"instance": "y"}
	pts := []store.Point{
		{Node: p + "a", Name: "wave.tps", Labels: x, TS: d.Add(time.Hour), Value: 1},
		{Node: p + "a", Name: "cpu.util", TS: d.Add(time.Hour), Value: 1},
		{Node: p + "b", Name: "wave.tps", Labels: x, TS: d.Add(25 * time.Hour), Value: 2},
		{Node: p + "b", Name: "wave.tps", Labels: y, TS: d.Add(2 * time.Hour), Value: 3},
		{Node: p + "b", Name: "wave.tps", TS: d.Add(3 * time.Hour), Value: 4},
		{Node: p + "c", Name: "wave.bytes_per_s", Labels: x, TS: d.Add(26 * time.Hour), Value: 5},
		{Node: p + "d", Name: "wave.tps", Labels: map[string]string{"instance": "z", "source": "s1"}, TS: d.Add(48*time.Hour - time.Second), Value: 6},
	}
	if err := s.Write(ctx, pts); err != nil {
		t.Fatalf("write: %v", err)
	}
	refresh(t, ctx, s)
	for _, tc := range []struct {
		what, name string
		from, to   time.Time
		want       []string
	}{
		{"day 0", "wave.tps", d, d.Add(24 * time.Hour), []string{`a{"instance":"x"}`, `b`, `b{"instance":"y"}`}},
		{"day 1", "wave.tps", d.Add(24 * time.Hour), d.Add(48 * time.Hour), []string{`b{"instance":"x"}`, `d{"instance":"z","source":"s1"}`}},
		{"to excludes", "wave.tps", d.Add(24 * time.Hour), d.Add(48*time.Hour - time.Second), []string{`b{"instance":"x"}`}},
		{"from mid-bucket", "wave.tps", d.Add(time.Hour + time.Second), d.Add(48 * time.Hour),
			[]string{`b`, `b{"instance":"x"}`, `b{"instance":"y"}`, `d{"instance":"z","source":"s1"}`}},
		{"another name", "wave.bytes_per_s", d, d.Add(48 * time.Hour), []string{`c{"instance":"x"}`}},
		{"none", "wave.tps", d.Add(-24 * time.Hour), d, nil},
	} {
		got, err := s.Series(ctx, tc.name, tc.from, tc.to)
		if err != nil {
			t.Fatalf("%s: series: %v", tc.what, err)
		}
		var mine []string
		for _, k := range got {
			if rest, ok := strings.CutPrefix(k.Node, p); ok {
				mine = append(mine, rest+metric.LabelSetKey(k.Labels))
			}
		}
		if !slices.Equal(mine, tc.want) {
			t.Errorf("%s: series %v, want %v", tc.what, mine, tc.want)
		}
		if !slices.IsSortedFunc(got, store.CompareSeries) {
			t.Errorf("%s: series not sorted: %v", tc.what, got)
		}
	}
}

func (r *run) emptySeries(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(30)
	if err := s.Write(ctx, []store.Point{{Node: p + "a", Name: "cpu.util", TS: d.Add(time.Hour), Value: 7}}); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := s.Write(ctx, nil); err != nil {
		t.Fatalf("writing no points: %v", err)
	}
	refresh(t, ctx, s)
	for _, q := range []store.Query{
		{Node: p + "missing", Name: "cpu.util", From: d, To: d.Add(24 * time.Hour)},
		{Node: p + "a", Name: "missing", From: d, To: d.Add(24 * time.Hour)},
		{Node: p + "a", Name: "cpu.util", From: d.Add(2 * time.Hour), To: d.Add(24 * time.Hour)},
		{Node: p + "a", Name: "cpu.util", Labels: map[string]string{"k": "v"}, From: d, To: d.Add(24 * time.Hour)},
		{Node: p + "a", Name: "cpu.util", From: d.Add(time.Hour), To: d.Add(time.Hour)}, // empty range
	} {
		got, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatalf("stats %s: %v", describe(q), err)
		}
		if got != (store.Stats{}) {
			t.Errorf("stats %s: %+v, want zero", describe(q), got)
		}
	}
	got, err := s.Stats(ctx, store.Query{Node: p + "a", Name: "cpu.util", From: d, To: d.Add(24 * time.Hour)})
	if err != nil || got != (store.Stats{Count: 1, Avg: 7, Max: 7, P95: 7}) {
		t.Errorf("single point: %+v, %v; want count 1, all 7", got, err)
	}
}

func (r *run) rewrite(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(40)
	pts := gen(rand.New(rand.NewPCG(7, 8)), []string{p + "a"}, d, d.Add(time.Hour), time.Minute)
	for range 2 {
		if err := s.Write(ctx, pts); err != nil {
			t.Fatalf("write: %v", err)
		}
		refresh(t, ctx, s)
	}
	q := store.Query{Node: p + "a", Name: "cpu.util", From: d, To: d.Add(time.Hour)}
	got, err := s.Stats(ctx, q)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	// A retried write (the buffer's, or a redelivered Kafka batch) must not count twice.
	CheckStats(t, "rewritten", got, Expected(pts, q))
	// Same identity, new value: the last write wins.
	upd := []store.Point{{Node: p + "a", Name: "cpu.util", TS: d, Value: 1e6}}
	if err := s.Write(ctx, upd); err != nil {
		t.Fatalf("write: %v", err)
	}
	refresh(t, ctx, s)
	got, err = s.Stats(ctx, q)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if got.Count != 60 || got.Max != 1e6 {
		t.Errorf("after overwrite: %+v, want count 60 and max 1e6", got)
	}
	// The overwrite touched that point only: the other series of the node at the same
	// time (stores may keep them together) are as they were.
	for _, se := range allSeries[1:] {
		q := store.Query{Node: p + "a", Name: se.name, Labels: se.labels, From: d, To: d.Add(time.Hour)}
		got, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatalf("stats %s: %v", describe(q), err)
		}
		CheckStats(t, "beside the overwrite "+describe(q), got, Expected(pts, q))
	}
	// Points of one node, time and label set that arrive in separate writes all stay.
	t1 := d.Add(2 * time.Hour)
	for i, name := range []string{"cpu.util", "mem.used_pct", "load.1"} {
		if err := s.Write(ctx, []store.Point{{Node: p + "b", Name: name, TS: t1, Value: float64(i + 1)}}); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	refresh(t, ctx, s)
	for i, name := range []string{"cpu.util", "mem.used_pct", "load.1"} {
		got, err := s.Stats(ctx, store.Query{Node: p + "b", Name: name, From: t1, To: t1.Add(time.Second)})
		if err != nil || got.Count != 1 || got.Max != float64(i+1) {
			t.Errorf("%s written on its own beside the others: %+v, %v; want count 1, value %d", name, got, err, i+1)
		}
	}
}

func (r *run) concurrentWrites(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(50)
	const writers, batches, per = 4, 10, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches+writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var pts []store.Point
				for i := range per {
					ts := d.Add(time.Duration(w*batches*per+b*per+i) * time.Second)
					pts = append(pts, store.Point{Node: p + "a", Name: "cpu.util", TS: ts, Value: float64(i)})
				}
				if err := s.Write(ctx, pts); err != nil {
					errs <- err
					return
				}
			}
			// Readers run alongside the writers.
			if _, err := s.Stats(ctx, store.Query{Node: p + "a", Name: "cpu.util", From: d, To: d.Add(24 * time.Hour)}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent use: %v", err)
	}
	refresh(t, ctx, s)
	got, err := s.Stats(ctx, store.Query{Node: p + "a", Name: "cpu.util", From: d, To: d.Add(24 * time.Hour)})
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if got.Count != writers*batches*per || got.Max != per-1 {
		t.Errorf("after concurrent writes: %+v, want count %d, max %d", got, writers*batches*per, per-1)
	}
}

func (r *run) invalidInput(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(60)
	good := store.Point{Node: p + "a", Name: "cpu.util", TS: d.Add(time.Hour), Value: 1}
	for _, tc := range []struct {
		name string
		bad  store.Point
		want string
	}{
		{"empty node", store.Point{Name: "cpu.util", TS: d, Value: 1}, "node is empty"},
		{"empty name", store.Point{Node: p + "a", TS: d, Value: 1}, "metric name is empty"},
		{"NaN", store.Point{Node: p + "a", Name: "x", TS: d, Value: math.NaN()}, "not finite"},
		{"Inf", store.Point{Node: p + "a", Name: "x", TS: d, Value: math.Inf(1)}, "not finite"},
		{"zero time", store.Point{Node: p + "a", Name: "x", Value: 1}, "before 1970"},
		{"long node", store.Point{Node: strings.Repeat("n", 300), Name: "x", TS: d, Value: 1}, "at most"},
		{"bad utf8", store.Point{Node: p + "\xff", Name: "x", TS: d, Value: 1}, "UTF-8"},
		{"empty label key", store.Point{Node: p + "a", Name: "x", Labels: map[string]string{"": "v"}, TS: d, Value: 1}, "label key is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Write(ctx, []store.Point{good, tc.bad})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("write: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A rejected batch stores nothing, not even its valid points.
	refresh(t, ctx, s)
	got, err := s.Stats(ctx, store.Query{Node: p + "a", Name: "cpu.util", From: d, To: d.Add(24 * time.Hour)})
	if err != nil || got.Count != 0 {
		t.Fatalf("after rejected batches: %+v, %v; want nothing stored", got, err)
	}
	for _, q := range []store.Query{
		{Name: "cpu.util", From: d, To: d.Add(time.Hour)},
		{Node: p + "a", From: d, To: d.Add(time.Hour)},
	} {
		if _, err := s.Stats(ctx, q); err == nil {
			t.Errorf("stats %+v: no error for a query without node or name", q)
		}
		if _, err := s.Profile(ctx, q); err == nil {
			t.Errorf("profile %+v: no error for a query without node or name", q)
		}
	}
}

func (r *run) deleteBefore(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(70)
	// Three whole days, one point per series every 20 minutes.
	pts := gen(rand.New(rand.NewPCG(9, 10)), []string{p + "a"}, d, d.Add(72*time.Hour), 20*time.Minute)
	if err := s.Write(ctx, pts); err != nil {
		t.Fatalf("write: %v", err)
	}
	refresh(t, ctx, s)
	all := store.Query{Node: p + "a", Name: "cpu.util", From: d.Add(-24 * time.Hour), To: d.Add(96 * time.Hour)}
	check := func(what string) {
		t.Helper()
		got, err := s.Stats(ctx, all)
		if err != nil {
			t.Fatalf("%s: stats: %v", what, err)
		}
		CheckStats(t, what, got, Expected(pts, all))
	}
	// Before all data: nothing goes.
	if err := s.DeleteBefore(ctx, d.Add(-48*time.Hour)); err != nil {
		t.Fatalf("delete before the data: %v", err)
	}
	check("delete before the data")
	// In the middle of day 1 (and between two points): day 0 goes whole, day 1 in part.
	cut := d.Add(36*time.Hour + 10*time.Minute)
	if err := s.DeleteBefore(ctx, cut); err != nil {
		t.Fatalf("delete: %v", err)
	}
	pts = slices.DeleteFunc(pts, func(pt store.Point) bool { return pt.TS.Before(cut) })
	check("after delete")
	nodes, err := s.Nodes(ctx, d, cut)
	if err != nil {
		t.Fatalf("nodes: %v", err)
	}
	if slices.Contains(nodes, p+"a") {
		t.Errorf("node %s still listed before the cut: %v", p+"a", nodes)
	}
	// Idempotent.
	if err := s.DeleteBefore(ctx, cut); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	check("after a second delete")
	// Writing into the deleted range again works (a late point of an old day).
	late := store.Point{Node: p + "a", Name: "cpu.util", TS: d.Add(time.Hour), Value: 3}
	if err := s.Write(ctx, []store.Point{late}); err != nil {
		t.Fatalf("late write: %v", err)
	}
	refresh(t, ctx, s)
	pts = append(pts, late)
	check("after a late write")
}

func (r *run) close(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	d := r.day(80)
	pt := store.Point{Node: p + "a", Name: "cpu.util", TS: d, Value: 1}
	if err := s.Write(ctx, []store.Point{pt}); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	q := store.Query{Node: p + "a", Name: "cpu.util", From: d, To: d.Add(time.Hour)}
	for name, err := range map[string]error{
		"write":        s.Write(ctx, []store.Point{pt}),
		"stats":        func() error { _, err := s.Stats(ctx, q); return err }(),
		"profile":      func() error { _, err := s.Profile(ctx, q); return err }(),
		"nodes":        func() error { _, err := s.Nodes(ctx, d, d.Add(time.Hour)); return err }(),
		"scan":         s.Scan(ctx, d, d.Add(time.Hour), func([]store.Point) error { return nil }),
		"refresh":      s.Refresh(ctx),
		"delete":       s.DeleteBefore(ctx, d),
		"records":      s.WriteRecords(ctx, []store.Record{{Kind: p + "k", Key: "a", Value: []byte("1")}}),
		"read records": func() error { _, err := s.Records(ctx, p+"k"); return err }(),
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
}

// Large writes n points of one series of a fresh node (in batches of 5,000, spread one
// per second, so across several hours and at least two days), reads the statistics
// back and checks them against Go as CheckStats does. It returns what the store said and
// the sorted values, for callers that check an exact store more tightly.
func Large(t testing.TB, s store.Store, n int) (store.Stats, []float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := fmt.Sprintf("large%08x", rand.Uint32())
	from := time.Date(2011, 1, 1, 20, 0, 0, 0, time.UTC).AddDate(0, 0, rand.IntN(3600))
	rng := rand.New(rand.NewPCG(11, 12))
	pts := make([]store.Point, n)
	vals := make([]float64, n)
	for i := range pts {
		// A skewed distribution, where p95 sits far from the mean and the maximum.
		v := math.Exp(rng.NormFloat64()) * 20
		pts[i] = store.Point{Node: node, Name: "cpu.util", TS: from.Add(time.Duration(i) * time.Second), Value: v}
		vals[i] = v
	}
	for chunk := range slices.Chunk(pts, 5000) {
		if err := s.Write(ctx, chunk); err != nil {
			t.Fatalf("write %d points: %v", len(chunk), err)
		}
	}
	refresh(t, ctx, s)
	q := store.Query{Node: node, Name: "cpu.util", From: from, To: from.Add(time.Duration(n) * time.Second)}
	got, err := s.Stats(ctx, q)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	slices.Sort(vals)
	CheckStats(t, "large series", got, vals)
	exact := store.P95(vals)
	t.Logf("%d points: avg %.6f max %.6f p95 %.6f (exact %.6f, relative error %.2e)",
		got.Count, got.Avg, got.Max, got.P95, exact, math.Abs(got.P95-exact)/exact)
	return got, vals
}
