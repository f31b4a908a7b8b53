package utilisation_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
	"github.com/binlake/binlake/lbplugins/utilisation"
)

type N = map[string]float64

// wave is a wave of the load model with the host's cpu.util at 30 %.
func wave(name string, cores, rowCores, byteCores, peakCores float64) *lbplugins.NodeView {
	n := cluster.Wave(name, N{"cpu.util": 30, "mem.used_pct": 40}, cores, rowCores, byteCores, peakCores)
	n.Capacity.UtilNow, n.Capacity.HasUtilNow = 0.3, true
	return n
}

// onHost puts n on a host that it shares (Capacity.Host) of cores, whose waves use peak
// cores together at their peak.
func onHost(n *lbplugins.NodeView, id string, cores, peak float64) *lbplugins.NodeView {
	n.Capacity.Host, n.Capacity.HostCores, n.Capacity.HostPeakCores = id, cores, peak
	return n
}

func TestUtilisation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nodes    []*lbplugins.NodeView
		expected lbplugins.Work
		cap      float64
		exclude  []string
		want     string
		scores   map[string]float64
		parts    map[string]map[string]float64
		filtered []lbplugins.Filtered
		note     string
		err      string
	}{
		{
			// The same prices and cost (0.4 cores); 4 cores at 2 used go to 60 %, 16 at 6 to
			// 40 %: the bigger host wins though it uses more cores.
			name: "heterogeneous cores: the lowest peak after in utilisation wins",
			nodes: []*lbplugins.NodeView{
				wave("small", 4, 1e-4, 0, 2),
				wave("big", 16, 1e-4, 0, 6),
			},
			expected: lbplugins.Work{Rows: 4000},
			cap:      0.7,
			want:     "big",
			scores:   map[string]float64{"small": 62.5, "big": 71.43},
			parts: map[string]map[string]float64{"big": {"cores": 16, "util_now": 0.3, "peak_before": 0.375,
				"peak_after": 0.4, "peak_hour": 14, "cost_cores": 0.4, "pending_cores": 0}},
			note: utilisation.NoteScored,
		},
		{
			// 1 MB/s costs 1 core where a byte is dear, 0.1 where it is cheap: the cheap wave
			// wins though its peak before is higher (2.5 against 2 of 8 cores).
			name: "each wave prices the instance at its own prices",
			nodes: []*lbplugins.NodeView{
				wave("dear", 8, 0, 1e-6, 2),
				wave("cheap", 8, 0, 1e-7, 2.5),
			},
			expected: lbplugins.Work{Bytes: 1e6},
			cap:      0.7,
			want:     "cheap",
			scores:   map[string]float64{"dear": 72.73, "cheap": 75.47},
			parts: map[string]map[string]float64{"dear": {"cores": 8, "util_now": 0.3, "peak_before": 0.25,
				"peak_after": 0.375, "peak_hour": 14, "cost_cores": 1, "pending_cores": 0}},
		},
		{
			// 0.65 before on both; the instance's 0.4 cores take the 4-core wave to 0.75, over
			// the cap, and the 8-core one to exactly 0.7, at the cap.
			name: "a wave the instance would take over the cap is filtered",
			nodes: []*lbplugins.NodeView{
				wave("wave-a", 4, 1e-4, 0, 2.6),
				wave("wave-b", 8, 1e-4, 0, 5.2),
			},
			expected: lbplugins.Work{Rows: 4000},
			cap:      0.7,
			want:     "wave-b",
			scores:   map[string]float64{"wave-b": 58.82},
			filtered: []lbplugins.Filtered{{Node: "wave-a", Reason: "over max_utilisation: predicted peak 0.750 > 0.7 with the instance (0.4000 cores) and 0 pending placements (0.0000 cores) on 4 cores"}},
		},
		{
			name: "every wave over the cap: no candidate, and the reasons say why",
			nodes: []*lbplugins.NodeView{
				wave("wave-a", 4, 1e-4, 0, 3),
			},
			expected: lbplugins.Work{Rows: 4000},
			cap:      0.7,
			err:      "no live node can take the instance: all 1 nodes filtered (wave-a: over max_utilisation: predicted peak 0.850 > 0.7 with the instance (0.4000 cores) and 0 pending placements (0.0000 cores) on 4 cores)",
		},
		{
			// Without a cap a wave past 100 % still ranks below a less loaded one.
			name: "no cap: overloaded waves still rank",
			nodes: []*lbplugins.NodeView{
				wave("wave-a", 4, 1e-4, 0, 6),
				wave("wave-b", 4, 1e-4, 0, 4.4),
			},
			expected: lbplugins.Work{Rows: 4000},
			want:     "wave-b",
			scores:   map[string]float64{"wave-a": 38.46, "wave-b": 45.45},
		},
		{
			// Two waves share an 8-core host, 4 cores each; the host at 4 of 8 cores, all
			// of it on shared-a. shared-a's share would go to 1.1 with the instance, but
			// the host only to 0.55: the cap holds the host, as the plans do, so shared-a
			// passes (its score still ranks it below its idle host-mate).
			name: "a share over the cap on a host under it passes",
			nodes: []*lbplugins.NodeView{
				onHost(wave("shared-a", 4, 1e-4, 0, 4), "boot-1", 8, 4),
				onHost(wave("shared-b", 4, 1e-4, 0, 0), "boot-1", 8, 4),
			},
			expected: lbplugins.Work{Rows: 4000},
			cap:      0.7,
			exclude:  []string{"shared-b"},
			want:     "shared-a",
			scores:   map[string]float64{"shared-a": 47.62},
			note:     utilisation.NoteScored,
		},
		{
			// The host's waves at 5.4 of 8 cores together: shared-a's share would stand at
			// 0.35 with the instance, but the host at 0.725, so both are filtered, by the
			// host; a wave on a host of its own at 0.7 with it passes.
			name: "a host over the cap filters all its waves, though a share is under it",
			nodes: []*lbplugins.NodeView{
				onHost(wave("shared-a", 4, 1e-4, 0, 1), "boot-1", 8, 5.4),
				onHost(wave("shared-b", 4, 1e-4, 0, 4.4), "boot-1", 8, 5.4),
				wave("alone", 4, 1e-4, 0, 2.4),
			},
			expected: lbplugins.Work{Rows: 4000},
			cap:      0.7,
			want:     "alone",
			filtered: []lbplugins.Filtered{
				{Node: "shared-a", Reason: "over max_utilisation: its host's predicted peak 0.725 > 0.7 with the instance (0.4000 cores) and 0 pending placements on its 2 waves (0.0000 cores) on the host's 8 cores"},
				{Node: "shared-b", Reason: "over max_utilisation: its host's predicted peak 0.725 > 0.7 with the instance (0.4000 cores) and 0 pending placements on its 2 waves (0.0000 cores) on the host's 8 cores"},
			},
		},
		{
			name: "waves the model cannot price are filtered, each with its reason",
			nodes: []*lbplugins.NodeView{
				wave("priced", 8, 1e-4, 0, 7),
				cluster.Node("db-host", N{"cpu.util": 5}),
				func() *lbplugins.NodeView { n := wave("no-cores", 8, 1e-4, 0, 0); n.Capacity.Cores = 0; return n }(),
				func() *lbplugins.NodeView { n := wave("no-prices", 8, 0, 0, 0); n.Capacity.Priced = false; return n }(),
			},
			expected: lbplugins.Work{Rows: 100},
			want:     "priced",
			filtered: []lbplugins.Filtered{
				{Node: "db-host", Reason: utilisation.ReasonNoWave},
				{Node: "no-cores", Reason: utilisation.ReasonNoCores},
				{Node: "no-prices", Reason: utilisation.ReasonNoPrices},
			},
			note: utilisation.NoteScored,
		},
		{
			// No node has the data: leastload's score (cpu and memory here), said so.
			name: "no candidate has the data: falls back to leastload, and says so",
			nodes: []*lbplugins.NodeView{
				cluster.Node("busy", N{"cpu.util": 80, "mem.used_pct": 80}),
				cluster.Node("idle", N{"cpu.util": 10, "mem.used_pct": 10}),
			},
			expected: lbplugins.Work{Rows: 100},
			cap:      0.7,
			want:     "idle",
			scores:   map[string]float64{"busy": 20, "idle": 90},
			parts:    map[string]map[string]float64{"idle": {"cpu": 54, "memory": 36}},
			note:     utilisation.NoteFallback,
		},
		{
			// The only wave with the data is excluded: the others are not filtered for lacking
			// it, the round falls back.
			name: "the waves with the data excluded: falls back",
			nodes: []*lbplugins.NodeView{
				wave("priced", 8, 1e-4, 0, 1),
				cluster.Node("busy", N{"cpu.util": 80, "mem.used_pct": 80}),
				cluster.Node("idle", N{"cpu.util": 10, "mem.used_pct": 10}),
			},
			exclude: []string{"priced"},
			want:    "idle",
			note:    utilisation.NoteFallback,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := lbplugins.New(utilisation.Name, lbplugins.Settings{})
			require.NoError(t, err)
			req := lbplugins.Request{Instance: "orders", Expected: tc.expected, MaxUtilisation: tc.cap, Exclude: tc.exclude}
			d, err := lbplugins.Decide(p, lbplugins.Filters{}, req, tc.nodes, cluster.Now)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, d.Node)
			if tc.note != "" {
				require.Equal(t, tc.note, d.Note)
			}
			got := map[string]float64{}
			for _, s := range d.Scores {
				got[s.Node] = s.Value
				if want, ok := tc.parts[s.Node]; ok {
					require.Equal(t, want, s.Parts.Map(), s.Node)
				}
			}
			if tc.scores != nil {
				require.Equal(t, tc.scores, got)
			}
			if tc.filtered != nil {
				var plugin []lbplugins.Filtered
				for _, f := range d.Filtered {
					if f.Node != "" && !contains(tc.exclude, f.Node) {
						plugin = append(plugin, f)
					}
				}
				require.Equal(t, tc.filtered, plugin)
				require.Equal(t, len(tc.filtered), d.FilteredBy.Plugin)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Reservations hold cores: two placements in a row onto two equal waves spread, because
// the first one's expected cores count on its wave in the second decision; a
// reservation's cores, not its count, decide, and they count against the cap too.
func TestReservedCoresSpread(t *testing.T) {
	p, err := lbplugins.New(utilisation.Name, lbplugins.Settings{})
	require.NoError(t, err)
	nodes := []*lbplugins.NodeView{wave("wave-a", 8, 1e-4, 0, 2), wave("wave-b", 8, 1e-4, 0, 2)}
	snap := lbplugins.NewSnapshot(nodes, lbplugins.Filters{}, cluster.Now, p)
	rv := lbplugins.NewReserved(snap)
	req := lbplugins.Request{Instance: "orders", Expected: lbplugins.Work{Rows: 10000}, MaxUtilisation: 0.7, Reserved: rv, ExplainAll: true}

	first, err := snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "wave-a", first.Node, "a tie goes to the first name")
	i, _ := snap.Index(first.Node)
	rv.Add(i, 1)
	rv.AddCores(i, 1) // the placement's expected work at wave-a's prices

	second, err := snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "wave-b", second.Node, "the first placement's cores count on wave-a")
	var a lbplugins.Score
	for _, s := range second.Scores {
		if s.Node == "wave-a" {
			a = s
		}
	}
	require.Equal(t, map[string]float64{"cores": 8, "util_now": 0.3, "peak_before": 0.375, "peak_after": 0.5,
		"peak_hour": 14, "cost_cores": 1, "pending_cores": 1}, a.Parts.Map())
	require.Equal(t, 1.0, a.Pending)

	// Enough reserved cores take wave-a over the cap: filtered, naming them.
	rv.AddCores(i, 2.7)
	third, err := snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "wave-b", third.Node)
	require.Equal(t, []lbplugins.Filtered{{Node: "wave-a", Reason: "over max_utilisation: predicted peak 0.838 > 0.7 with the instance (1.0000 cores) and 1 pending placements (3.7000 cores) on 8 cores"}}, third.Filtered)
}

func TestSettingsRejected(t *testing.T) {
	_, err := lbplugins.New(utilisation.Name, lbplugins.Settings{Weights: map[string]float64{"cpu": 1}})
	require.EqualError(t, err, "plugin utilisation: utilisation takes no settings (its cap is rebalance.max_utilisation)")
}

// A placement of a running instance (Request.RunsOn) weighs its work on every other
// wave, and nothing more on the one that runs it, whose peak holds it: that wave's
// peak after is its peak before, and it is not filtered by the cap for the instance it
// already carries. The explained placement counted the instance there twice.
func TestRunningInstanceWeighsNothingMoreWhereItRuns(t *testing.T) {
	p, err := lbplugins.New(utilisation.Name, lbplugins.Settings{})
	require.NoError(t, err)
	// wave-a at 5.5 of 8 cores (0.69) with the instance; 1 core more would pass the cap.
	nodes := []*lbplugins.NodeView{wave("wave-a", 8, 1e-4, 0, 5.5), wave("wave-b", 8, 1e-4, 0, 4.4)}
	snap := lbplugins.NewSnapshot(nodes, lbplugins.Filters{}, cluster.Now, p)
	req := lbplugins.Request{Instance: "orders", Expected: lbplugins.Work{Rows: 10000}, MaxUtilisation: 0.7, ExplainAll: true, RunsOn: "wave-a"}
	d, err := snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Empty(t, d.Filtered, "wave-a carries the instance already: within the cap")
	parts := map[string]map[string]float64{}
	for _, s := range d.Scores {
		parts[s.Node] = s.Parts.Map()
	}
	require.Equal(t, 0.0, parts["wave-a"]["cost_cores"])
	require.Equal(t, parts["wave-a"]["peak_before"], parts["wave-a"]["peak_after"])
	require.Equal(t, 1.0, parts["wave-b"]["cost_cores"])
	require.Equal(t, 0.675, parts["wave-b"]["peak_after"])
	require.Equal(t, "wave-b", d.Node, "wave-b at 0.675 with it, wave-a at 0.6875 as it is")

	// Without RunsOn (a new instance) wave-a is over the cap with it.
	req.RunsOn = ""
	d, err = snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Len(t, d.Filtered, 1)
	require.Equal(t, "wave-a", d.Filtered[0].Node)
}

// A host's cap counts the placements pending on every wave of it, priced or not: a wave
// the judge cannot price yet (filtered itself) still runs on the host, and the cores
// reserved on it before weigh on its host-mate's candidacy.
func TestSharedHostCountsAnUnpricedMatesReservations(t *testing.T) {
	p, err := lbplugins.New(utilisation.Name, lbplugins.Settings{})
	require.NoError(t, err)
	mate := onHost(wave("mate", 4, 1e-4, 0, 1), "boot-1", 8, 3)
	nodes := []*lbplugins.NodeView{onHost(wave("priced", 4, 1e-4, 0, 2), "boot-1", 8, 3), mate, wave("alone", 8, 1e-4, 0, 4)}
	snap := lbplugins.NewSnapshot(nodes, lbplugins.Filters{}, cluster.Now, p)
	rv := lbplugins.NewReserved(snap)
	req := lbplugins.Request{Instance: "orders", Expected: lbplugins.Work{Rows: 4000}, MaxUtilisation: 0.7, Reserved: rv, ExplainAll: true}

	// The host at 3 of 8 cores: 0.4 more keeps it at 0.425; priced is a candidate.
	d, err := snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Contains(t, names(d.Scores), "priced")

	// The mate loses its prices, with 2.4 cores reserved on it: the host at 5.4 + 0.4 of 8
	// is over 0.7, so priced is filtered by its host.
	mate.Capacity.Priced = false
	snap = lbplugins.NewSnapshot(nodes, lbplugins.Filters{}, cluster.Now, p)
	rv = lbplugins.NewReserved(snap)
	i, _ := snap.Index("mate")
	rv.Add(i, 2)
	rv.AddCores(i, 2.4)
	req.Reserved = rv
	d, err = snap.Decide(p, req, cluster.Now)
	require.NoError(t, err)
	require.Equal(t, "alone", d.Node)
	reasons := map[string]string{}
	for _, f := range d.Filtered {
		reasons[f.Node] = f.Reason
	}
	require.Contains(t, reasons["priced"], "its host's predicted peak 0.725", "%+v", d.Filtered)
}

func names(ss []lbplugins.Score) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Node)
	}
	return out
}
