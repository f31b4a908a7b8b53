package lbplugins_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	_ "github.com/binlake/binlake/lbplugins/all"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

func TestRegistry(t *testing.T) {
	require.Equal(t, []string{"balanced", "leastload", "p2c", "predictive", "random", "utilisation"}, lbplugins.Names())

	_, err := lbplugins.Lookup("roundrobin")
	require.EqualError(t, err, `unknown algorithm "roundrobin" (known: balanced, leastload, p2c, predictive, random, utilisation)`)
	require.ErrorIs(t, err, lbplugins.ErrUnknownAlgorithm)

	require.PanicsWithValue(t, `lbplugins: plugin "random" registered twice`, func() {
		lbplugins.Register("random", func(lbplugins.Settings) (lbplugins.Plugin, error) { return nil, nil })
	})
	require.Panics(t, func() { lbplugins.Register("", nil) })
}

func TestSettingsRejected(t *testing.T) {
	k := -1.0
	for _, tc := range []struct {
		name, algo string
		s          lbplugins.Settings
		want       string
	}{
		{"unknown weight", "leastload", lbplugins.Settings{Weights: map[string]float64{"gpu": 1}}, `plugin leastload: unknown weight "gpu" (known: cpu, instances, load, memory, network, tps)`},
		{"negative weight", "p2c", lbplugins.Settings{Weights: map[string]float64{"cpu": -2}}, `plugin p2c: weight "cpu" is -2: want a finite number ≥ 0`},
		{"all zero", "balanced", lbplugins.Settings{Weights: map[string]float64{"cpu": 0, "memory": 0}}, "plugin balanced: all weights are zero"},
		{"negative k", "predictive", lbplugins.Settings{K: &k}, "plugin predictive: k is -1: want a finite number ≥ 0"},
		{"weights on random", "random", lbplugins.Settings{Weights: map[string]float64{"cpu": 1}}, "plugin random: random takes only a seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lbplugins.New(tc.algo, tc.s)
			require.EqualError(t, err, tc.want)
		})
	}
}

// fixed is a plugin whose scores are given, to test Decide alone.
type fixed struct {
	scores map[string]float64
	reject map[string]string
}

func (fixed) Name() string                    { return "fixed" }
func (fixed) Description() string             { return "test" }
func (fixed) Prepare(*lbplugins.Snapshot) any { return nil }
func (f fixed) Filter(r *lbplugins.Round, i int) string {
	return f.reject[r.Snap.Views[i].Node]
}
func (f fixed) Score(r *lbplugins.Round, out []float64) {
	for k, i := range r.Cands {
		out[k] = f.scores[r.Snap.Views[i].Node]
	}
}
func (f fixed) Explain(r *lbplugins.Round, k int) lbplugins.Parts {
	return lbplugins.PartsOf(lbplugins.Part{Name: "given", Value: r.Scores[k]})
}

func TestDecide(t *testing.T) {
	filters := lbplugins.Filters{StaleIntervals: 3, Thresholds: map[string]float64{"cpu.util": 90}}
	for _, tc := range []struct {
		name     string
		plugin   fixed
		nodes    []*lbplugins.NodeView
		exclude  []string
		want     string
		order    []string
		filtered []lbplugins.Filtered
		err      string
	}{
		{
			name:   "highest score wins",
			plugin: fixed{scores: map[string]float64{"a": 10, "b": 70, "c": 40}},
			nodes:  []*lbplugins.NodeView{cluster.Node("a", nil), cluster.Node("b", nil), cluster.Node("c", nil)},
			want:   "b", order: []string{"b", "c", "a"},
		},
		{
			name:   "tie goes to the first node by name",
			plugin: fixed{scores: map[string]float64{"z": 50, "m": 50, "q": 20}},
			nodes:  []*lbplugins.NodeView{cluster.Node("z", nil), cluster.Node("q", nil), cluster.Node("m", nil)},
			want:   "m", order: []string{"m", "z", "q"},
		},
		{
			name:   "scores clamped to 0-100",
			plugin: fixed{scores: map[string]float64{"a": 250, "b": -3}},
			nodes:  []*lbplugins.NodeView{cluster.Node("a", nil), cluster.Node("b", nil)},
			want:   "a", order: []string{"a", "b"},
		},
		{
			name:    "excluded, stale, over threshold and plugin filter",
			plugin:  fixed{scores: map[string]float64{"a": 90, "b": 90, "c": 90, "d": 90, "e": 5}, reject: map[string]string{"d": "custom"}},
			exclude: []string{"a"},
			nodes: []*lbplugins.NodeView{
				cluster.Node("a", nil),
				cluster.Stale(cluster.Node("b", nil), 31*time.Second),
				cluster.Node("c", map[string]float64{"cpu.util": 93.5}),
				cluster.Node("d", nil),
				cluster.Node("e", map[string]float64{"cpu.util": 90}),
			},
			want: "e", order: []string{"e"},
			filtered: []lbplugins.Filtered{
				{Node: "a", Reason: "excluded"},
				{Node: "b", Reason: "stale: no batch for 31s (limit 3 intervals of 10s)"},
				{Node: "c", Reason: "over threshold: cpu.util 93.5 > 90"},
				{Node: "d", Reason: "custom"},
			},
		},
		{
			// A host without a wave beside waves, and a wave whose series stopped, are no
			// candidates whatever the plugin scores them.
			name:   "no wave and wave stopped",
			plugin: fixed{scores: map[string]float64{"host": 99, "stopped": 98, "w": 10}},
			nodes: []*lbplugins.NodeView{
				withWave(cluster.Node("host", nil), lbplugins.WaveUnknown),
				withWave(cluster.Node("stopped", nil), lbplugins.WaveStopped),
				withWave(cluster.Node("w", nil), lbplugins.WaveRunning),
			},
			want: "w", order: []string{"w"},
			filtered: []lbplugins.Filtered{
				{Node: "host", Reason: lbplugins.ReasonNoWave},
				{Node: "stopped", Reason: lbplugins.ReasonWaveStopped},
			},
		},
		{
			// No node says anything of a wave (node_exporter's metrics alone): each may be one.
			name:   "no wave series anywhere",
			plugin: fixed{scores: map[string]float64{"h1": 20, "h2": 30}},
			nodes:  []*lbplugins.NodeView{cluster.Node("h1", nil), cluster.Node("h2", nil)},
			want:   "h2", order: []string{"h2", "h1"},
		},
		{
			// Its wave stopped: it is none, even when no other node has a wave.
			name:   "the only wave stopped",
			plugin: fixed{},
			nodes:  []*lbplugins.NodeView{withWave(cluster.Node("s", nil), lbplugins.WaveStopped), cluster.Node("h", nil)},
			filtered: []lbplugins.Filtered{
				{Node: "h", Reason: lbplugins.ReasonNoWave},
				{Node: "s", Reason: lbplugins.ReasonWaveStopped},
			},
			err: "no live node can take the instance: all 2 nodes filtered (s: " + lbplugins.ReasonWaveStopped + "; h: " + lbplugins.ReasonNoWave + ")",
		},
		{
			name:    "all filtered",
			plugin:  fixed{},
			exclude: []string{"a"},
			nodes:   []*lbplugins.NodeView{cluster.Node("a", nil), cluster.Stale(cluster.Node("b", nil), time.Hour)},
			filtered: []lbplugins.Filtered{
				{Node: "a", Reason: "excluded"},
				{Node: "b", Reason: "stale: no batch for 1h0m0s (limit 3 intervals of 10s)"},
			},
			err: "no live node can take the instance: all 2 nodes filtered (b: stale: no batch for 1h0m0s (limit 3 intervals of 10s); a: excluded)",
		},
		{
			name:   "no nodes at all",
			plugin: fixed{},
			err:    "no live node can take the instance: the judge has not heard from any node",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := lbplugins.Decide(tc.plugin, filters, lbplugins.Request{Exclude: tc.exclude}, tc.nodes, cluster.Now)
			require.Equal(t, tc.filtered, d.Filtered)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				if strings.HasPrefix(tc.err, "no live") {
					require.True(t, errors.Is(err, lbplugins.ErrNoCandidates))
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, d.Node)
			require.Equal(t, "fixed", d.Algorithm)
			var order []string
			for _, s := range d.Scores {
				order = append(order, s.Node)
				require.GreaterOrEqual(t, s.Value, 0.0)
				require.LessOrEqual(t, s.Value, 100.0)
			}
			require.Equal(t, tc.order, order)
			require.Equal(t, cluster.Now.Add(-5*time.Second), d.DataAsOf)
		})
	}
}

// Request.StaleAt judges staleness at another time than Now (the judge's while its
// metric feed is stalled): a node 31 s silent at Now but live at StaleAt is a candidate,
// and Passes agrees; a StaleAt after Now changes nothing.
func TestDecideStaleAt(t *testing.T) {
	filters := lbplugins.Filters{StaleIntervals: 3}
	nodes := []*lbplugins.NodeView{cluster.Stale(cluster.Node("b", nil), 31*time.Second)}
	p := fixed{scores: map[string]float64{"b": 50}}
	_, err := lbplugins.Decide(p, filters, lbplugins.Request{}, nodes, cluster.Now)
	require.ErrorIs(t, err, lbplugins.ErrNoCandidates, "31 s silent at 3 intervals of 10 s")
	d, err := lbplugins.Decide(p, filters, lbplugins.Request{StaleAt: cluster.Now.Add(-time.Minute)}, nodes, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "b", d.Node)
	_, err = lbplugins.Decide(p, filters, lbplugins.Request{StaleAt: cluster.Now.Add(time.Minute)}, nodes, cluster.Now)
	require.ErrorIs(t, err, lbplugins.ErrNoCandidates, "a StaleAt after Now")
}

// When every node is filtered, the error names why by group, the reasons that refused
// the live nodes first, at most three of each: it named the first five nodes by name,
// and a fleet's stale leftovers (13 here, named before the waves) hid that the waves
// were all over the threshold behind "and 13 more".
func TestNoCandidatesSaysWhyFirst(t *testing.T) {
	var nodes []*lbplugins.NodeView
	for i := range 13 {
		nodes = append(nodes, cluster.Stale(cluster.Node(fmt.Sprintf("a-old-%02d", i), nil), time.Hour))
	}
	nodes = append(nodes,
		cluster.Node("wave-1", map[string]float64{"cpu.util": 95}),
		cluster.Node("wave-2", map[string]float64{"cpu.util": 97}),
		cluster.Node("b-excluded", nil))
	filters := lbplugins.Filters{StaleIntervals: 3, Thresholds: map[string]float64{"cpu.util": 90}}
	_, err := lbplugins.NewSnapshot(nodes, filters, cluster.Now, fixed{}).Decide(fixed{}, lbplugins.Request{Exclude: []string{"b-excluded"}}, cluster.Now)
	require.ErrorIs(t, err, lbplugins.ErrNoCandidates)
	stale := "stale: no batch for 1h0m0s (limit 3 intervals of 10s)"
	require.EqualError(t, err, "no live node can take the instance: all 16 nodes filtered ("+
		"wave-1: over threshold: cpu.util 95 > 90; wave-2: over threshold: cpu.util 97 > 90; "+
		"a-old-00: "+stale+"; a-old-01: "+stale+"; a-old-02: "+stale+"; and 10 more stale; b-excluded: excluded)")

	// Asked to explain all (as Decide does), it names every node with its reason.
	_, err = lbplugins.Decide(fixed{}, filters, lbplugins.Request{Exclude: []string{"b-excluded"}}, nodes, cluster.Now)
	require.ErrorIs(t, err, lbplugins.ErrNoCandidates)
	require.NotContains(t, err.Error(), "more stale")
	require.Contains(t, err.Error(), "a-old-12: "+stale+"; b-excluded: excluded)")
}

func withWave(n *lbplugins.NodeView, w lbplugins.WaveState) *lbplugins.NodeView {
	n.Wave = w
	return n
}

// Reserved instances count on their node with the cluster's load per instance: two
// equal nodes, one with a reservation, and the other wins; the reservation shows in the
// explanation.
func TestReservedCounts(t *testing.T) {
	nodes := []*lbplugins.NodeView{
		cluster.Node("a", map[string]float64{"cpu.util": 40, "wave.instances": 2}),
		cluster.Node("b", map[string]float64{"cpu.util": 40, "wave.instances": 2}),
	}
	p, err := lbplugins.New("leastload", lbplugins.Settings{})
	require.NoError(t, err)
	snap := lbplugins.NewSnapshot(nodes, lbplugins.Filters{}, cluster.Now, p)
	require.InDelta(t, 0.2, snap.Demand(lbplugins.ResourceIndex(lbplugins.ResCPU)), 1e-9, "40 % over two instances, as a fraction")
	res := lbplugins.NewReserved(snap)
	d, err := snap.Decide(p, lbplugins.Request{Reserved: res}, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "a", d.Node, "a tie goes to the first name")

	res.Add(0, 1)
	d, err = snap.Decide(p, lbplugins.Request{Reserved: res}, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "b", d.Node)
	require.Equal(t, 1.0, d.Scores[1].Pending)
	require.Equal(t, 0.0, d.Scores[0].Pending)
	require.Equal(t, map[string]float64{"cpu": 0.4 * 3 / 5 * 100, "instances": 0}, d.Scores[1].Parts.Map(),
		"a counts 60 % cpu and 3 instances, the most")

	res.Add(0, -1)
	d, err = snap.Decide(p, lbplugins.Request{Reserved: res}, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "a", d.Node, "a released reservation no longer counts")
}

// TestLoadCarried: a level carried over the hour (no sample yet, Count 0) is a level; a
// Count 0 that is not carried is no data.
func TestLoadCarried(t *testing.T) {
	n := &lbplugins.NodeView{Current: map[string]lbplugins.Current{
		lbplugins.CPUUtil:    {EWMA: 42, Last: 40, Stddev: 3, Carried: true},
		lbplugins.MemUsedPct: {EWMA: 42},
	}}
	v, ok := n.Load(lbplugins.CPUUtil)
	require.True(t, ok)
	require.Equal(t, 42.0, v)
	_, ok = n.Load(lbplugins.MemUsedPct)
	require.False(t, ok)
}
