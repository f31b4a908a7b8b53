package judge

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/lbplugins"
)

// series builds one current-hour series: a level with a sample this hour, or carried
// over from the previous hour.
func series(name string, labels map[string]string, ewma, last float64, carried bool) analysis.Series {
	c := lbplugins.Current{EWMA: ewma, Last: last, Count: 1, Carried: carried}
	if carried {
		c.Count = 0
	}
	return analysis.Series{Name: name, Labels: labels, Current: c}
}

func inst(id string) map[string]string { return map[string]string{"instance": id} }

func runningLabels(id, state string) map[string]string {
	return map[string]string{"instance": id, "state": state}
}

func TestCostsOf(t *testing.T) {
	cost := func(id string, rows, bytes, cpu, c float64) api.InstanceCost {
		return api.InstanceCost{Instance: id, Node: "wave-1", RowsPerS: rows, BytesPerS: bytes, CPUShare: cpu, Cost: c, Measured: true}
	}
	for _, tc := range []struct {
		name   string
		floor  float64
		series []analysis.Series
		want   map[string]api.InstanceCost
		runs   []string
	}{
		{
			name:  "rows, bytes and the CPU split by rows",
			floor: 100,
			series: []analysis.Series{
				series(metric.WaveCPUCores, nil, 2, 2, false),
				series(metric.WaveTPS, nil, 400, 400, false), // the node's sum: not an instance
				series(metric.WaveTPS, inst("orders"), 300, 310, false),
				series(metric.WaveTPS, inst("users"), 100, 90, false),
				series(metric.WaveBytesPerS, inst("orders"), 60_000, 61_000, false),
				series(metric.WaveBytesPerS, inst("users"), 5_000, 5_000, false),
				series(metric.WaveInstanceRunning, runningLabels("orders", "running"), 1, 1, false),
				series(metric.WaveInstanceRunning, runningLabels("users", "running"), 1, 1, false),
				series(metric.WaveLagSeconds, inst("orders"), 3, 3, false), // not a cost
			},
			want: map[string]api.InstanceCost{
				"orders": cost("orders", 300, 60_000, 1.5, 400),
				"users":  cost("users", 100, 5_000, 0.5, 200),
			},
			runs: []string{"orders", "users"},
		},
		{
			name:  "no rows: no CPU share, the floor only",
			floor: 100,
			series: []analysis.Series{
				series(metric.WaveCPUCores, nil, 0.3, 0.3, false),
				series(metric.WaveTPS, inst("idle"), 0, 0, false),
				series(metric.WaveInstanceRunning, runningLabels("idle", "running"), 1, 1, false),
			},
			want: map[string]api.InstanceCost{"idle": cost("idle", 0, 0, 0, 100)},
			runs: []string{"idle"},
		},
		{
			name:  "a stopped instance is costed but not run; its rows still split the CPU",
			floor: 10,
			series: []analysis.Series{
				series(metric.WaveCPUCores, nil, 1, 1, false),
				series(metric.WaveTPS, inst("orders"), 30, 30, false),
				series(metric.WaveTPS, inst("broken"), 10, 0, false),
				series(metric.WaveInstanceRunning, runningLabels("orders", "running"), 1, 1, false),
				series(metric.WaveInstanceRunning, map[string]string{"instance": "broken", "state": "error", "reason": "binlog_purged"}, 0.4, 0, false),
			},
			want: map[string]api.InstanceCost{
				"orders": cost("orders", 30, 0, 0.75, 40),
				"broken": cost("broken", 10, 0, 0.25, 20),
			},
			runs: []string{"orders"},
		},
		{
			// At xx:00 every level is carried until the wave's first batch of the new
			// hour: what its last batch said stands (a stopped series does not: below).
			name:  "a level carried into the hour stands as its last batch",
			floor: 100,
			series: []analysis.Series{
				series(metric.WaveTPS, inst("orders"), 50, 50, true),
				series(metric.WaveInstanceRunning, runningLabels("orders", "running"), 1, 1, true),
				series(metric.WaveTPS, inst("tpsonly"), 5, 5, true), // no instance_running: runs elsewhere
			},
			want: map[string]api.InstanceCost{"orders": cost("orders", 50, 0, 0, 150), "tpsonly": cost("tpsonly", 5, 0, 0, 105)},
			runs: []string{"orders"},
		},
		{
			name:  "without instance_running, a wave.tps this hour says it runs",
			floor: 1,
			series: []analysis.Series{
				series(metric.WaveTPS, inst("old-wave"), 7, 7, false),
			},
			want: map[string]api.InstanceCost{"old-wave": cost("old-wave", 7, 0, 0, 8)},
			runs: []string{"old-wave"},
		},
		{
			// The wave it left keeps its counters: a rate at 0, and no instance_running
			// once that hour's series of it are gone. A wave that says which it runs
			// does not run it.
			name:  "only a wave.tps, on a wave that reports instance_running: left",
			floor: 1,
			series: []analysis.Series{
				series(metric.WaveTPS, inst("left"), 0, 0, false),
				series(metric.WaveTPS, inst("orders"), 30, 30, false),
				series(metric.WaveInstanceRunning, runningLabels("orders", "running"), 1, 1, false),
			},
			want: map[string]api.InstanceCost{"left": cost("left", 0, 0, 0, 1), "orders": cost("orders", 30, 0, 0, 31)},
			runs: []string{"orders"},
		},
		{
			name:  "a wave that leads no instance runs none of the rates it keeps",
			floor: 1,
			series: []analysis.Series{
				series(metric.WaveInstances, nil, 0.4, 0, false),
				series(metric.WaveTPS, inst("left"), 0, 0, false),
			},
			want: map[string]api.InstanceCost{"left": cost("left", 0, 0, 0, 1)},
			runs: []string{},
		},
		{
			name:  "one state at 1 among the hour's states: runs",
			floor: 0,
			series: []analysis.Series{
				series(metric.WaveInstanceRunning, map[string]string{"instance": "flaky", "state": "reconnecting", "reason": "network"}, 0, 0, false),
				series(metric.WaveInstanceRunning, runningLabels("flaky", "running"), 0.8, 1, false),
				series(metric.WaveInstanceRunning, runningLabels("starting", "connecting"), 0, 0, false),
			},
			want: map[string]api.InstanceCost{"flaky": cost("flaky", 0, 0, 0, 0), "starting": cost("starting", 0, 0, 0, 0)},
			runs: []string{"flaky"},
		},
		{
			name:  "NaN, negative and infinite levels count as 0",
			floor: 100,
			series: []analysis.Series{
				series(metric.WaveCPUCores, nil, math.NaN(), 0, false),
				series(metric.WaveTPS, inst("a"), math.NaN(), 0, false),
				series(metric.WaveTPS, inst("b"), -20, 0, false),
				series(metric.WaveBytesPerS, inst("b"), math.Inf(1), 0, false),
				series(metric.WaveTPS, inst("c"), 40, 40, false),
			},
			want: map[string]api.InstanceCost{"a": cost("a", 0, 0, 0, 100), "b": cost("b", 0, 0, 0, 100), "c": cost("c", 40, 0, 0, 140)},
			runs: []string{"a", "b", "c"},
		},
		{
			name:   "a host without a wave",
			floor:  100,
			series: []analysis.Series{series(metric.CPUUtil, nil, 50, 50, false)},
			want:   map[string]api.InstanceCost{},
			runs:   []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := costsOf(analysis.Node{Node: "wave-1", Series: tc.series}, tc.floor)
			require.Equal(t, tc.want, nc.costs)
			require.Equal(t, tc.runs, sortedRuns(nc.runs))
			running := nc.running()
			require.Len(t, running, len(tc.runs))
			for i, c := range running {
				require.Equal(t, tc.runs[i], c.Instance, "sorted by instance")
				require.Equal(t, tc.want[c.Instance], c)
			}
		})
	}
}

// TestCostsOfSplitsTheCPUBetweenTheSeriesStillReported: an instance whose wave.tps the
// node stopped reporting keeps its last level, but no longer takes a share of the
// process's CPU, which moved on without it.
func TestCostsOfSplitsTheCPUBetweenTheSeriesStillReported(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC)
	at := func(s analysis.Series, ts time.Time) analysis.Series { s.LastTS = ts; return s }
	n := analysis.Node{Node: "wave-1", LastBatchTS: now, Interval: 10 * time.Second, Series: []analysis.Series{
		at(series(metric.WaveCPUCores, nil, 0.8, 0.8, false), now),
		at(series(metric.WaveTPS, inst("orders"), 300, 300, false), now),
		at(series(metric.WaveTPS, inst("users"), 100, 100, false), now),
		at(series(metric.WaveTPS, inst("left"), 400, 400, false), now.Add(-time.Minute)), // 6 intervals ago
	}}
	nc := costsOf(n, 0)
	require.InDelta(t, 0.6, nc.costs["orders"].CPUShare, 1e-12)
	require.InDelta(t, 0.2, nc.costs["users"].CPUShare, 1e-12)
	require.Zero(t, nc.costs["left"].CPUShare)
	require.Equal(t, 400.0, nc.costs["left"].RowsPerS, "its last level is still shown")
	require.Equal(t, []string{"orders", "users"}, sortedRuns(nc.runs))

	// The same once carried into the next hour: the stopped one still does not run.
	for i := range n.Series {
		n.Series[i].Carried = true
	}
	require.Equal(t, []string{"orders", "users"}, sortedRuns(costsOf(n, 0).runs))
}

// waveBatch is one agent batch of a wave: its CPU and, per instance, rows/s, bytes/s
// and whether it runs.
func waveBatch(node string, ts time.Time, cpu float64, rows map[string]float64, stopped ...string) metric.Batch {
	b := metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{
		{Name: metric.WaveCPUCores, Value: cpu}, {Name: metric.CPUUtil, Value: 20}, {Name: metric.MemUsedPct, Value: 20}}}
	for id, r := range rows {
		b.Points = append(b.Points,
			metric.Point{Name: metric.WaveTPS, Value: r, Labels: inst(id)},
			metric.Point{Name: metric.WaveBytesPerS, Value: r * 200, Labels: inst(id)},
			metric.Point{Name: metric.WaveInstanceRunning, Value: 1, Labels: runningLabels(id, "running")})
	}
	for _, id := range stopped {
		b.Points = append(b.Points, metric.Point{Name: metric.WaveInstanceRunning, Value: 0,
			Labels: map[string]string{"instance": id, "state": "error", "reason": "binlog_purged"}})
	}
	return b
}

// TestNodeDetailInstances: GET /v1/nodes/{id} lists the instances the node runs with
// their costs, by instance; a node without a wave lists none.
func TestNodeDetailInstances(t *testing.T) {
	j, _ := newJudge(t, func(o *Options) { o.Rebalance = &RebalanceOptions{InstanceFloor: 50, MaxMoves: 1} })
	require.NoError(t, j.Ingest(waveBatch("wave-1", t0, 2, map[string]float64{"users": 100, "orders": 300}, "broken"), sourceHTTP))
	require.NoError(t, j.Ingest(load("host-1", t0, 10, 10), sourceHTTP))
	require.NoError(t, j.Ingest(metric.Batch{Node: "host-2", TS: t0, IntervalS: 10, Points: []metric.Point{{Name: metric.CPUUtil, Value: 1}}}, sourceHTTP))

	r := do(t, j.Handler(), "GET", "/v1/nodes/wave-1", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var d struct {
		Instances json.RawMessage `json:"instances"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.JSONEq(t, `[
		{"instance":"orders","node":"wave-1","rows_per_s":300,"bytes_per_s":60000,"cpu_cores":1.5,"cores_now":0,"cores_peak":0,"cost":350,"measured":true},
		{"instance":"users","node":"wave-1","rows_per_s":100,"bytes_per_s":20000,"cpu_cores":0.5,"cores_now":0,"cores_peak":0,"cost":150,"measured":true}
	]`, string(d.Instances))

	// host-1 reports a wave.tps but no wave.instance_running (the load helper's): it
	// runs orders. host-2 runs nothing.
	r = do(t, j.Handler(), "GET", "/v1/nodes/host-1", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.JSONEq(t, `[{"instance":"orders","node":"host-1","rows_per_s":10,"bytes_per_s":0,"cpu_cores":0,"cores_now":0,"cores_peak":0,"cost":60,"measured":true}]`, string(d.Instances))
	r = do(t, j.Handler(), "GET", "/v1/nodes/host-2", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.JSONEq(t, `[]`, string(d.Instances))

	// A wave that counts the binlog its instances read says how much each reads of its
	// source, beside what it publishes (two instances of one source: each reads all of it).
	b := waveBatch("wave-2", t0, 1, map[string]float64{"users": 100, "orders": 300})
	for _, id := range []string{"users", "orders"} {
		b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: 3e6, Labels: inst(id)})
	}
	require.NoError(t, j.Ingest(b, sourceHTTP))
	r = do(t, j.Handler(), "GET", "/v1/nodes/wave-2", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var d2 struct{ Instances []api.InstanceCost }
	require.NoError(t, json.Unmarshal(r.body, &d2))
	require.Len(t, d2.Instances, 2)
	for _, c := range d2.Instances {
		require.Equal(t, 3e6, c.BinlogBytesPerS, "%+v", c)
	}
	require.Contains(t, string(r.body), `"binlog_bytes_per_s":3000000`)
}

// An instance that left a wave (its wave stops reporting it) is no longer the wave's
// once the wave's batches have gone without it for three intervals; one batch without it
// (an agent's failed scrape) does not drop it. It stood there until the hour's end.
func TestInstanceThatLeftIsNotTheWaves(t *testing.T) {
	j, c := newJudge(t, nil)
	listed := func() []string {
		r := do(t, j.Handler(), "GET", "/v1/nodes/wave-1", "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var d struct{ Instances []api.InstanceCost }
		require.NoError(t, json.Unmarshal(r.body, &d))
		var ids []string
		for _, in := range d.Instances {
			ids = append(ids, in.Instance)
		}
		return ids
	}
	for range 3 {
		require.NoError(t, j.Ingest(waveBatch("wave-1", c.Now(), 1, map[string]float64{"orders": 300, "users": 100}), sourceHTTP))
		c.Add(10 * time.Second)
	}
	require.Equal(t, []string{"orders", "users"}, listed())
	require.NoError(t, j.Ingest(waveBatch("wave-1", c.Now(), 1, map[string]float64{"users": 100}), sourceHTTP))
	require.Equal(t, []string{"orders", "users"}, listed(), "one batch without it")
	for range 3 {
		c.Add(10 * time.Second)
		require.NoError(t, j.Ingest(waveBatch("wave-1", c.Now(), 1, map[string]float64{"users": 100}), sourceHTTP))
	}
	require.Equal(t, []string{"users"}, listed(), "four batches without it: it left")
}

// TestPlacementExplainsInstanceCost: an `explain: all` placement carries what the
// instance costs where it runs (the load the placement moves); the default answer, on
// the hot path, does not; an instance no agent reports has none.
func TestPlacementExplainsInstanceCost(t *testing.T) {
	j, _ := newJudge(t, func(o *Options) { o.Rebalance = &RebalanceOptions{InstanceFloor: 50, MaxMoves: 1} })
	require.NoError(t, j.Ingest(waveBatch("wave-1", t0, 2, map[string]float64{"users": 100, "orders": 300}), sourceHTTP))
	require.NoError(t, j.Ingest(waveBatch("wave-2", t0, 1, nil), sourceHTTP))
	place := func(body string) map[string]json.RawMessage {
		r := do(t, j.Handler(), "POST", "/v1/placement", "", strings.NewReader(body))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var a map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(r.body, &a))
		return a
	}
	a := place(`{"instance":"orders","exclude":["wave-1"],"dry_run":true,"explain":"all"}`)
	require.JSONEq(t, `{"instance":"orders","node":"wave-1","rows_per_s":300,"bytes_per_s":60000,"cpu_cores":1.5,"cores_now":0,"cores_peak":0,"cost":350,"measured":true}`,
		string(a["instance_cost"]))
	a = place(`{"instance":"orders","exclude":["wave-1"],"dry_run":true}`)
	require.NotContains(t, a, "instance_cost")
	a = place(`{"instance":"new","dry_run":true,"explain":"all"}`)
	require.NotContains(t, a, "instance_cost")
}

// A node whose wave stopped reporting while its agent still sends the host's figures:
// its wave.* levels are not its figures now once its batches have gone without them for
// three intervals. GET /v1/nodes and /v1/nodes/{id} list them under stopped, not load,
// placements do not see them, and the status page says so; one batch without them (a
// failed scrape) changes nothing. They stood until the hour's end: the listing showed
// wave.tps 100 and the status page the instance running 13 minutes after the last.
func TestWaveThatStoppedReportingIsNotTheNodes(t *testing.T) {
	j, c := newJudge(t, nil)
	withWave := func(ts time.Time) metric.Batch {
		b := waveBatch("dbx-agent2", ts, 1, map[string]float64{"local": 100})
		b.Points = append(b.Points, metric.Point{Name: metric.WaveTPS, Value: 100}, metric.Point{Name: metric.WaveInstances, Value: 1})
		return b
	}
	hostOnly := func(ts time.Time) metric.Batch {
		return metric.Batch{Node: "dbx-agent2", TS: ts, IntervalS: 10, Points: []metric.Point{
			{Name: metric.CPUUtil, Value: 20}, {Name: metric.MemUsedPct, Value: 20}}}
	}
	type listed struct {
		Load    map[string]float64
		Stopped map[string]time.Time
	}
	nodes := func() listed {
		r := do(t, j.Handler(), "GET", "/v1/nodes", "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var d struct{ Nodes []listed }
		require.NoError(t, json.Unmarshal(r.body, &d))
		require.Len(t, d.Nodes, 1)
		return d.Nodes[0]
	}
	for range 3 {
		require.NoError(t, j.Ingest(withWave(c.Now()), sourceHTTP))
		c.Add(10 * time.Second)
	}
	last := c.Now().Add(-10 * time.Second)
	require.NoError(t, j.Ingest(hostOnly(c.Now()), sourceHTTP))
	require.Contains(t, nodes().Load, metric.WaveTPS, "one batch without it")
	require.Nil(t, nodes().Stopped)
	for range 78 { // 13 minutes
		c.Add(10 * time.Second)
		require.NoError(t, j.Ingest(hostOnly(c.Now()), sourceHTTP))
	}

	want := listed{Load: map[string]float64{metric.CPUUtil: 20, metric.MemUsedPct: 20},
		Stopped: map[string]time.Time{metric.WaveTPS: last, metric.WaveInstances: last, metric.WaveCPUCores: last}}
	require.Equal(t, want, nodes())
	r := do(t, j.Handler(), "GET", "/v1/nodes/dbx-agent2", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var d struct {
		listed
		Instances     []api.InstanceCost
		InstancesAsOf *time.Time `json:"instances_as_of"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.Equal(t, want, d.listed, "the node's detail says what its listing does")
	// Its wave is down (wave_silent): the instance its last report said it ran, as the
	// plan has it, dated by that report.
	require.Equal(t, []string{"local"}, instanceIDs(d.Instances))
	require.Equal(t, &last, d.InstancesAsOf)

	vs, _ := j.inc.Views()
	require.Len(t, vs, 1)
	require.NotContains(t, vs[0].Current, metric.WaveTPS, "placements do not see it")
	require.NotContains(t, vs[0].Current, metric.WaveInstances)
	require.Contains(t, vs[0].Current, metric.CPUUtil)

	p := statusPageOf(t, j)
	require.Contains(t, p, `<td>stopped</td><td>stopped</td></tr>`, "wave TPS and instances")
	require.Contains(t, p, `<tr><td>dbx-agent2</td><td>local</td><td class="stale">not reported</td><td></td><td><small>the wave stopped reporting; it last said running</small></td><td>–</td><td>13m10s ago</td></tr>`)
	require.NotContains(t, p, `class="live">running`)
	require.Contains(t, p, `stopped: the node still reports, but its batches have gone without this figure for 3 of its intervals`)
}

// The note under the node table explains its "stopped" cells: a stopped series the
// table has no column for (an agent that stopped sending mem.used_pct does not, but one
// whose wave.cpu_cores stopped) leaves no such cell, and the note is not shown.
func TestStatusNoteOnlyForStoppedColumns(t *testing.T) {
	j, c := newJudge(t, nil)
	batch := func(extra ...metric.Point) metric.Batch {
		return metric.Batch{Node: "h1", TS: c.Now(), IntervalS: 10, Points: append([]metric.Point{
			{Name: metric.CPUUtil, Value: 20}, {Name: metric.MemUsedPct, Value: 20}}, extra...)}
	}
	for range 3 {
		require.NoError(t, j.Ingest(batch(metric.Point{Name: metric.CPUCores, Value: 4}), sourceHTTP))
		c.Add(10 * time.Second)
	}
	for range 5 {
		require.NoError(t, j.Ingest(batch(), sourceHTTP))
		c.Add(10 * time.Second)
	}
	p := statusPageOf(t, j)
	require.NotContains(t, p, `<td>stopped</td>`)
	require.NotContains(t, p, `stopped: the node still reports`, "cpu.cores has no column")

	for range 5 {
		require.NoError(t, j.Ingest(metric.Batch{Node: "h1", TS: c.Now(), IntervalS: 10, Points: []metric.Point{{Name: metric.CPUUtil, Value: 20}}}, sourceHTTP))
		c.Add(10 * time.Second)
	}
	p = statusPageOf(t, j)
	require.Contains(t, p, `<td>stopped</td>`, "mem % stopped")
	require.Contains(t, p, `stopped: the node still reports`)
}

// movedBatch is a wave's batch every minute: the instances it runs (rows/s) and those
// that left it, whose counters it keeps, so their wave.tps at 0 without an
// instance_running, as a wave before ee3bb23 did (one since deletes a departed
// instance's series: pass none).
func movedBatch(node string, ts time.Time, running map[string]float64, left ...string) metric.Batch {
	b := metric.Batch{Node: node, TS: ts, IntervalS: 60, Points: []metric.Point{
		{Name: metric.CPUUtil, Value: 20}, {Name: metric.CPUCores, Value: 4}, {Name: metric.WaveCPUCores, Value: 0.5},
		{Name: metric.WaveInstances, Value: float64(len(running))}}}
	for id, r := range running {
		b.Points = append(b.Points,
			metric.Point{Name: metric.WaveTPS, Value: r, Labels: inst(id)},
			metric.Point{Name: metric.WaveInstanceRunning, Value: 1, Labels: runningLabels(id, "running")})
	}
	for _, id := range left {
		b.Points = append(b.Points, metric.Point{Name: metric.WaveTPS, Value: 0, Labels: inst(id)})
	}
	return b
}

// TestAMovedInstanceIsOnTheWaveItWentTo: once an instance moved, GET /v1/rebalance,
// GET /v1/nodes/{id} and the placements' loads have it on the wave it went to, both
// while the wave it left still says it runs it (its last batches before the move are
// recent) and once that wave's instance_running series of it are gone (two hours
// later, or for a judge restarted since), when that wave still reports its wave.tps at
// 0. 13 of 34 moved instances stood on the wave they had left, at 0 rows/s, and 10 of
// 20 planned moves started there.
func TestAMovedInstanceIsOnTheWaveItWentTo(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Rebalance = &RebalanceOptions{InstanceFloor: 50, MaxMoves: 5} })
	ingest := func(b metric.Batch) { require.NoError(t, j.Ingest(b, sourceHTTP)) }
	for range 5 {
		ingest(movedBatch("wave-a", c.Now(), map[string]float64{"orders": 300, "users": 100}))
		ingest(movedBatch("wave-b", c.Now(), map[string]float64{"items": 50}))
		c.Add(time.Minute)
	}
	// orders moves from wave-a to wave-b.
	moved := func() {
		ingest(movedBatch("wave-a", c.Now(), map[string]float64{"users": 100}, "orders"))
		ingest(movedBatch("wave-b", c.Now(), map[string]float64{"items": 50, "orders": 300}))
	}
	check := func(when string) {
		t.Helper()
		r := do(t, j.Handler(), "GET", "/v1/rebalance", "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var plan api.RebalanceAnswer
		require.NoError(t, json.Unmarshal(r.body, &plan))
		on := map[string]string{}
		for _, w := range plan.Waves {
			require.Contains(t, []string{"wave-a", "wave-b"}, w.Node)
		}
		for _, ic := range plan.Costs {
			on[ic.Instance] = ic.Node
		}
		require.Equal(t, map[string]string{"orders": "wave-b", "users": "wave-a", "items": "wave-b"}, on, "%s: GET /v1/rebalance's costs", when)
		for _, m := range plan.Moves {
			require.Equal(t, on[m.Instance], m.From, "%s: a move starts where its instance runs", when)
		}
		for node, want := range map[string][]string{"wave-a": {"users"}, "wave-b": {"items", "orders"}} {
			r := do(t, j.Handler(), "GET", "/v1/nodes/"+node, "", nil)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			var d struct{ Instances []api.InstanceCost }
			require.NoError(t, json.Unmarshal(r.body, &d))
			var ids []string
			for _, in := range d.Instances {
				ids = append(ids, in.Instance)
			}
			require.Equal(t, want, ids, "%s: GET /v1/nodes/%s", when, node)
		}
		cs := j.computeCapacities(nil)
		require.False(t, cs.load.runs["wave-a"]["orders"], "%s: the placements' loads", when)
		require.True(t, cs.load.runs["wave-b"]["orders"], "%s: the placements' loads", when)
		require.Equal(t, "wave-b", j.instanceCost("orders").Node, when)
	}
	moved()
	check("a minute after the move")
	for c.Now().Before(t0.Add(2*time.Hour + 10*time.Minute)) {
		c.Add(time.Minute)
		moved()
	}
	n, _ := j.inc.Node("wave-a")
	for _, s := range n.Series {
		require.False(t, s.Name == metric.WaveInstanceRunning && s.Labels["instance"] == "orders", "gone after two rollovers")
	}
	check("two hours after the move")
}

// TestAMovedInstanceKeepsItsDailyProfile: two hours after a move, once the current-hour
// analysis has dropped the series of the wave it left (which reports nothing of it, as a
// wave deletes a departed instance's series), an instance's hour-of-day profile is still
// its week's, read where it ran: its busy hour (20:00 UTC, ten times its rate now) was
// lost, priced at its rate now, until its new wave had a day of it.
func TestAMovedInstanceKeepsItsDailyProfile(t *testing.T) {
	j, c := newJudge(t, nil)
	ingest := func(b metric.Batch) { require.NoError(t, j.Ingest(b, sourceHTTP)) }
	rate := func(ts time.Time) float64 {
		if ts.Hour() == 20 {
			return 1000
		}
		return 100
	}
	for c.Now().Before(t0.Add(26 * time.Hour)) { // every hour of the day on wave-a
		ingest(movedBatch("wave-a", c.Now(), map[string]float64{"orders": rate(c.Now())}))
		ingest(movedBatch("wave-b", c.Now(), map[string]float64{"items": 50}))
		c.Add(10 * time.Minute)
	}
	moved := c.Now()
	for c.Now().Before(moved.Add(2*time.Hour + 10*time.Minute)) {
		ingest(movedBatch("wave-a", c.Now(), nil))
		ingest(movedBatch("wave-b", c.Now(), map[string]float64{"items": 50, "orders": rate(c.Now())}))
		c.Add(time.Minute)
	}
	require.NotContains(t, j.instancesByNode()["wave-a"], "orders", "the wave it left no longer lists it")
	require.False(t, moved.Hour() <= 20 && 20 < moved.Add(2*time.Hour+10*time.Minute).Hour(), "the busy hour is before the move")
	require.NoError(t, j.buf.Refresh(context.Background()), "every batch stored")
	require.NoError(t, j.hist.Refresh(context.Background()))
	p := j.profilesOf(j.hist.Snapshot()).of("orders")
	require.NotNil(t, p)
	require.Positive(t, p.Count[20], "its busy hour, from the wave it left")
	require.InDelta(t, 1000, p.Rows[20], 1e-9)
	for hr := range 24 {
		require.Positive(t, p.Count[hr], "hour %d", hr)
	}
}
