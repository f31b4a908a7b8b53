package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/judgetest/wavefleet"
	"github.com/binlake/binlake/judge/loadmodel"
	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/utilisation"
)

// utilFleet has the agents of the waves, and of a host without a wave, report 40
// batches 10 s apart over HTTP, the last at the clock's now (which it then advances):
// enough for the load model to fit each wave's prices.
func utilFleet(t *testing.T, h http.Handler, c *clock, waves []wavefleet.Wave) {
	t.Helper()
	const rounds = 40
	start := c.Now()
	for k, b := range wavefleet.Batches(waves, rounds, start.Add((rounds-1)*wavefleet.Interval)) {
		if k%len(waves) == 0 && k > 0 {
			c.Add(wavefleet.Interval)
		}
		r := do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b)))
		require.Equal(t, http.StatusAccepted, r.status, string(r.body))
		if k%len(waves) == len(waves)-1 {
			host := metric.Batch{Node: "db-host", TS: c.Now(), IntervalS: 10, Points: []metric.Point{
				{Name: metric.CPUCores, Value: 32}, {Name: metric.CPUUtil, Value: 5}, {Name: metric.MemUsedPct, Value: 10}}}
			r := do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, host)))
			require.Equal(t, http.StatusAccepted, r.status, string(r.body))
		}
	}
	c.Add(wavefleet.Interval)
}

// placeHTTP posts a placement and decodes the answer.
func placeHTTP(t *testing.T, h http.Handler, body string) api.PlacementAnswer {
	t.Helper()
	r := do(t, h, "POST", "/v1/placement", "", strings.NewReader(body))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var ans api.PlacementAnswer
	require.NoError(t, json.Unmarshal(r.body, &ans), string(r.body))
	return ans
}

func scoreOf(t *testing.T, ans api.PlacementAnswer, node string) api.Score {
	t.Helper()
	for _, s := range ans.Scores {
		if s.Node == node {
			return s
		}
	}
	t.Fatalf("no score of %s in %+v", node, ans.Scores)
	return api.Score{}
}

// TestPlacementInUtilisation: through the HTTP API with agents' batches, the utilisation
// algorithm weighs a new instance in the rebalancing plans' unit: each wave's peak
// before is the one GET /v1/rebalance plans with, the hint costs each wave at that
// wave's prices, the wave the instance would take over rebalance.max_utilisation and
// the host without a wave are filtered with their reasons, the reservation holds the
// instance's cores so that the next placement goes elsewhere, and it ends once the wave
// reports running the instance. Without a hint the fleet's typical instance counts.
func TestPlacementInUtilisation(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Algorithm = "random" })
	h := j.Handler()
	waves := []wavefleet.Wave{
		{Node: "wave-a", Cores: 8, UtilPct: 40, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 1000, "a2": 400}},
		{Node: "wave-b", Cores: 16, UtilPct: 48, Row: 1e-4, Byte: 1e-9, Instances: map[string]float64{"b1": 2000, "b2": 300, "b3": 50}},
		{Node: "wave-c", Cores: 4, UtilPct: 68, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"c1": 800}},
	}
	utilFleet(t, h, c, waves)

	// The planner's view of every wave: its prices and its peak before any move.
	r := do(t, h, "GET", "/v1/rebalance", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var plan api.RebalanceAnswer
	require.NoError(t, json.Unmarshal(r.body, &plan))
	require.Equal(t, api.ModelUtilisation, plan.Model, plan.ModelNote)
	planned := map[string]api.WaveLoad{}
	for _, w := range plan.Waves {
		planned[w.Node] = w
	}
	require.Len(t, planned, 3, "db-host runs no wave")
	for _, w := range waves {
		require.Equal(t, "fitted", planned[w.Node].Prices.Source, w.Node)
		require.InEpsilon(t, w.Row, planned[w.Node].Prices.RowCores, 0.2, "%s: the fit finds the wave's row price", w.Node)
	}

	// The hint: rows and bytes that cost wave-a about 0.8 cores.
	rows, byts := 3000.0, 450_000.0
	ans := placeHTTP(t, h, fmt.Sprintf(`{"instance":"new-1","algorithm":"utilisation","explain":"all","expected":{"rows_per_s":%g,"bytes_per_s":%g}}`, rows, byts))
	require.Equal(t, "utilisation", ans.Algorithm)
	require.Equal(t, utilisation.NoteScored, ans.Note)
	require.Equal(t, &api.ExpectedWork{Work: api.Work{RowsPerS: rows, BytesPerS: byts}, Source: api.ExpectedHint}, ans.Expected)
	filtered := map[string]string{}
	for _, f := range ans.FilteredNodes {
		filtered[f.Node] = f.Reason
	}
	require.Equal(t, lbplugins.ReasonNoWave, filtered["db-host"], "a host without a wave: no candidate, whatever the algorithm")
	require.Contains(t, filtered["wave-c"], "over max_utilisation: predicted peak ", "0.68 + its cost over 4 cores passes 0.7")
	require.Equal(t, 2, ans.Candidates)

	best, bestAfter := "", math.Inf(1)
	for _, node := range []string{"wave-a", "wave-b"} {
		s := scoreOf(t, ans, node)
		w := planned[node]
		cost := w.Prices.RowCores*rows + w.Prices.ByteCores*byts
		require.Equal(t, w.Cores, s.Parts["cores"], node)
		require.InDelta(t, w.UtilNow, s.Parts["util_now"], 1e-4, node)
		require.InDelta(t, w.PeakBefore, s.Parts["peak_before"], 1e-4, "%s: the planner's peak", node)
		require.InDelta(t, cost, s.Parts["cost_cores"], 1e-6, "%s: the hint at the wave's own prices", node)
		require.InDelta(t, w.PeakBefore+cost/w.Cores, s.Parts["peak_after"], 1e-4, node)
		require.Zero(t, s.Parts["pending_cores"], node)
		if s.Parts["peak_after"] < bestAfter {
			best, bestAfter = node, s.Parts["peak_after"]
		}
	}
	require.Equal(t, best, ans.Node, "the lowest predicted peak after wins")
	require.NotNil(t, ans.Reservation)
	first := ans.Node
	firstCores := scoreOf(t, ans, first).Parts["cost_cores"]
	require.InDelta(t, firstCores, ans.Reservation.Cores, 1e-6, "the reservation holds the instance's cores on its wave")
	require.Equal(t, api.Work{RowsPerS: rows, BytesPerS: byts}, ans.Reservation.Expected)

	// The same instance again: the first reservation's cores count on its wave, which
	// would have won again without them.
	ans = placeHTTP(t, h, fmt.Sprintf(`{"instance":"new-2","algorithm":"utilisation","explain":"all","expected":{"rows_per_s":%g,"bytes_per_s":%g}}`, rows, byts))
	require.NotEqual(t, first, ans.Node, "two placements in a row spread")
	second := ans.Node
	again := scoreOf(t, ans, first)
	require.InDelta(t, firstCores, again.Parts["pending_cores"], 1e-6)
	require.Equal(t, 1.0, again.Pending)
	withoutPending := again.Parts["peak_after"] - again.Parts["pending_cores"]/again.Parts["cores"]
	require.Less(t, withoutPending, scoreOf(t, ans, ans.Node).Parts["peak_after"], "the reserved cores, not the data, moved it")

	// No hint: the fleet's typical instance, the median of the six instances' rows/s and
	// bytes/s (as the plan costs them).
	var rs, bs []float64
	for _, cost := range plan.Costs {
		rs, bs = append(rs, cost.RowsPerS), append(bs, cost.BytesPerS)
	}
	require.Len(t, rs, 6)
	ans = placeHTTP(t, h, `{"instance":"probe","algorithm":"utilisation","dry_run":true}`)
	require.Equal(t, api.ExpectedTypical, ans.Expected.Source)
	require.InDelta(t, median(rs), ans.Expected.RowsPerS, 1e-6)
	require.InDelta(t, median(bs), ans.Expected.BytesPerS, 1e-6)
	require.Equal(t, "no hint: the median rows/s, bytes/s and binlog bytes read/s of the 6 instances the waves run", ans.Expected.Note)

	// A hint of bytes alone takes its rows from the fleet's rows per byte.
	ans = placeHTTP(t, h, `{"instance":"probe","algorithm":"utilisation","dry_run":true,"expected":{"bytes_per_s":150000}}`)
	require.Equal(t, api.ExpectedHint, ans.Expected.Source)
	require.Greater(t, ans.Expected.RowsPerS, 0.0)
	require.Contains(t, ans.Expected.Note, "rows/s from the bytes/s at the fleet's")

	// The first wave reports running new-1: its reservation ends, new-2's stays.
	require.Len(t, j.Reservations(first), 1)
	b := metric.Batch{Node: first, TS: c.Now(), IntervalS: 10, Points: []metric.Point{
		{Name: metric.WaveTPS, Value: 5, Labels: inst("new-1")},
		{Name: metric.WaveInstanceRunning, Value: 1, Labels: runningLabels("new-1", "running")}}}
	require.Equal(t, http.StatusAccepted, do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b))).status)
	placeHTTP(t, h, `{"instance":"probe","dry_run":true}`) // rebuilds the snapshot
	require.Empty(t, j.Reservations(first), "its wave runs new-1")
	require.Len(t, j.Reservations(second), 1)
}

// TestPlacementAtTheHourTurnSeesTheInstances: at xx:00 the judge's hour restarts every
// series, carrying its level, and until each wave's first batch of the new hour the
// waves ran no instance in the judge's view: a placement in those seconds found no
// instance to learn a typical one or the fleet's rows per byte from, and priced the new
// instance at nothing (a CI run placed at 04:00:01). The carried levels of the waves'
// last batches are what they run.
func TestPlacementAtTheHourTurnSeesTheInstances(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Algorithm = "utilisation" })
	h := j.Handler()
	c.Add(43*time.Minute + 10*time.Second) // the fleet's last batches at 14:59:40
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 8, UtilPct: 40, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 1000, "a2": 400}},
		{Node: "wave-b", Cores: 16, UtilPct: 48, Row: 1e-4, Byte: 1e-9, Instances: map[string]float64{"b1": 2000}},
	})
	c.Add(12 * time.Second) // 15:00:02: no batch of the new hour yet
	require.Equal(t, 15, c.Now().Hour())

	require.Equal(t, []string{"a1", "a2"}, instanceIDs(getNodeDetail(t, j, "wave-a").Instances))
	ans := placeHTTP(t, h, `{"instance":"probe","dry_run":true}`)
	require.Equal(t, api.ExpectedTypical, ans.Expected.Source, ans.Expected.Note)
	require.Contains(t, ans.Expected.Note, "of the 3 instances the waves run")
	ans = placeHTTP(t, h, `{"instance":"probe","dry_run":true,"expected":{"bytes_per_s":150000}}`)
	require.Greater(t, ans.Expected.RowsPerS, 0.0, ans.Expected.Note)

	// An instance its wave no longer reports is not the wave's, carried or not.
	for range 4 {
		c.Add(wavefleet.Interval)
		b := metric.Batch{Node: "wave-b", TS: c.Now(), IntervalS: 10, Points: []metric.Point{
			{Name: metric.CPUCores, Value: 16}, {Name: metric.CPUUtil, Value: 48}, {Name: metric.WaveInstances, Value: 0}}}
		require.Equal(t, http.StatusAccepted, do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b))).status)
	}
	require.Empty(t, getNodeDetail(t, j, "wave-b").Instances)
}

// Without the load model's data (no wave reports cpu.cores or its CPU), the utilisation
// algorithm says so and places as leastload does.
func TestPlacementInUtilisationFallsBack(t *testing.T) {
	j, c := newJudge(t, nil)
	h := j.Handler()
	for _, b := range []metric.Batch{load("wave-1", t0, 70, 60), load("wave-2", t0, 20, 30)} {
		require.Equal(t, http.StatusAccepted, do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b))).status)
	}
	c.Add(time.Second)
	ans := placeHTTP(t, h, `{"instance":"payments","algorithm":"utilisation"}`)
	require.Equal(t, utilisation.NoteFallback, ans.Note)
	require.Equal(t, "wave-2", ans.Node)
	require.Contains(t, ans.Scores[0].Parts, "cpu", "leastload's parts")
	require.Equal(t, api.ExpectedTypical, ans.Expected.Source, "both waves run orders at 10 rows/s: the typical instance")
	require.Equal(t, 10.0, ans.Expected.RowsPerS)
}

// An instance's profile is, per hour, its profile on the wave that ran it most that
// hour within the window, at a rate above 0 first (a wave that no longer runs it
// reports its rate as 0 for a while after the move): a move does not lose its daily
// shape, and a brief claim elsewhere does not set its cost.
func TestProfilesLookup(t *testing.T) {
	j, _ := newJudge(t, nil)
	prof := func(hours map[int]float64) analysis.InstanceProfile {
		var p analysis.InstanceProfile
		for h, rows := range hours {
			p.Rows[h], p.Bytes[h], p.Count[h] = rows, 100*rows, 1
			p.Read[h], p.ReadCount[h] = 300*rows, 1
		}
		return p
	}
	many := func(p analysis.InstanceProfile, n int64) analysis.InstanceProfile {
		for h := range p.Count {
			p.Count[h] *= n
		}
		return p
	}
	hist := &analysis.Snapshot{Instances: map[string]map[string]analysis.InstanceProfile{
		// x moved from wave-b to wave-c: wave-b has its morning peak and zeros since,
		// wave-c only the hours since the move.
		"wave-b": {"x": prof(map[int]float64{9: 800, 12: 0, 13: 0}), "y": prof(map[int]float64{3: 20})},
		"wave-c": {"x": prof(map[int]float64{12: 300, 13: 310})},
		// w's home reports it at 3,000 rows/s; another node claimed it for a few
		// points at a million (a burst, a broken agent).
		"wave-d": {"w": many(prof(map[int]float64{5: 3000, 6: 3000}), 360)},
		"wave-e": {"w": prof(map[int]float64{5: 1e6}), "x": many(prof(map[int]float64{12: 0}), 40)},
	}}
	p := j.profilesOf(hist)
	require.Same(t, p, j.profilesOf(hist), "built once per snapshot")
	x := p.of("x")
	require.Equal(t, 800.0, x.Rows[9], "the peak it had on the wave it left")
	require.Equal(t, 300.0, x.Rows[12], "not the zeros of the wave it left")
	require.Equal(t, 31000.0, x.Bytes[13])
	require.Equal(t, 240000.0, x.Read[9], "the binlog read from the same node as the rows")
	require.Equal(t, 90000.0, x.Read[12])
	require.Equal(t, int64(0), x.Count[20], "an hour no wave has stays without data")
	require.Equal(t, 300.0, x.Rows[12], "zeros, however many points, after a rate")
	w := p.of("w")
	require.Equal(t, 3000.0, w.Rows[5], "the node with the most points, not a brief claim's rate")
	require.Equal(t, int64(360), w.Count[5])
	require.Equal(t, 3000.0, w.Rows[6])
	require.Equal(t, 20.0, p.of("y").Rows[3], "one wave: its profile")
	require.Nil(t, p.of("z"))
	require.Nil(t, j.profilesOf(nil).of("x"))
}

// With placement.capacity_every, a build takes the waves' loads of the last
// computation and starts the next in the background: a wave that has just reported is
// weighed once that computation is done, without a placement waiting for it.
func TestCapacitiesComputedInBackground(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.CapacityEvery = time.Nanosecond })
	h := j.Handler()
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 8, UtilPct: 40, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 1000}},
		{Node: "wave-b", Cores: 8, UtilPct: 50, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"b1": 1000}},
	})
	probe := `{"instance":"probe","algorithm":"utilisation","explain":"all","dry_run":true}`
	require.Equal(t, 2, placeHTTP(t, h, probe).Candidates, "the first build computes the loads itself")

	for _, b := range wavefleet.Batches([]wavefleet.Wave{{Node: "wave-c", Cores: 8, UtilPct: 5, Row: 2e-4, Byte: 2e-9,
		Instances: map[string]float64{"c1": 10}}}, 1, c.Now()) {
		require.Equal(t, http.StatusAccepted, do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b))).status)
	}
	ans := placeHTTP(t, h, probe)
	require.Equal(t, 2, ans.Candidates, "this build took the last computation, without wave-c")
	require.Contains(t, ans.FilteredNodes, lbplugins.Filtered{Node: "wave-c", Reason: utilisation.ReasonNoWave})
	require.Eventually(t, func() bool {
		return placeHTTP(t, h, probe).Node == "wave-c"
	}, 15*time.Second, 10*time.Millisecond, "wave-c weighed")
}

// Where every instance publishes 150 bytes a row, rows and bytes move together across
// the whole fleet: the pooled fit prices their combined work (pooled_collinear) and the
// idle wave (32 cores, no instance) is priced from it, so the utilisation algorithm
// places on it rather than filtering it as unpriced, and GET /v1/rebalance plans in
// utilisation. Before, the pooled fit failed on the collinear work, the idle wave stayed
// "none" with the reason "no wave reports wave.cpu_cores", and the rebalance fell back
// to rows.
func TestCollinearFleetPricesItsIdleWave(t *testing.T) {
	j, c := newJudge(t, nil)
	h := j.Handler()
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 4, UtilPct: 40, Row: 2e-4, Instances: map[string]float64{"a1": 1000}, Collinear: true},
		{Node: "wave-b", Cores: 8, UtilPct: 30, Row: 2e-4, Instances: map[string]float64{"b1": 2000}, Collinear: true},
		{Node: "wave-c", Cores: 16, UtilPct: 20, Row: 2e-4, Instances: map[string]float64{"c1": 3000}, Collinear: true},
		{Node: "wave-idle", Cores: 32, UtilPct: 1, Collinear: true},
	})
	ans := placeHTTP(t, h, `{"instance":"probe","algorithm":"utilisation","explain":"all","dry_run":true,"expected":{"rows_per_s":500,"bytes_per_s":75000}}`)
	for _, f := range ans.FilteredNodes {
		require.NotContains(t, f.Reason, "no prices", f.Node)
	}
	require.Equal(t, "wave-idle", ans.Node, "the emptiest host")
	p := j.model.Prices("wave-idle")
	require.Equal(t, loadmodel.SourcePooled, p.Source)
	require.True(t, p.PooledCollinear)

	r := do(t, h, "GET", "/v1/rebalance", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var reb api.RebalanceAnswer
	require.NoError(t, json.Unmarshal(r.body, &reb))
	require.Equal(t, api.ModelUtilisation, reb.Model, reb.ModelNote)
}

// A live wave the utilisation model cannot plan (here a new host whose agent reports no
// cpu.cores) is left out of the plan while the waves that can are the majority: its
// instances stay, it takes none, the answer says so; it was the whole fleet planned in
// rows/s, which (an outside trial) moved instances onto 2-core waves as onto 8-core
// ones, to 117 % of their cores. With half the waves or more left out, rows/s it is.
func TestPlanLeavesOutAWaveWithoutCores(t *testing.T) {
	j, c := newJudge(t, nil)
	h := j.Handler()
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 2, UtilPct: 90, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 3000, "a2": 2500, "a3": 2000}},
		{Node: "wave-b", Cores: 8, UtilPct: 20, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"b1": 1000}},
		{Node: "wave-c", Cores: 8, UtilPct: 20, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"c1": 1000}},
	})
	noCores := func(node string, n int) {
		for range n {
			b := waveBatch(node, c.Now(), 0.2, map[string]float64{"e1": 500})
			require.Equal(t, http.StatusAccepted, do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b))).status)
			c.Add(time.Second)
		}
	}
	noCores("edge", 3)
	body := `{"waves":[{"node":"wave-a","alive":true},{"node":"wave-b","alive":true},{"node":"wave-c","alive":true},{"node":"edge","alive":true}],
		"instances":[{"id":"a1","node":"wave-a"},{"id":"a2","node":"wave-a"},{"id":"a3","node":"wave-a"},{"id":"b1","node":"wave-b"},
		{"id":"c1","node":"wave-c"},{"id":"e1","node":"edge"}]}`
	r, ans := postRebalance(t, j, "", body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, api.ModelUtilisation, ans.Model, ans.ModelNote)
	require.Equal(t, "left out of the plan (their instances stay, they take none): no cpu.cores from edge", ans.ModelNote)
	require.NotEmpty(t, ans.Moves, "wave-a, at 90 % of 2 cores, sheds")
	for _, m := range ans.Moves {
		require.NotEqual(t, "edge", m.To, "%+v: nothing goes to the wave left out", m)
		require.NotEqual(t, "e1", m.Instance, "%+v: its instances stay", m)
	}
	left := map[string]string{}
	for _, w := range ans.Waves {
		left[w.Node] = w.LeftOut
	}
	require.Equal(t, map[string]string{"wave-a": "", "wave-b": "", "wave-c": "", "edge": "no cpu.cores"}, left)
	require.Contains(t, string(r.body), `"left_out":"no cpu.cores"`)

	// Three of six without cores: rows/s for all, as before.
	noCores("edge-2", 3)
	body = strings.Replace(body, `{"node":"edge","alive":true}`, `{"node":"edge","alive":true},{"node":"edge-2","alive":true},{"node":"edge-3","alive":true}`, 1)
	r, ans = postRebalance(t, j, "", body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, api.ModelRows, ans.Model)
	require.Equal(t, "planned in rows/s: no cpu.cores from edge, edge-2, edge-3", ans.ModelNote)
	require.NotContains(t, string(r.body), `"left_out"`)
}

// TestPlanCountsPendingPlacements: a placement's reservation counts in the plans, in
// cores: while the instance is not in the balancer's request, its reserved cores weigh
// on its wave (reserved_cores, in peak_before); once the request has it assigned and
// not yet measured, it is priced at the work its placement reserved (reserved), not at
// nothing. An outside trial's plan moved two instances onto a wave a reservation had
// already taken to 0.73 of its cores, over the 0.7 cap.
func TestPlanCountsPendingPlacements(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Algorithm = "utilisation" })
	h := j.Handler()
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 2, UtilPct: 60, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 2000, "a2": 1500, "a3": 1000}},
		{Node: "wave-b", Cores: 8, UtilPct: 10, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"b1": 1000}},
		{Node: "wave-c", Cores: 8, UtilPct: 10, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"c1": 1000}},
	})
	body := `{"waves":[{"node":"wave-a","alive":true},{"node":"wave-b","alive":true},{"node":"wave-c","alive":true}],
		"instances":[{"id":"a1","node":"wave-a"},{"id":"a2","node":"wave-a"},{"id":"a3","node":"wave-a"},{"id":"b1","node":"wave-b"},{"id":"c1","node":"wave-c"}%s]}`
	peakOf := func(ans api.RebalanceAnswer, node string) (api.WaveLoad, map[string]api.InstanceCost) {
		costs := map[string]api.InstanceCost{}
		for _, ic := range ans.Costs {
			costs[ic.Instance] = ic
		}
		for _, w := range ans.Waves {
			if w.Node == node {
				return w, costs
			}
		}
		t.Fatalf("no %s in %+v", node, ans.Waves)
		return api.WaveLoad{}, nil
	}
	r, before := postRebalance(t, j, "", fmt.Sprintf(body, ""))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	b0, _ := peakOf(before, "wave-b")
	require.Zero(t, b0.ReservedCores)

	// 20,000 rows/s on wave-b (the judge's own choice among b and c, wave-a excluded).
	ans := placeHTTP(t, h, `{"instance":"new-1","exclude":["wave-a","wave-c"],"expected":{"rows_per_s":20000,"bytes_per_s":0}}`)
	require.Equal(t, "wave-b", ans.Node)
	require.NotNil(t, ans.Reservation)
	cores := ans.Reservation.Cores
	require.InEpsilon(t, 4.0, cores, 0.25, "20,000 rows/s at about 2e-4 cores a row")

	r, after := postRebalance(t, j, "", fmt.Sprintf(body, ""))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	b1, _ := peakOf(after, "wave-b")
	require.InDelta(t, cores, b1.ReservedCores, 1e-9, "the pending placement weighs on its wave")
	require.InDelta(t, b0.PeakBefore+cores/8, b1.PeakBefore, 0.01, "in the wave's peak before the moves")
	require.Contains(t, string(r.body), `"reserved_cores"`)
	// GET /v1/nodes/{id} weighs it the same: its capacity's peak is the plan's.
	var node struct {
		Capacity api.NodeLoad `json:"capacity"`
	}
	nr := do(t, h, "GET", "/v1/nodes/wave-b", "", nil)
	require.NoError(t, json.Unmarshal(nr.body, &node), string(nr.body))
	require.InDelta(t, cores, node.Capacity.ReservedCores, 1e-9, string(nr.body))
	require.InDelta(t, b1.PeakBefore, node.Capacity.Peak, 0.01, "the node's peak counts the reservation as the plan does")

	// The balancer's view has it now, on wave-b, not yet measured.
	r, assigned := postRebalance(t, j, "", fmt.Sprintf(body, `,{"id":"new-1","node":"wave-b"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	b2, costs := peakOf(assigned, "wave-b")
	require.Zero(t, b2.ReservedCores, "the instance is in the plan: its reservation is not counted twice")
	ic := costs["new-1"]
	require.True(t, ic.Reserved && !ic.Measured, "%+v", ic)
	require.Equal(t, 20000.0, ic.RowsPerS)
	require.InEpsilon(t, cores, ic.Cost, 0.01, "priced at what its placement reserved")
	require.InDelta(t, b1.PeakBefore, b2.PeakBefore, 0.01, "the same load on wave-b either way")
	for _, m := range assigned.Moves {
		require.NotEqual(t, "wave-b", m.To, "%+v: wave-b, at %.2f with the new instance, takes nothing from wave-a while wave-c has room", m, b2.PeakBefore)
	}
}

// TestPlanSaysWhichWavesArePricedThinly: a wave with fewer wave.cpu_cores samples than a
// fit needs is priced at the fleet's pooled prices at its speed, and the plan says so
// (model_note, with how many samples it has; its prices' pooled_why), as it does for a
// wave with none; a fitted wave is not named. An outside trial's plan moved three
// instances onto such a wave without a word.
func TestPlanSaysWhichWavesArePricedThinly(t *testing.T) {
	j, c := newJudge(t, nil)
	h := j.Handler()
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 2, UtilPct: 80, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 3000, "a2": 2500}},
		{Node: "wave-b", Cores: 8, UtilPct: 20, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"b1": 1000}},
	})
	for k := range 9 {
		// The last 90 s, so that the fitted waves' figures stay recent.
		b := waveBatch("wave-d", c.Now().Add(time.Duration(k-8)*10*time.Second), 0.2+0.01*float64(k), map[string]float64{"d1": 400 + 10*float64(k)})
		b.Points = append(b.Points, metric.Point{Name: metric.CPUCores, Value: 8})
		require.Equal(t, http.StatusAccepted, do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b))).status)
	}
	body := `{"waves":[{"node":"wave-a","alive":true},{"node":"wave-b","alive":true},{"node":"wave-d","alive":true}],
		"instances":[{"id":"a1","node":"wave-a"},{"id":"a2","node":"wave-a"},{"id":"b1","node":"wave-b"},{"id":"d1","node":"wave-d"}]}`
	r, ans := postRebalance(t, j, "", body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, api.ModelUtilisation, ans.Model, ans.ModelNote)
	require.Equal(t, "priced at the fleet's pooled prices for want of wave.cpu_cores samples of their own (how many they have): wave-d (9)", ans.ModelNote)
	for _, w := range ans.Waves {
		switch w.Node {
		case "wave-d":
			require.Equal(t, "pooled", w.Prices.Source)
			require.Equal(t, "9 of the 30 samples a fit of its own needs: the fleet's prices at the wave's speed", w.Prices.PooledWhy)
		default:
			require.Equal(t, "fitted", w.Prices.Source, w.Node)
			require.Empty(t, w.Prices.PooledWhy, w.Node)
		}
	}
}

// TestPlacementOfARunningInstanceWeighsItsOwnWork: a placement without a hint for an
// instance a wave reports running (`binlake instance move` asks the judge so) weighs
// that instance's own work, not the fleet's typical instance: an outside trial's
// placement of a 445 rows/s instance weighed the median, 1,095.
func TestPlacementOfARunningInstanceWeighsItsOwnWork(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Algorithm = "utilisation" })
	h := j.Handler()
	utilFleet(t, h, c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 8, UtilPct: 40, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 6000, "a2": 400}},
		{Node: "wave-b", Cores: 8, UtilPct: 30, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"b1": 300, "b2": 500}},
		{Node: "wave-c", Cores: 8, UtilPct: 30, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"c1": 350}},
	})
	ans := placeHTTP(t, h, `{"instance":"a1","exclude":["wave-a"],"dry_run":true}`)
	require.NotNil(t, ans.Expected)
	require.Equal(t, api.ExpectedMeasured, ans.Expected.Source, "%+v", ans.Expected)
	require.InEpsilon(t, 6000, ans.Expected.RowsPerS, 0.15, "a1's own rows/s")
	// Explained in full, its cost is in cores at its wave's prices (it had none).
	all := placeHTTP(t, h, `{"instance":"a1","exclude":["wave-a"],"dry_run":true,"explain":"all"}`)
	require.NotNil(t, all.InstanceCost)
	require.Equal(t, "wave-a", all.InstanceCost.Node)
	require.InEpsilon(t, 6000*2e-4, all.InstanceCost.CoresNow, 0.15, "%+v", all.InstanceCost)
	require.GreaterOrEqual(t, all.InstanceCost.CoresPeak, all.InstanceCost.CoresNow)
	// Not excluded, the wave that runs it weighs it once: it is in its peak already.
	home := placeHTTP(t, h, `{"instance":"a1","dry_run":true,"explain":"all"}`)
	a := scoreOf(t, home, "wave-a")
	require.Zero(t, a.Parts["cost_cores"], "%+v", a.Parts)
	require.Equal(t, a.Parts["peak_before"], a.Parts["peak_after"])
	require.InEpsilon(t, 6000*2e-4, scoreOf(t, home, "wave-b").Parts["cost_cores"], 0.15)
	fresh := placeHTTP(t, h, `{"instance":"new-1","dry_run":true}`)
	require.Equal(t, api.ExpectedTypical, fresh.Expected.Source, "a new instance weighs the typical one")
	require.Less(t, fresh.Expected.RowsPerS, 1000.0, "the median of the five")
}

// TestPlanPricesAnUnmeasuredInstanceAtTheTypical: an instance the request assigns that
// no wave reports and no placement reserved (defined with its wave named, not yet
// started) weighs the fleet's typical instance on its wave, as a placement without a
// hint weighs it; it weighed nothing, and a plan left such instances piled on one wave.
func TestPlanPricesAnUnmeasuredInstanceAtTheTypical(t *testing.T) {
	j, c := newJudge(t, nil)
	utilFleet(t, j.Handler(), c, []wavefleet.Wave{
		{Node: "wave-a", Cores: 4, UtilPct: 20, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"a1": 1000, "a2": 1200}},
		{Node: "wave-b", Cores: 4, UtilPct: 20, Row: 2e-4, Byte: 2e-9, Instances: map[string]float64{"b1": 1100, "b2": 900}},
	})
	body := `{"waves":[{"node":"wave-a","alive":true},{"node":"wave-b","alive":true}],
		"instances":[{"id":"a1","node":"wave-a"},{"id":"a2","node":"wave-a"},{"id":"b1","node":"wave-b"},{"id":"b2","node":"wave-b"}%s]}`
	waveA := func(ans api.RebalanceAnswer) api.WaveLoad {
		for _, w := range ans.Waves {
			if w.Node == "wave-a" {
				return w
			}
		}
		t.Fatalf("no wave-a in %+v", ans.Waves)
		return api.WaveLoad{}
	}
	r, before := postRebalance(t, j, "", fmt.Sprintf(body, ""))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, api.ModelUtilisation, before.Model, before.ModelNote)

	r, after := postRebalance(t, j, "", fmt.Sprintf(body, `,{"id":"new-1","node":"wave-a"},{"id":"new-2","node":"wave-a"},{"id":"new-3","node":"wave-a"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var typicalCores float64
	for _, ic := range after.Costs {
		if strings.HasPrefix(ic.Instance, "new-") {
			require.True(t, ic.Typical && !ic.Measured && !ic.Reserved, "%+v", ic)
			require.InEpsilon(t, 1050, ic.RowsPerS, 0.15, "the median of the four running: %+v", ic)
			require.InEpsilon(t, 1050*2e-4, ic.Cost, 0.25, "in cores at wave-a's prices: %+v", ic)
			typicalCores = ic.Cost
		} else {
			require.False(t, ic.Typical, "%+v", ic)
		}
	}
	require.InDelta(t, waveA(before).PeakBefore+3*typicalCores/4, waveA(after).PeakBefore, 0.01, "the three weigh on wave-a")
	require.NotEmpty(t, after.Moves, "wave-a, three typical instances heavier, sheds some to wave-b")
	for _, m := range after.Moves {
		require.Equal(t, "wave-b", m.To, "%+v", m)
	}
}
