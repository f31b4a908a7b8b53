package judge

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
)

// A batch the metric contract takes but no host can send (a value far outside its
// metric's range, a time well ahead of the judge's clock) is refused whole with 400
// naming the point, and changes nothing: a wave.tps of 1e300 once made every plan's
// answer and the node's detail 500 (infinity does not encode), even after a restart.
func TestImplausibleBatchesRefused(t *testing.T) {
	point := func(name string, v float64) metric.Batch {
		return metric.Batch{Node: "w", TS: t0, IntervalS: 10, Points: []metric.Point{{Name: metric.CPUUtil, Value: 20}, {Name: name, Value: v}}}
	}
	cases := []struct {
		name string
		b    metric.Batch
		want string // "" for accepted
	}{
		{"huge rows/s", point(metric.WaveTPS, 1e300), "point 1: wave.tps 1e+300 is outside what a host reports (rows/s, 0 to 1e+12)"},
		{"negative cores", point(metric.CPUCores, -4), "cpu.cores -4 is outside"},
		{"no cores", point(metric.CPUCores, 0), "cpu.cores 0 is outside"},
		{"negative process CPU", point(metric.WaveCPUCores, -1), "wave.cpu_cores -1 is outside"},
		{"500 percent", point(metric.CPUUtil, 500), "cpu.util 500 is outside"},
		{"negative rows/s", point(metric.WaveTPS, -100), "wave.tps -100 is outside"},
		{"far future", metric.Batch{Node: "w", TS: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), IntervalS: 10,
			Points: []metric.Point{{Name: metric.CPUUtil, Value: 10}}}, "ts 2999-01-01T00:00:00Z is about 973 years ahead of the judge's clock"}, // not Sub's saturated 2562047h47m16s, nor its 292 years
		{"11 minutes ahead", metric.Batch{Node: "w", TS: t0.Add(11 * time.Minute), IntervalS: 10,
			Points: []metric.Point{{Name: metric.CPUUtil, Value: 10}}}, "11m0s ahead of the judge's clock (at most 10m0s)"},
		{"5 minutes ahead (clock drift)", metric.Batch{Node: "w", TS: t0.Add(5 * time.Minute), IntervalS: 10,
			Points: []metric.Point{{Name: metric.CPUUtil, Value: 10}}}, ""},
		{"negative network", point(metric.NetRxBps, -1e300), "point 1: net.rx_bps -1e+300 is outside what a host reports (bytes/s, 0 to 1e+13)"},
		{"a little negative network", point(metric.NetTxBps, -3), "net.tx_bps -3 is outside"},
		{"an interface's negative rate", metric.Batch{Node: "w", TS: t0, IntervalS: 10, Points: []metric.Point{
			{Name: metric.NetRxBps, Value: -3, Labels: map[string]string{"iface": "eth0"}}}}, "net.rx_bps -3 is outside"},
		{"a state of 7", point(metric.WaveInstanceRunning, 7), "wave.instance_running 7 is outside"},
		{"half a state", point(metric.WaveInstanceRunning, 0.5), "wave.instance_running 0.5 is outside what a host reports (a state: 1 running, 0 not, a whole number from 0 to 1)"},
		{"a fraction of an instance", point(metric.WaveInstances, 2.5), "wave.instances 2.5 is outside"},
		{"three instances", point(metric.WaveInstances, 3), ""},
		{"a busy network", point(metric.NetTxBps, 1.25e9), ""},
		{"a percentage rounded over 100", point(metric.MemUsedPct, 100.4), ""},
		{"a metric the judge does not model", point("app.queue_depth", -1e300), ""},
		{"a process over its host's cores", metric.Batch{Node: "w", TS: t0, IntervalS: 10, Points: []metric.Point{
			{Name: metric.CPUCores, Value: 2}, {Name: metric.WaveCPUCores, Value: 50}}},
			"wave.cpu_cores 50 is over twice the host's cpu.cores 2: a process cannot use more cores than its host has"},
		// The analysis took the first and the store the last: the node's figure changed
		// across a restart.
		{"a series twice", point(metric.CPUUtil, 90), `points 0 and 1 are both cpu.util{}: a batch holds one value of a series at its time`},
		{"a labelled series twice", metric.Batch{Node: "w", TS: t0, IntervalS: 10, Points: []metric.Point{
			{Name: metric.DiskUsedPct, Value: 5, Labels: map[string]string{"mount": "/"}}, {Name: metric.DiskUsedPct, Value: 6, Labels: map[string]string{"mount": "/var"}},
			{Name: metric.DiskUsedPct, Value: 7, Labels: map[string]string{"mount": "/"}}}}, `points 0 and 2 are both disk.used_pct{mount="/"}`},
		{"a series twice among many", manyPoints(100, 37), `points 37 and 100 are both app.m37{i="37"}`},
		{"many series once each", manyPoints(100, -1), ""},
		{"a pegged process read over its host's cores (a late scrape)", metric.Batch{Node: "w", TS: t0, IntervalS: 10, Points: []metric.Point{
			{Name: metric.WaveCPUCores, Value: 2.6}, {Name: metric.CPUCores, Value: 2}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := newJudge(t, nil)
			r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, tc.b)))
			if tc.want == "" {
				require.Equal(t, http.StatusAccepted, r.status, string(r.body))
				require.Equal(t, []string{"w"}, j.Incremental().NodeIDs())
				return
			}
			require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
			_, msg := errorOf(t, r)
			require.Contains(t, msg, tc.want)
			require.Empty(t, j.Incremental().NodeIDs(), "a refused batch is not analysed")
			require.Empty(t, j.model.Nodes(), "nor modelled")
		})
	}
}

// A store written before the judge refused such values keeps them: a restarted judge
// leaves them out of what it rebuilds, and the node's detail and the plans answer.
func TestRebuildLeavesOutImplausiblePoints(t *testing.T) {
	c := &clock{t: t0.Add(30 * time.Minute)}
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db"), Now: c.Now})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	var pts []store.Point
	for k := range 12 {
		ts := t0.Add(time.Duration(k) * time.Minute)
		pts = append(pts, store.Point{Node: "w", Name: metric.CPUCores, TS: ts, Value: 4},
			store.Point{Node: "w", Name: metric.CPUUtil, TS: ts, Value: 30},
			store.Point{Node: "w", Name: metric.WaveCPUCores, TS: ts, Value: 0.5},
			store.Point{Node: "w", Name: metric.WaveTPS, TS: ts, Value: 1000, Labels: map[string]string{"instance": "a"}})
	}
	pts = append(pts, store.Point{Node: "w", Name: metric.WaveTPS, TS: t0.Add(12 * time.Minute), Value: 1e300, Labels: map[string]string{"instance": "e"}},
		store.Point{Node: "w", Name: metric.WaveCPUCores, TS: t0.Add(12 * time.Minute), Value: 1e300})
	require.NoError(t, st.Write(context.Background(), pts))

	j, err := New(Options{Store: st, Now: c.Now, Algorithm: "leastload", Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	j.rebuildCurrentHour(context.Background())
	require.Equal(t, []string{"w"}, j.Incremental().NodeIDs())
	n, ok := j.inc.Node("w")
	require.True(t, ok)
	for _, s := range n.Series {
		require.Less(t, s.Max, 1e12, "%s %v: the implausible points were replayed", s.Name, s.Labels)
	}
	r := do(t, j.Handler(), "GET", "/v1/nodes/w", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = do(t, j.Handler(), "POST", "/v1/rebalance", "", bytes.NewReader([]byte(`{"waves":[{"node":"w","alive":true},{"node":"v","alive":true}],"instances":[{"id":"a","node":"w"},{"id":"e","node":"w"}]}`)))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
}

// A node id with a '/' (the metric contract allows it) is read back by its escaped id.
func TestNodeWithSlashReadBack(t *testing.T) {
	j, _ := newJudge(t, nil)
	b := metric.Batch{Node: "rack-1/wave 2", TS: t0, IntervalS: 10, Points: []metric.Point{{Name: metric.CPUUtil, Value: 20}}}
	r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b)))
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	r = do(t, j.Handler(), "GET", "/v1/nodes/rack-1%2Fwave%202", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"node":"rack-1/wave 2"`)
}

// An instance said to have moved well after the judge's clock would cool down forever:
// refused, naming it (a moved_at that is no time: TestRebalanceBadRequests).
func TestRebalanceMovedAtChecked(t *testing.T) {
	j, _ := newJudge(t, nil)
	r, _ := postRebalance(t, j, "", `{"waves":[{"node":"w","alive":true}],"instances":[{"id":"a","node":"w"},{"id":"b","node":"w","moved_at":"2999-01-01T00:00:00Z"}]}`)
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	_, msg := errorOf(t, r)
	require.Contains(t, msg, "instances[1].moved_at 2999-01-01T00:00:00Z is")
	r, _ = postRebalance(t, j, "", `{"waves":[{"node":"w","alive":true}],"instances":[{"id":"a","node":"w","moved_at":"`+t0.Add(5*time.Minute).Format(time.RFC3339)+`"}]}`)
	require.Equal(t, http.StatusOK, r.status, "5 minutes ahead: a drifting clock: %s", r.body)
}

// Every metric the placement plugins, the costs or the load model read has a range: the
// network's had none, and a net.rx_bps of -1e300 won leastload its best network score.
func TestEveryModelledMetricHasARange(t *testing.T) {
	for _, name := range []string{
		// What lbplugins reads (rawUsage, the utilisation algorithm's capacities).
		lbplugins.CPUUtil, lbplugins.MemUsedPct, lbplugins.Load1, lbplugins.NetRxBps, lbplugins.NetTxBps,
		lbplugins.WaveTPS, lbplugins.WaveInstances, lbplugins.CPUCores,
		// What the costs and the load model read.
		metric.WaveCPUCores, metric.WaveBytesPerS, metric.WaveInstanceRunning,
	} {
		r, ok := ranges[name]
		require.True(t, ok, "%s has no range", name)
		require.GreaterOrEqual(t, r.lo, 0.0, name)
		require.Greater(t, r.hi, r.lo, name)
	}
}

// A batch that carries no cpu.cores is held to the node's last ones: a wave.cpu_cores of
// 50 on a node known to have 2 was taken when the batch left its cores out.
func TestProcessOverTheNodesLastCores(t *testing.T) {
	j, _ := newJudge(t, nil)
	send := func(points ...metric.Point) response {
		return do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, metric.Batch{Node: "w", TS: t0, IntervalS: 10, Points: points})))
	}
	require.Equal(t, http.StatusAccepted, send(metric.Point{Name: metric.CPUCores, Value: 2}, metric.Point{Name: metric.WaveCPUCores, Value: 1}).status)
	r := send(metric.Point{Name: metric.WaveCPUCores, Value: 50})
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	_, msg := errorOf(t, r)
	require.Contains(t, msg, "wave.cpu_cores 50 is over twice the host's cpu.cores 2")
	require.Equal(t, http.StatusAccepted, send(metric.Point{Name: metric.WaveCPUCores, Value: 2.3}).status)
}

// manyPoints is a batch of n series and, when dup ≥ 0, series dup again at its end.
func manyPoints(n, dup int) metric.Batch {
	b := metric.Batch{Node: "w", TS: t0, IntervalS: 10}
	for i := range n {
		b.Points = append(b.Points, metric.Point{Name: fmt.Sprintf("app.m%d", i), Value: 1, Labels: map[string]string{"i": strconv.Itoa(i)}})
	}
	if dup >= 0 {
		b.Points = append(b.Points, b.Points[dup])
	}
	return b
}
