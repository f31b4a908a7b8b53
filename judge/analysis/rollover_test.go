package analysis_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/leastload"
)

// levelModel is what one node's cpu.util should look like: the EWMA over every sample,
// the samples of the current and of the previous hour.
type levelModel struct {
	ewma       float64
	leveled    bool
	hour, prev []float64
	lastSeen   time.Time
}

func (m *levelModel) add(v float64, at time.Time) {
	if m.leveled {
		m.ewma = 0.2*v + 0.8*m.ewma
	} else {
		m.ewma, m.leveled = v, true
	}
	m.hour = append(m.hour, v)
	m.lastSeen = at
}

func (m *levelModel) roll() { m.prev, m.hour = m.hour, nil }

func sampleSD(vs []float64) float64 {
	mean := 0.0
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	ss := 0.0
	for _, v := range vs {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss / float64(len(vs)-1))
}

// TestRolloverCarriesLevels crosses 14:00 second by second with three nodes reporting
// every 10 s at different offsets: no node's level ever drops to "no data", the hour's
// statistics restart, and at 14:00:00, after the busiest node reported first, leastload
// still picks the idlest node.
func TestRolloverCarriesLevels(t *testing.T) {
	type node struct {
		id     string
		offset int     // second within each 10 s
		base   float64 // cpu.util around base
	}
	nodes := []node{{"wave-a", 0, 80}, {"wave-b", 3, 10}, {"wave-c", 7, 45}}
	value := func(n node, at time.Time) float64 { return n.base + float64(at.Unix()%7) }

	start := time.Date(2026, 11, 29, 13, 58, 0, 0, time.UTC)
	boundary := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	c := &clock{t: start}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	plugin, err := leastload.New(lbplugins.Settings{})
	require.NoError(t, err)

	models := map[string]*levelModel{}
	for _, n := range nodes {
		models[n.id] = &levelModel{}
	}
	check := func(at time.Time) {
		t.Helper()
		views, _ := a.Views()
		heard := 0
		for _, m := range models {
			if m.leveled {
				heard++
			}
		}
		require.Len(t, views, heard, "at %s", at.Format(time.TimeOnly))
		for _, v := range views {
			m := models[v.Node]
			cur, ok := v.Current[lbplugins.CPUUtil]
			require.True(t, ok, "%s at %s", v.Node, at.Format(time.TimeOnly))
			load, ok := v.Load(lbplugins.CPUUtil)
			require.True(t, ok, "%s has a level at %s", v.Node, at.Format(time.TimeOnly))
			require.InDelta(t, m.ewma, load, 1e-9, "%s at %s", v.Node, at.Format(time.TimeOnly))
			require.Equal(t, m.lastSeen, v.LastSeen, "carrying does not refresh liveness")
			require.Equal(t, int64(len(m.hour)), cur.Count, "%s at %s", v.Node, at.Format(time.TimeOnly))
			require.Equal(t, len(m.hour) == 0, cur.Carried)
			if len(m.hour) == 0 {
				require.Zero(t, cur.Mean)
				require.Zero(t, cur.Max)
				require.Zero(t, cur.P95)
				require.InDelta(t, sampleSD(m.prev), cur.Stddev, 1e-9, "the previous hour's stddev")
				continue
			}
			lo, hi := m.hour[0], m.hour[0]
			for _, x := range m.hour {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
			require.Equal(t, lo, cur.Min)
			require.Equal(t, hi, cur.Max)
			if len(m.hour) == 1 {
				require.InDelta(t, sampleSD(m.prev), cur.Stddev, 1e-9, "one sample: the previous hour's stddev")
			}
		}
	}

	for at := start; !at.After(boundary.Add(time.Minute)); at = at.Add(time.Second) {
		c.Set(at)
		if at.Equal(boundary) {
			for _, m := range models {
				m.roll()
			}
		}
		check(at) // a read alone, before the second's batches
		for _, n := range nodes {
			if at.Second()%10 != n.offset {
				continue
			}
			v := value(n, at)
			a.Observe(batch(n.id, at, metric.Point{Name: lbplugins.CPUUtil, Value: v}))
			models[n.id].add(v, at)
		}
		check(at)

		if at.Equal(boundary) {
			// wave-a (80 %) has reported this hour, wave-b (10 %) and wave-c (45 %) not yet.
			views, _ := a.Views()
			d, err := lbplugins.Decide(plugin, lbplugins.Filters{}, lbplugins.Request{Instance: "orders"}, views, at)
			require.NoError(t, err)
			require.Equal(t, "wave-b", d.Node, "the idlest node, not the first to report: %+v", d.Scores)
		}
	}
	require.Equal(t, boundary, a.Hour())
}

// TestCarriedLevelExpires: a node that stops reporting keeps its carried level for the
// rest of the next hour but goes stale through LastSeen at once; at the following
// rollover its series are dropped, the node itself stays known.
func TestCarriedLevelExpires(t *testing.T) {
	start := time.Date(2026, 11, 29, 13, 59, 0, 0, time.UTC)
	c := &clock{t: start}
	a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now})
	require.NoError(t, err)
	tps := map[string]string{"instance": "orders"}
	for at := start; at.Before(time.Date(2026, 11, 29, 15, 0, 30, 0, time.UTC)); at = at.Add(10 * time.Second) {
		c.Set(at)
		if at.Before(start.Add(time.Minute)) { // wave-silent: 13:59:00–13:59:50 only
			a.Observe(batch("wave-silent", at, metric.Point{Name: lbplugins.CPUUtil, Value: 5},
				metric.Point{Name: lbplugins.WaveTPS, Value: 100, Labels: tps}))
		}
		a.Observe(batch("wave-busy", at, metric.Point{Name: lbplugins.CPUUtil, Value: 60}, metric.Point{Name: lbplugins.WaveInstances, Value: 1}))

		if at.Equal(time.Date(2026, 11, 29, 14, 59, 50, 0, time.UTC)) {
			views, _ := a.Views()
			require.Equal(t, "wave-silent", views[1].Node)
			load, ok := views[1].Load(lbplugins.CPUUtil)
			require.True(t, ok, "carried to the end of the hour")
			require.Equal(t, 5.0, load)
			n, _ := a.Node("wave-silent")
			require.Len(t, n.Series, 2, "labelled series are carried too")
			require.True(t, n.Series[1].Carried)

			plugin, err := leastload.New(lbplugins.Settings{})
			require.NoError(t, err)
			d, err := lbplugins.Decide(plugin, lbplugins.Filters{}, lbplugins.Request{Instance: "orders"}, views, at)
			require.NoError(t, err)
			require.Equal(t, "wave-busy", d.Node)
			require.Len(t, d.Filtered, 1)
			require.Equal(t, "wave-silent", d.Filtered[0].Node)
			require.Contains(t, d.Filtered[0].Reason, "stale", "its LastSeen is an hour old")
		}
	}
	views, _ := a.Views()
	require.Equal(t, []string{"wave-busy", "wave-silent"}, a.NodeIDs())
	require.Empty(t, views[1].Current, "silent for a whole hour: dropped at 15:00")
	n, _ := a.Node("wave-silent")
	require.Empty(t, n.Series)
	require.Equal(t, time.Date(2026, 11, 29, 13, 59, 50, 0, time.UTC), n.LastSeen)
	busy, ok := views[0].Current[lbplugins.CPUUtil]
	require.True(t, ok)
	require.Equal(t, int64(3), busy.Count, "15:00:00, 15:00:10, 15:00:20")
}
