package judge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm"
	alarmapi "github.com/binlake/binlake/alarm/api"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
)

// instRunning is one wave.instance_running point, as the agent's wave collector sends it.
func instRunning(inst, state, reason string, v float64) metric.Point {
	l := map[string]string{"instance": inst, "state": state}
	if reason != "" {
		l["reason"] = reason
	}
	return metric.Point{Name: metric.WaveInstanceRunning, Value: v, Labels: l}
}

// statusBatch is a wave node's batch every interval: its load, its instance count and the
// state of each instance it leads.
func statusBatch(node string, ts time.Time, interval time.Duration, states ...metric.Point) metric.Batch {
	b := metric.Batch{Node: node, TS: ts, IntervalS: interval.Seconds(), Points: []metric.Point{
		{Name: metric.CPUUtil, Value: 20}, {Name: metric.NetRxBps, Value: 1500}, {Name: metric.NetTxBps, Value: 2500},
		{Name: metric.WaveInstances, Value: float64(len(states))},
	}}
	return metric.Batch{Node: b.Node, TS: b.TS, IntervalS: b.IntervalS, Points: append(b.Points, states...)}
}

func statusPageOf(t *testing.T, j *Judge) string {
	t.Helper()
	r := do(t, j.Handler(), "GET", "/", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	return string(r.body)
}

// The status page an operator opens in `binlake up`: the alarm's firing alerts, every
// wave instance with its state and error, counts as integers, the network columns
// named, and a reload every ingest interval; what the alarm and the wave say is escaped.
func TestStatusPageShowsAlertsAndInstances(t *testing.T) {
	since := t0.Add(-90 * time.Second)
	j, c := newJudge(t, func(o *Options) {
		o.Status = StatusOptions{
			AlarmURL: "http://127.0.0.1:8081",
			Alerts: func(context.Context) ([]alarmapi.Alert, error) {
				return []alarmapi.Alert{
					{State: alarmapi.StateFiring, Value: 97, FiringSince: &since, Notifications: 2,
						Labels:      map[string]string{"alertname": "high-cpu", "severity": "P2", "node": "wave-1"},
						Annotations: map[string]string{"summary": `wave-1 <script>alert(1)</script> at 97`}},
					{State: alarmapi.StatePending, Labels: map[string]string{"alertname": "lag-pending", "node": "wave-1"}},
				}, nil
			},
			Instances: func(context.Context) ([]InstanceState, error) {
				return []InstanceState{
					{Node: "wave-2", Instance: "users", State: "error", Reason: "binlog_purged",
						Error: `binlog mysql-bin.000007 purged <img src=x onerror=alert(1)>`, Since: since},
				}, nil
			},
		}
	})
	require.NoError(t, j.Ingest(statusBatch("wave-1", c.Now(), 2*time.Second,
		instRunning("orders", "running", "", 1), instRunning("billing", "reconnecting", "source_unreachable", 0),
		instRunning("audit", "running", "", 1), instRunning("stock", "running", "", 1)), "test"))
	require.NoError(t, j.Ingest(statusBatch("wave-2", c.Now(), 5*time.Second, instRunning("users", "retrying", "error", 0)), "test"))
	c.Add(time.Second)
	p := statusPageOf(t, j)

	// The firing alert, not the pending one; the summary escaped.
	require.Contains(t, p, `<h2>Firing alerts (1)</h2>`)
	require.Contains(t, p, `<tr><td class="err">high-cpu</td><td>P2</td><td>wave-1</td><td>wave-1 &lt;script&gt;alert(1)&lt;/script&gt; at 97</td><td>97.0</td><td>1m31s ago</td><td>2</td></tr>`)
	require.NotContains(t, p, "lag-pending")
	// Every instance, in error or not; the reported one with its reason, the wave's own
	// (wave-2, from Instances) with its error text, escaped.
	require.Contains(t, p, `<h2>Wave instances (5)</h2>`)
	require.Contains(t, p, `<tr><td>wave-1</td><td>billing</td><td class="err">reconnecting</td><td>source_unreachable</td><td><small>see the wave's /status</small></td><td>–</td><td>1s ago</td></tr>`)
	require.Contains(t, p, `<tr><td>wave-1</td><td>orders</td><td class="live">running</td><td></td><td></td>`)
	require.Contains(t, p, `<tr><td>wave-2</td><td>users</td><td class="err">error</td><td>binlog_purged</td><td><span class="err">binlog mysql-bin.000007 purged &lt;img src=x onerror=alert(1)&gt;</span></td><td>1m31s ago</td><td>0s ago</td></tr>`)
	require.NotContains(t, p, "retrying", "the wave's own state replaces the reported one")
	require.NotContains(t, p, "<script")
	require.NotContains(t, p, "<img")
	// Counts as integers, receive and send in their own named columns.
	require.Contains(t, p, `<th>net receive B/s</th><th>net send B/s</th>`)
	require.Contains(t, p, `<td>1500.0</td><td>2500.0</td><td>–</td><td>4</td></tr>`)
	require.Contains(t, p, `<td>1500.0</td><td>2500.0</td><td>–</td><td>1</td></tr>`)
	// Reloads every ingest interval: the shortest the nodes report in.
	require.Contains(t, p, `<meta http-equiv="refresh" content="2">`)
	require.Contains(t, p, `alarm: <a href="http://127.0.0.1:8081">http://127.0.0.1:8081</a>`)

	// wave-1's next batch: billing is running again, audit and stock went elsewhere.
	require.NoError(t, j.Ingest(statusBatch("wave-1", c.Now(), 2*time.Second,
		instRunning("orders", "running", "", 1), instRunning("billing", "running", "", 1)), "test"))
	p = statusPageOf(t, j)
	require.Contains(t, p, `<tr><td>wave-1</td><td>billing</td><td class="live">running</td>`)
	require.NotContains(t, p, "audit")
	require.NotContains(t, p, "reconnecting")
}

// Without an alarm or a wave connected the page says so; an alarm or wave that fails is
// named with its error, and the rest of the page is still there.
func TestStatusPageSourcesDownOrAbsent(t *testing.T) {
	j, c := newJudge(t, nil)
	p := statusPageOf(t, j)
	require.Contains(t, p, `<p id="alerts">No alarm is connected to this page.</p>`)
	require.Contains(t, p, `<p>No wave has reported an instance.</p>`)
	require.Contains(t, p, `<meta http-equiv="refresh" content="10">`, "the agent's default interval before any node reports")

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"internal","message":"<boom>"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	j, _ = newJudge(t, func(o *Options) {
		o.Status.Alerts = AlarmAlerts(down.URL, nil)
		o.Status.Instances = func(context.Context) ([]InstanceState, error) { return nil, errors.New("wave stopped") }
	})
	require.NoError(t, j.Ingest(statusBatch("wave-1", c.Now(), 30*time.Second, instRunning("orders", "error", "access_denied", 0)), "test"))
	p = statusPageOf(t, j)
	require.Contains(t, p, `<p id="alerts" class="err">The alarm did not answer: GET `+down.URL+`/v1/alerts?state=firing: 500 Internal Server Error: {&#34;error&#34;:{&#34;code&#34;:&#34;internal&#34;,&#34;message&#34;:&#34;&lt;boom&gt;&#34;}}</p>`)
	require.Contains(t, p, `<p class="err">The wave did not answer: wave stopped</p>`)
	require.Contains(t, p, `<td>wave-1</td><td>orders</td><td class="err">error</td><td>access_denied</td>`, "the reported states still show")
	require.Contains(t, p, `<meta http-equiv="refresh" content="30">`)

	// An alarm that does not answer in time does not hold the page.
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(hang) })
	j, _ = newJudge(t, func(o *Options) { o.Status.Alerts = AlarmAlerts(slow.URL, nil) })
	start := time.Now()
	p = statusPageOf(t, j)
	require.Less(t, time.Since(start), statusFetchTimeout+5*time.Second)
	require.Contains(t, p, "The alarm did not answer: Get &#34;"+slow.URL+"/v1/alerts?state=firing&#34;: context deadline exceeded")
}

// The distributed shape: the judge reads a real alarm's API, and the page shows the alert
// the alarm fired.
func TestStatusPageReadsTheAlarmAPI(t *testing.T) {
	co, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	require.NoError(t, err)
	t.Cleanup(func() { co.Close() })
	pols, err := policy.Parse(strings.NewReader(`policies:
  - name: high-cpu
    metric: cpu.util
    condition: last > 90
    severity: P2
    channels: [log]
    annotations:
      summary: "{{ .Node }} at {{ .Value }}"
`), "test.yaml")
	require.NoError(t, err)
	al, err := alarm.New(alarm.Options{Policies: pols, Channels: map[string]notify.Notifier{"log": notify.Log{L: quiet}}, Coordinator: co, Logger: quiet})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- al.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	srv := httptest.NewServer(al.Handler())
	t.Cleanup(srv.Close)

	data, err := metric.Encode(metric.Batch{Node: "wave-7", TS: time.Now().UTC(), IntervalS: 10, Points: []metric.Point{{Name: metric.CPUUtil, Value: 97}}})
	require.NoError(t, err)
	require.NoError(t, al.ObserveRaw(data))
	require.Eventually(t, func() bool { return len(al.Engine().Firing()) == 1 }, 10*time.Second, 10*time.Millisecond)

	j, _ := newJudge(t, func(o *Options) { o.Status = StatusOptions{Alerts: AlarmAlerts(srv.URL+"/", nil), AlarmURL: srv.URL} })
	p := statusPageOf(t, j)
	require.Contains(t, p, `<h2>Firing alerts (1)</h2>`)
	require.Contains(t, p, `<tr><td class="err">high-cpu</td><td>P2</td><td>wave-7</td><td>wave-7 at 97</td><td>97.0</td>`)
}

func TestRefreshFollowsTheIngestInterval(t *testing.T) {
	nodes := func(ds ...time.Duration) []analysis.Node {
		var out []analysis.Node
		for _, d := range ds {
			out = append(out, analysis.Node{Node: d.String(), Interval: d})
		}
		return out
	}
	for _, tc := range []struct {
		nodes []analysis.Node
		want  time.Duration
	}{
		{nil, 10 * time.Second},
		{nodes(2 * time.Second), 2 * time.Second},
		{nodes(30*time.Second, 5*time.Second, 0), 5 * time.Second},
		{nodes(1500 * time.Millisecond), 2 * time.Second},
		{nodes(100 * time.Millisecond), time.Second},
		{nodes(5 * time.Minute), time.Minute},
	} {
		require.Equal(t, tc.want, refreshEvery(tc.nodes), "%v", tc.nodes)
	}
}

// A batch without wave.* points (a host without a wave, a failed scrape) keeps the node's
// instance states; a batch from the wave replaces them; a replayed older one does not.
func TestInstanceStatesFollowTheLastWaveBatch(t *testing.T) {
	var s instanceStates
	s.observe(statusBatch("w", t0, time.Second, instRunning("a", "error", "fenced", 0)), t0)
	s.observe(metric.Batch{Node: "w", TS: t0.Add(time.Second), Points: []metric.Point{{Name: metric.CPUUtil, Value: 1}}}, t0.Add(time.Second))
	require.Equal(t, []InstanceState{{Node: "w", Instance: "a", State: "error", Reason: "fenced", AsOf: t0}}, s.list([]string{"w"}))
	s.observe(statusBatch("w", t0.Add(2*time.Second), time.Second), t0.Add(2*time.Second))
	require.Empty(t, s.list([]string{"w"}), "the wave leads no instance now")
	s.observe(statusBatch("w", t0, time.Second, instRunning("a", "error", "fenced", 0)), t0)
	require.Empty(t, s.list([]string{"w"}), "a replayed batch is older")
	s.observe(statusBatch("w", t0.Add(3*time.Second), time.Second, instRunning("b", "", "", 1)), t0.Add(3*time.Second))
	require.Equal(t, "running", s.list([]string{"w"})[0].State, "no state label: the value says")
	require.Empty(t, s.list(nil), "a node the judge forgot is forgotten")
	require.Empty(t, s.list([]string{"w"}))
}
