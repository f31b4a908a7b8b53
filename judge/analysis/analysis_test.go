package analysis_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func batch(node string, ts time.Time, pts ...metric.Point) metric.Batch {
	return metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: pts}
}

func TestIncrementalStatistics(t *testing.T) {
	start := time.Date(2026, 11, 29, 14, 0, 5, 0, time.UTC)
	c := &clock{t: start}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now, Alpha: 0.5})
	require.NoError(t, err)

	values := []float64{10, 30, 20, 50, 40, 90, 15, 25, 35, 45}
	for i, v := range values {
		c.Set(start.Add(time.Duration(i) * 10 * time.Second))
		a.Observe(batch("wave-1", c.Now(),
			metric.Point{Name: "cpu.util", Value: v},
			metric.Point{Name: "wave.tps", Value: 100, Labels: map[string]string{"instance": "orders"}},
		))
	}
	n, ok := a.Node("wave-1")
	require.True(t, ok)
	require.Equal(t, int64(10), n.Batches)
	require.Equal(t, 10*time.Second, n.Interval)
	require.Equal(t, start.Add(90*time.Second), n.LastSeen)
	require.Len(t, n.Series, 2)
	cpu := n.Series[0]
	require.Equal(t, "cpu.util", cpu.Name)

	mean, m2, ewma := 0.0, 0.0, values[0]
	for i, v := range values {
		mean += v
		if i > 0 {
			ewma = 0.5*v + 0.5*ewma
		}
	}
	mean /= float64(len(values))
	for _, v := range values {
		m2 += (v - mean) * (v - mean)
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	require.Equal(t, int64(10), cpu.Count)
	require.InDelta(t, mean, cpu.Mean, 1e-9)
	require.InDelta(t, math.Sqrt(m2/9), cpu.Stddev, 1e-9)
	require.Equal(t, 10.0, cpu.Min)
	require.Equal(t, 90.0, cpu.Max)
	require.Equal(t, 45.0, cpu.Last)
	require.InDelta(t, ewma, cpu.EWMA, 1e-9)
	// DDSketch's p95 is a value of the sketch within 1 % relative error of a true order statistic.
	require.InEpsilon(t, store.Quantile(sorted, 0.95), cpu.P95, 0.35, "p95 near the top of ten values")
	require.GreaterOrEqual(t, cpu.P95, 50*0.99)

	tps := n.Series[1]
	require.Equal(t, "wave.tps", tps.Name)
	require.Equal(t, map[string]string{"instance": "orders"}, tps.Labels)

	views, _ := a.Views()
	require.Len(t, views, 1)
	require.Contains(t, views[0].Current, "cpu.util")
	require.NotContains(t, views[0].Current, "wave.tps", "labelled series are not node-level")
}

func TestIncrementalP95Accuracy(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	var vals []float64
	for i := range 5000 {
		v := float64((i*7919)%10000) / 10 // 0–999.9, scrambled
		vals = append(vals, v)
		a.Observe(batch("n", c.Now().Add(time.Duration(i)*time.Millisecond), metric.Point{Name: "x", Value: v}))
	}
	sort.Float64s(vals)
	n, _ := a.Node("n")
	require.InEpsilon(t, store.Quantile(vals, 0.95), n.Series[0].P95, analysis.SketchAccuracy*1.5)
}

func TestIncrementalHourRollover(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 14, 59, 50, 0, time.UTC)}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	a.Observe(batch("wave-1", c.Now(), metric.Point{Name: "cpu.util", Value: 80}))
	require.Equal(t, time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), a.Hour())
	v1 := a.Version()

	// Crossing the hour with no batch: a read alone rolls over. Liveness survives, and
	// so does the level, carried; the hour's statistics restart.
	c.Set(time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC))
	require.Equal(t, time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC), a.Hour())
	require.NotEqual(t, v1, a.Version())
	n, ok := a.Node("wave-1")
	require.True(t, ok)
	require.Len(t, n.Series, 1)
	require.Equal(t, lbplugins.Current{Last: 80, EWMA: 80, Carried: true}, n.Series[0].Current)
	require.Zero(t, n.Batches)
	require.Equal(t, time.Date(2026, 11, 29, 14, 59, 50, 0, time.UTC), n.LastSeen)

	// A late batch stamped 14:59:55 arriving at 15:00:05 keeps the node alive but does
	// not count toward 15:00.
	c.Set(time.Date(2026, 11, 29, 15, 0, 5, 0, time.UTC))
	a.Observe(batch("wave-1", time.Date(2026, 11, 29, 14, 59, 55, 0, time.UTC), metric.Point{Name: "cpu.util", Value: 99}))
	n, _ = a.Node("wave-1")
	require.True(t, n.Series[0].Carried)
	require.Equal(t, c.Now(), n.LastSeen)
	require.Equal(t, int64(1), a.Late())

	// The new hour's statistics start from scratch; the EWMA goes on from the carried one.
	a.Observe(batch("wave-1", c.Now(), metric.Point{Name: "cpu.util", Value: 20}))
	n, _ = a.Node("wave-1")
	require.Len(t, n.Series, 1)
	require.Equal(t, int64(1), n.Series[0].Count)
	require.False(t, n.Series[0].Carried)
	require.Equal(t, 20.0, n.Series[0].Max)
	require.InDelta(t, 0.2*20+0.8*80, n.Series[0].EWMA, 1e-9)

	// A node silent for more than a day is forgotten at a rollover.
	c.Set(time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC))
	require.Empty(t, a.NodeIDs())
}

// A node's interval is the one its batches declare, never the time between them; Observe
// reports each change, which the judge keeps in its store for Declare after a restart.
func TestIncrementalDeclaredInterval(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	for _, step := range []struct {
		after    time.Duration
		interval float64
		lag      time.Duration // of the batch's timestamp behind the clock
		changed  bool
	}{
		{0, 30, 0, true},                                       // a new node
		{7 * time.Second, 30, 0, false},                        // early: still 30 s
		{5 * time.Minute, 30, 0, false},                        // late: still 30 s
		{30 * time.Second, 10, 0, true},                        // the agent's interval changed
		{10 * time.Second, 10, 1400 * time.Millisecond, false}, // a slower delivery: within offsetStep
		{10 * time.Second, 10, 40 * time.Second, false},        // the node's clock fell 40 s behind: no news yet
		{40 * time.Second, 10, 40 * time.Second, true},         // its batches pass its last: the offset is learned
		{10 * time.Second, 10, 41 * time.Second, false},
		{10 * time.Second, 10, -20 * time.Second, true}, // now 20 s ahead
	} {
		c.Set(c.Now().Add(step.after))
		require.Equal(t, step.changed, a.Observe(metric.Batch{Node: "n", TS: c.Now().Add(-step.lag), IntervalS: step.interval}))
		n, _ := a.Node("n")
		require.Equal(t, time.Duration(step.interval)*time.Second, n.Interval)
	}
	iv, off, ok := a.Timing("n")
	require.True(t, ok)
	require.Equal(t, 10*time.Second, iv)
	require.Equal(t, -20*time.Second, off)
	require.True(t, a.Declare("n", time.Minute, 0))
	n, _ := a.Node("n")
	require.Equal(t, time.Minute, n.Interval)
	require.False(t, a.Declare("unknown", time.Minute, 0), "a node the analysis does not hold")
	require.Len(t, a.NodeIDs(), 1)
}

func TestIncrementalOptions(t *testing.T) {
	_, err := analysis.NewIncremental(analysis.IncrementalOptions{Alpha: 1.5})
	require.EqualError(t, err, "ewma alpha 1.5: want 0 < alpha ≤ 1")
}

// failing wraps a real store and fails every query while down is set.
type failing struct {
	store.Store
	mu   sync.Mutex
	down bool
}

var errDown = errors.New("engine down")

func (f *failing) isDown() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.down }
func (f *failing) set(d bool)   { f.mu.Lock(); f.down = d; f.mu.Unlock() }
func (f *failing) Stats(ctx context.Context, q store.Query) (store.Stats, error) {
	if f.isDown() {
		return store.Stats{}, errDown
	}
	return f.Store.Stats(ctx, q)
}
func (f *failing) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	if f.isDown() {
		return nil, errDown
	}
	return f.Store.Nodes(ctx, from, to)
}

// historyStore is an empty SQLite store, the test's clock and the start of its hour (where
// the historical analysis's windows end).
func historyStore(t *testing.T) (st *sqlite.Store, now, until time.Time) {
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	now = time.Date(2026, 11, 29, 14, 20, 0, 0, time.UTC)
	return st, now, now.Truncate(time.Hour)
}

func TestHistorical(t *testing.T) {
	st, now, until := historyStore(t)

	// wave-1: cpu = hour of day, one point per 10 min over the last 8 days, plus points in
	// the current hour that the historical analysis must not see.
	var pts []store.Point
	var day, week []float64
	for ts := until.Add(-8 * 24 * time.Hour); ts.Before(now); ts = ts.Add(10 * time.Minute) {
		v := float64(ts.Hour())
		if ts.After(until.Add(-time.Hour)) && !ts.Before(until) {
			v = 1000
		}
		pts = append(pts, store.Point{Node: "wave-1", Name: "cpu.util", TS: ts, Value: v})
		if !ts.Before(until.Add(-24*time.Hour)) && ts.Before(until) {
			day = append(day, v)
		}
		if !ts.Before(until.Add(-7*24*time.Hour)) && ts.Before(until) {
			week = append(week, v)
		}
	}
	require.NoError(t, st.Write(context.Background(), pts))

	f := &failing{Store: st}
	c := &clock{t: now}
	h, err := analysis.NewHistorical(analysis.HistoricalOptions{
		Store: f, Metrics: []string{"cpu.util", "mem.used_pct"}, Now: c.Now,
		ExtraNodes: func() []string { return []string{"wave-new"} },
	})
	require.NoError(t, err)
	require.Nil(t, h.Snapshot())
	require.NoError(t, h.Refresh(context.Background()))
	s := h.Snapshot()
	require.Equal(t, until, s.Until)
	require.Len(t, s.Nodes, 1, "wave-new has no history yet")
	hist := s.Nodes["wave-1"]["cpu.util"]
	require.NotContains(t, s.Nodes["wave-1"], "mem.used_pct")

	sort.Float64s(day)
	sort.Float64s(week)
	require.Equal(t, int64(len(day)), hist.Day.Count)
	require.Equal(t, int64(len(week)), hist.Week.Count)
	require.Equal(t, 23.0, hist.Week.Max, "current-hour points (1000) excluded")
	require.InDelta(t, 11.5, hist.Day.Avg, 1e-9)
	require.InDelta(t, store.P95(week), hist.Week.P95, 1e-9)
	for hr := range 24 {
		require.InDelta(t, float64(hr), hist.Profile[hr].Avg, 1e-9, "hour %d", hr)
		require.Equal(t, int64(42), hist.Profile[hr].Count, "7 days × 6 points")
	}

	// The store fails: the refresh fails and the previous snapshot stays.
	f.set(true)
	c.Set(now.Add(10 * time.Minute))
	require.ErrorIs(t, h.Refresh(context.Background()), errDown)
	require.Same(t, s, h.Snapshot())
	ok, failed, last := h.Counts()
	require.Equal(t, int64(1), ok)
	require.Equal(t, int64(1), failed)
	require.Contains(t, last, "engine down")

	f.set(false)
	require.NoError(t, h.Refresh(context.Background()))
	require.NotSame(t, s, h.Snapshot())
}

// Each listed instance gets its hour-of-day profile of rows, bytes published and binlog
// read, each hour with its own points: an instance whose agent reported no read has rows
// and bytes but no read (ReadCount 0), which the plans take as "the level now".
func TestHistoricalInstanceProfiles(t *testing.T) {
	st, now, until := historyStore(t)
	var pts []store.Point
	for ts := until.Add(-3 * 24 * time.Hour); ts.Before(until); ts = ts.Add(30 * time.Minute) {
		hr := float64(ts.Hour())
		for _, p := range []struct {
			inst, name string
			v          float64
		}{
			{"filtered", metric.WaveTPS, 10}, {"filtered", metric.WaveBytesPerS, 1000}, {"filtered", metric.WaveBinlogBytesPerS, 1e5 * (1 + hr)},
			{"old-agent", metric.WaveTPS, 100 + hr}, {"old-agent", metric.WaveBytesPerS, 5e4},
		} {
			pts = append(pts, store.Point{Node: "wave-1", Name: p.name, Labels: map[string]string{"instance": p.inst}, TS: ts, Value: p.v})
		}
	}
	require.NoError(t, st.Write(context.Background(), pts))
	h, err := analysis.NewHistorical(analysis.HistoricalOptions{
		Store: st, Now: func() time.Time { return now },
		Instances: func() map[string][]string { return map[string][]string{"wave-1": {"filtered", "old-agent"}} },
	})
	require.NoError(t, err)
	require.NoError(t, h.Refresh(context.Background()))
	profs := h.Snapshot().Instances["wave-1"]
	for hr := range 24 {
		f, o := profs["filtered"], profs["old-agent"]
		require.InDelta(t, 1e5*float64(1+hr), f.Read[hr], 1e-6, "hour %d: the read's own day", hr)
		require.Equal(t, int64(6), f.ReadCount[hr], "3 days × 2 points")
		require.InDelta(t, 1000, f.Bytes[hr], 1e-9, "what it publishes stays flat")
		require.InDelta(t, float64(100+hr), o.Rows[hr], 1e-9)
		require.Equal(t, int64(6), o.Count[hr])
		require.Zero(t, o.ReadCount[hr], "no read reported")
	}
}

// A moved instance keeps its profile on the waves it left: the nodes that list it now
// have only the hours since the move (here wave-2, the last two), the store has its
// days on wave-1. An instance no node lists any more gets none.
func TestHistoricalProfilesFollowAMovedInstance(t *testing.T) {
	st, now, until := historyStore(t)
	moved := until.Add(-2 * time.Hour)
	writeMoved(t, st, until, moved, 3, func(node string, ts time.Time) []store.Point {
		rows := 100 + float64(ts.Hour())
		return []store.Point{
			{Node: node, Name: metric.WaveTPS, Labels: map[string]string{"instance": "moved"}, TS: ts, Value: rows},
			{Node: node, Name: metric.WaveBytesPerS, Labels: map[string]string{"instance": "moved"}, TS: ts, Value: 10 * rows},
			{Node: "wave-1", Name: metric.WaveTPS, Labels: map[string]string{"instance": "removed"}, TS: ts, Value: 7}}
	})
	h, err := analysis.NewHistorical(analysis.HistoricalOptions{
		Store: st, Now: func() time.Time { return now },
		Instances: func() map[string][]string { return map[string][]string{"wave-2": {"moved"}} },
	})
	require.NoError(t, err)
	require.NoError(t, h.Refresh(context.Background()))
	snap := h.Snapshot()
	left, runs := snap.Instances["wave-1"]["moved"], snap.Instances["wave-2"]["moved"]
	recent := map[int]bool{moved.Hour(): true, moved.Add(time.Hour).Hour(): true}
	for hr := range 24 {
		if recent[hr] {
			require.Equal(t, int64(2), runs.Count[hr], "hour %d: on wave-2 since the move", hr)
			require.Equal(t, int64(4), left.Count[hr], "hour %d: the two days before on wave-1", hr)
		} else {
			require.Zero(t, runs.Count[hr], "hour %d: wave-2 has none of it", hr)
			require.Equal(t, int64(6), left.Count[hr], "hour %d: 3 days × 2 points on the wave it left", hr)
		}
		require.InDelta(t, float64(100+hr), left.Rows[hr], 1e-9, "hour %d", hr)
		if left.Count[hr] > 0 {
			require.InDelta(t, float64(1000+10*hr), left.Bytes[hr], 1e-9, "hour %d", hr)
		}
	}
	for node, insts := range snap.Instances {
		_, ok := insts["removed"]
		require.False(t, ok, "%s: a profile of an instance no node lists", node)
	}
}

// TestIncrementalP95Signs checks the p95 with negative values and zeros in the sketch.
func TestIncrementalP95Signs(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    func(i int) float64
	}{
		{"negative", func(i int) float64 { return -float64((i*7919)%10000)/10 - 1 }},
		{"mixed", func(i int) float64 { return float64((i*7919)%10000)/10 - 900 }},
		{"mostly zero", func(i int) float64 { return float64(i%2) * -5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)}
			a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
			require.NoError(t, err)
			var vals []float64
			for i := range 2000 {
				vals = append(vals, tc.v(i))
				a.Observe(batch("n", c.Now().Add(time.Duration(i)*time.Millisecond), metric.Point{Name: "x", Value: vals[i]}))
			}
			sort.Float64s(vals)
			n, _ := a.Node("n")
			want := store.Quantile(vals, 0.95)
			require.InDelta(t, want, n.Series[0].P95, math.Abs(want)*analysis.SketchAccuracy*1.5)
		})
	}
}

// TestIncrementalConcurrentReads runs Observe beside Views, Nodes and Node (under -race it
// checks the lazily cached p95); the readers stop when the writers are done.
func TestIncrementalConcurrentReads(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	const perWriter = 400
	done := make(chan struct{})
	var readers, writers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				a.Views()
				a.Nodes()
				a.Node("w0")
			}
		})
	}
	for w := range 2 {
		writers.Go(func() {
			node := fmt.Sprintf("w%d", w)
			for i := range perWriter {
				a.Observe(batch(node, c.Now().Add(time.Duration(i)*time.Millisecond), metric.Point{Name: "cpu.util", Value: float64(i % 100)},
					metric.Point{Name: "wave.tps", Value: float64(i), Labels: map[string]string{"instance": "orders"}}))
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	views, _ := a.Views()
	require.Len(t, views, 2)
	for _, v := range views {
		cpu := v.Current["cpu.util"]
		require.Equal(t, int64(perWriter), cpu.Count)
		require.InEpsilon(t, 95, cpu.P95, analysis.SketchAccuracy*1.5, "p95 of 0–99 four times")
	}
}

// The p95 stays within what the hour saw: a constant series' p95 is that constant (the
// sketch alone gave 3.96 for a constant 4 and 94.1 for a constant 95).
func TestIncrementalP95WithinTheRange(t *testing.T) {
	for _, v := range []float64{4, 95, -7.5, 1e-3} {
		c := &clock{t: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)}
		a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
		require.NoError(t, err)
		for i := range 30 {
			a.Observe(batch("n", c.Now().Add(time.Duration(i)*time.Second), metric.Point{Name: "x", Value: v}))
		}
		n, _ := a.Node("n")
		require.Equal(t, v, n.Series[0].P95, "constant %v", v)
	}
}

// TestIncrementalLevelRestartsAfterASilence: a series whose next sample comes after it
// went stale (longer than the node's stale intervals) starts its level anew at that
// sample: its old level is another time's (a wave restarted after 77 s down read its
// old instances' count for 40 s more, the EWMA walking down from it: an outside trial).
// A shorter gap, or a carried hour, goes on from the level.
func TestIncrementalLevelRestartsAfterASilence(t *testing.T) {
	start := time.Date(2026, 11, 29, 14, 0, 5, 0, time.UTC)
	c := &clock{t: start}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	at := func(d time.Duration, v float64) float64 {
		t.Helper()
		c.Set(start.Add(d))
		a.Observe(batch("wave-1", c.Now(), metric.Point{Name: "wave.instances", Value: v}))
		n, ok := a.Node("wave-1")
		require.True(t, ok)
		return n.Series[0].EWMA
	}
	for i := range 5 {
		at(time.Duration(i)*10*time.Second, 5)
	}
	require.InDelta(t, 0.2*0+0.8*5, at(65*time.Second, 0), 1e-9, "25 s after the last: within three intervals, the level goes on")
	require.Equal(t, 0.0, at(65*time.Second+2*time.Minute, 0), "after 2 min of silence the level restarts at the new sample")
	require.Equal(t, 3.0, at(65*time.Second+4*time.Minute, 3), "and again")
}

// writeMoved writes, every 30 minutes over the days before until, the points of the
// instance "moved" that points gives for its node: wave-1, and wave-2 from moved on.
func writeMoved(t *testing.T, st store.Store, until, moved time.Time, days int, points func(node string, ts time.Time) []store.Point) {
	t.Helper()
	var pts []store.Point
	for ts := until.Add(-time.Duration(days) * 24 * time.Hour); ts.Before(until); ts = ts.Add(30 * time.Minute) {
		node := "wave-1"
		if !ts.Before(moved) {
			node = "wave-2"
		}
		pts = append(pts, points(node, ts)...)
	}
	require.NoError(t, st.Write(context.Background(), pts))
}

// seriesCalls records the ranges the historical analysis lists series over.
type seriesCalls struct {
	store.Store
	mu     sync.Mutex
	ranges [][2]time.Time
}

func (s *seriesCalls) Series(ctx context.Context, name string, from, to time.Time) ([]store.SeriesKey, error) {
	s.mu.Lock()
	s.ranges = append(s.ranges, [2]time.Time{from, to})
	s.mu.Unlock()
	return s.Store.Series(ctx, name, from, to)
}

// since returns the ranges asked after the first n.
func (s *seriesCalls) since(n int) [][2]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ranges) == n {
		return nil
	}
	return slices.Clone(s.ranges[n:])
}

// Where the instances ran is listed over the week at the first refresh, then only over
// the hours since the last one, the last snapshot's nodes of each instance carried; over
// the week again when an instance is listed that the last refresh did not list. A node
// whose points of an instance left the week is not carried.
func TestHistoricalListsWhereInstancesRanOnce(t *testing.T) {
	st, now, until := historyStore(t)
	writeMoved(t, st, until, until.Add(-2*time.Hour), 2, func(node string, ts time.Time) []store.Point {
		return []store.Point{{Node: node, Name: metric.WaveTPS, Labels: map[string]string{"instance": "moved"}, TS: ts, Value: 100}}
	})
	calls := &seriesCalls{Store: st}
	clk := now
	listed := map[string][]string{"wave-2": {"moved"}}
	h, err := analysis.NewHistorical(analysis.HistoricalOptions{
		Store: calls, Now: func() time.Time { return clk },
		Instances: func() map[string][]string { return listed },
	})
	require.NoError(t, err)
	week := 7 * 24 * time.Hour
	refresh := func(want [][2]time.Time, what string) {
		t.Helper()
		n := len(calls.since(0))
		require.NoError(t, h.Refresh(context.Background()))
		require.Equal(t, want, calls.since(n), what)
	}
	onWave1 := func() bool { _, ok := h.Snapshot().Instances["wave-1"]["moved"]; return ok }

	refresh([][2]time.Time{{until.Add(-week), until}}, "the first refresh lists the week")
	require.True(t, onWave1(), "the wave it left, from the store")
	refresh(nil, "the same hour: nothing new to list")
	require.True(t, onWave1(), "carried from the last snapshot")
	clk = clk.Add(time.Hour)
	refresh([][2]time.Time{{until, until.Add(time.Hour)}}, "an hour later: that hour")
	require.True(t, onWave1())
	listed = map[string][]string{"wave-2": {"moved", "fresh"}}
	refresh([][2]time.Time{{until.Add(time.Hour - week), until.Add(time.Hour)}}, "an instance the last refresh did not list: the week again")
	require.True(t, onWave1())
	clk = clk.Add(23 * time.Hour)
	refresh([][2]time.Time{{until.Add(time.Hour), until.Add(24 * time.Hour)}}, "within a day of the week's listing: the hours since the last")
	clk = clk.Add(time.Hour)
	refresh([][2]time.Time{{until.Add(25*time.Hour - week), until.Add(25 * time.Hour)}}, "a day after it: the week again")
	require.True(t, onWave1())
	clk = clk.Add(7 * 24 * time.Hour) // wave-1's points of it leave the week
	refresh([][2]time.Time{{until.Add(25 * time.Hour), until.Add(week + 25*time.Hour)}}, "a week later: that week")
	require.False(t, onWave1(), "no point of it on wave-1 in the week: not carried")
	_, ok := h.Snapshot().Instances["wave-2"]["fresh"]
	require.True(t, ok, "a listed instance is profiled, points or not")
}
