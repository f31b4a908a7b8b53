package judge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/lbplugins"
)

// fullWaveBatch is a wave host's batch as the agent sends it: the host's figures and the
// wave's, its instances running.
func fullWaveBatch(node string, ts time.Time, cpuUtil float64, rows map[string]float64) metric.Batch {
	b := waveBatch(node, ts, 0.5, rows)
	total := 0.0
	for _, r := range rows {
		total += r
	}
	b.Points = append(b.Points,
		metric.Point{Name: metric.CPUCores, Value: 4}, metric.Point{Name: metric.Load1, Value: 1},
		metric.Point{Name: metric.WaveTPS, Value: total}, metric.Point{Name: metric.WaveInstances, Value: float64(len(rows))})
	for i := range b.Points {
		if b.Points[i].Name == metric.CPUUtil {
			b.Points[i].Value = cpuUtil
		}
	}
	return b
}

// hostBatch is a host's batch without a wave's series: cpu.*, mem.*, load.1.
func hostBatch(node string, ts time.Time, cpuUtil float64) metric.Batch {
	return metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{
		{Name: metric.CPUUtil, Value: cpuUtil}, {Name: metric.CPUCores, Value: 4},
		{Name: metric.MemUsedPct, Value: 5}, {Name: metric.Load1, Value: 0.1}}}
}

// TestOnlyANodeThatRunsAWaveIsACandidate: a node whose wave's series stopped while its
// host's go on (its wave process died, its agent lives), and a host that never ran a
// wave (an alarm's), take no placement, whatever the algorithm; they are the idlest
// hosts of the fleet. The stopped wave read stopped after 14 s but stayed a candidate
// for every algorithm (random chose it 4 in 20, utilisation scored it at its old
// prices); random and balanced chose the host without a wave. GET /v1/rebalance moves
// nothing onto either, and fails over the stopped wave's instance
// (TestAWaveIsDownWhenItsMetricsStop).
func TestOnlyANodeThatRunsAWaveIsACandidate(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Rebalance = &RebalanceOptions{InstanceFloor: 50, MaxMoves: 5} })
	ingest := func(b metric.Batch) { require.NoError(t, j.Ingest(b, sourceHTTP)) }
	for range 6 {
		ingest(fullWaveBatch("wave-1", c.Now(), 60, map[string]float64{"orders": 300, "users": 100}))
		ingest(fullWaveBatch("wave-2", c.Now(), 70, map[string]float64{"items": 200}))
		ingest(fullWaveBatch("wave-3", c.Now(), 50, map[string]float64{"stock": 100}))
		ingest(hostBatch("alarm-host", c.Now(), 3))
		c.Add(10 * time.Second)
	}
	// wave-3's wave stops: its agent sends the host's figures, idle now, and nothing of
	// the wave for four intervals.
	for range 4 {
		ingest(fullWaveBatch("wave-1", c.Now(), 60, map[string]float64{"orders": 300, "users": 100}))
		ingest(fullWaveBatch("wave-2", c.Now(), 70, map[string]float64{"items": 200}))
		ingest(hostBatch("wave-3", c.Now(), 2))
		ingest(hostBatch("alarm-host", c.Now(), 3))
		c.Add(10 * time.Second)
	}
	c.Add(-9 * time.Second)

	vs, _ := j.inc.Views()
	states := map[string]lbplugins.WaveState{}
	for _, v := range vs {
		states[v.Node] = v.Wave
	}
	require.Equal(t, map[string]lbplugins.WaveState{"wave-1": lbplugins.WaveRunning, "wave-2": lbplugins.WaveRunning,
		"wave-3": lbplugins.WaveStopped, "alarm-host": lbplugins.WaveUnknown}, states)

	for _, algo := range []string{"random", "leastload", "balanced", "p2c", "predictive", "utilisation"} {
		for k := range 20 {
			explain := ""
			if k == 0 {
				explain = `,"explain":"all"`
			}
			r := do(t, j.Handler(), "POST", "/v1/placement", "", strings.NewReader(fmt.Sprintf(`{"instance":"probe-%d","dry_run":true,"algorithm":%q%s}`, k, algo, explain)))
			require.Equal(t, http.StatusOK, r.status, "%s: %s", algo, r.body)
			var a api.PlacementAnswer
			require.NoError(t, json.Unmarshal(r.body, &a))
			require.Contains(t, []string{"wave-1", "wave-2"}, a.Node, "%s chose a node that runs no wave", algo)
			require.Equal(t, 2, a.Candidates, algo)
			require.Equal(t, lbplugins.FilterCounts{NoWave: 1, WaveStopped: 1}, a.Filtered, algo)
			if k == 0 {
				require.ElementsMatch(t, []lbplugins.Filtered{{Node: "alarm-host", Reason: lbplugins.ReasonNoWave}, {Node: "wave-3", Reason: lbplugins.ReasonWaveStopped}},
					a.FilteredNodes, algo)
			}
		}
	}

	r := do(t, j.Handler(), "GET", "/v1/rebalance", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var plan api.RebalanceAnswer
	require.NoError(t, json.Unmarshal(r.body, &plan))
	alive := map[string]bool{}
	for _, w := range plan.Waves {
		alive[w.Node] = w.Alive
	}
	require.Equal(t, map[string]bool{"wave-1": true, "wave-2": true, "wave-3": false}, alive, "the waves of the judge's own plan")
	require.Equal(t, []string{"stock from wave-3"}, failovers(plan))
	for _, m := range plan.Moves {
		require.NotEqual(t, "wave-3", m.To)
		require.NotEqual(t, "alarm-host", m.To)
	}
}

// TestAFleetWithoutWaveSeriesStillPlaces: when no node reports a wave's series (a fleet
// whose metrics come from node_exporter through remote write), the judge cannot tell the
// waves and every live node stays a candidate.
func TestAFleetWithoutWaveSeriesStillPlaces(t *testing.T) {
	j, c := newJudge(t, nil)
	require.NoError(t, j.Ingest(hostBatch("host-1", c.Now(), 30), sourceHTTP))
	require.NoError(t, j.Ingest(hostBatch("host-2", c.Now(), 20), sourceHTTP))
	r := do(t, j.Handler(), "POST", "/v1/placement", "", strings.NewReader(`{"instance":"x","dry_run":true,"algorithm":"random","explain":"all"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var a api.PlacementAnswer
	require.NoError(t, json.Unmarshal(r.body, &a))
	require.Equal(t, 2, a.Candidates)
	require.Empty(t, a.FilteredNodes)
}
