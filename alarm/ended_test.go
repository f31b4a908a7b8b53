package alarm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// running is wave.instance_running as the agent sends it: the instance's state and the
// reason it is not running are labels, so a change of state is a new series.
func running(state, reason string, v float64) metric.Point {
	return metric.Point{Name: metric.WaveInstanceRunning, Value: v,
		Labels: map[string]string{"instance": "local", "state": state, "reason": reason}}
}

var (
	down  = running("reconnecting", "source_unreachable", 0)
	up    = running("running", "", 1)
	other = metric.Point{Name: metric.WaveInstanceRunning, Value: 1, // another instance of the wave
		Labels: map[string]string{"instance": "billing", "state": "running", "reason": ""}}
)

// notRunningPolicy pages while an instance's wave.instance_running series is 0.
const notRunningPolicy = `policies:
  - name: not-running
    metric: wave.instance_running
    condition: last < 1
    severity: P1
    channels: [c]
`

// A series missing from its node's newer batch has ended: its alerts stop holding at
// that batch, not when the series goes stale five intervals later.
func TestSeriesMissingFromANewerBatchEnds(t *testing.T) {
	s10 := 10 * time.Second
	type step struct {
		dt    time.Duration
		back  time.Duration // the batch's time is this much before the clock's
		pts   []metric.Point
		state string // of the alert on the "reconnecting" series
		sent  []string
	}
	at := func(dt time.Duration, state string, pts []metric.Point, sent ...string) step {
		return step{dt: dt, pts: pts, state: state, sent: sent}
	}
	tk := func(dt time.Duration, state string, sent ...string) step {
		return step{dt: dt, state: state, sent: sent}
	}
	pts := func(p ...metric.Point) []metric.Point { return p }
	cases := []struct {
		name  string
		extra string
		steps []step
	}{
		{"the state changed: the old series' alert resolves at once", "", []step{
			at(0, "firing", pts(down), F), at(s10, "resolved", pts(up), R), tk(time.Minute, "resolved"),
		}},
		{"for: a pending alert on the old series ends without a page", "    for: 1m\n", []step{
			at(0, "pending", pts(down)), at(s10, "pending", pts(down)), at(s10, "inactive", pts(up)),
			tk(time.Minute, "inactive"), at(0, "inactive", pts(up)),
		}},
		{"keep_firing_for runs from the batch without the series", "    keep_firing_for: 30s\n", []step{
			at(0, "firing", pts(down), F), at(s10, "firing", pts(up)), tk(29*time.Second, "firing"), tk(time.Second, "resolved", R),
		}},
		{"an instance removed: its series ends with it", "", []step{
			at(0, "firing", pts(down, other, cpu(10)), F), at(s10, "resolved", pts(other, cpu(10)), R),
		}},
		// A batch without the metric at all is a collector that failed this tick (a
		// scrape of the wave timed out): that ends nothing, or a firing alert would
		// resolve and page again; the series goes stale if it stays away.
		{"a batch without the metric ends nothing", "", []step{
			at(0, "firing", pts(down, cpu(10)), F), at(s10, "firing", pts(cpu(10))), at(s10, "firing", pts(down, cpu(10))),
		}},
		{"the series comes back: its alert fires again", "", []step{
			at(0, "firing", pts(down), F), at(s10, "resolved", pts(up), R), at(s10, "firing", pts(down), F),
		}},
		{"a node that falls silent still goes stale", "", []step{
			at(0, "firing", pts(down), F), tk(50*time.Second, "firing"), tk(s10, "resolved", R),
		}},
		{"a redelivered older batch ends nothing", "", []step{
			at(0, "firing", pts(down), F), {dt: s10, back: 15 * time.Second, pts: pts(up), state: "firing"},
			at(0, "firing", pts(down)), at(s10, "resolved", pts(up), R),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, notRunningPolicy+tc.extra, nil)
			for i, s := range tc.steps {
				r.clk.Add(s.dt)
				if s.pts != nil {
					r.e.Observe(batch("wave-1", r.clk.Now().Add(-s.back), s.pts...))
				}
				r.e.Tick()
				require.Equal(t, s.state, r.state("wave-1"), "step %d: state", i)
				require.Equal(t, s.sent, r.out.take(), "step %d: notifications", i)
			}
		})
	}
}

// The shipped wave-not-running (for: 1m) on the trial's timeline: the source stopped at
// 23:37:22 and the instance ran again at 23:38:06. Its old "reconnecting" series kept
// its last 0 until it went stale, so the pending alert fired at 23:38:33 on an instance
// that had run for half a minute. Now a short outage pages nothing, and a long one
// pages once and resolves at the first batch after the recovery.
func TestShippedWaveNotRunningAfterARecovery(t *testing.T) {
	pols, err := policy.Load("../deploy/policies.yaml")
	require.NoError(t, err)
	r := newRig(t, basePolicy, func(o *EngineOptions) { o.Policies = pols })
	r.clk.Add(time.Date(2026, 11, 29, 23, 37, 2, 0, time.UTC).Sub(t0))
	// Each second a tick, and every tenth second (at :x2) the agent's batch.
	run := func(until string, p metric.Point) {
		end, err := time.Parse("15:04:05", until)
		require.NoError(t, err)
		for r.clk.Now().Format("15:04:05") < end.Format("15:04:05") {
			if r.clk.Now().Second()%10 == 2 {
				r.e.Observe(batch("dbxhost", r.clk.Now(), cpu(10), p))
			}
			r.e.Tick()
			r.clk.Add(time.Second)
		}
	}
	summaries := func() []string {
		var out []string
		for _, m := range r.out.messages() {
			for _, a := range m.Alerts {
				out = append(out, a.Status+": "+a.Annotations["summary"])
			}
		}
		return out
	}
	run("23:37:22", up)
	run("23:38:12", down) // the batches of 23:37:22 to 23:38:02
	run("23:45:00", up)
	require.Empty(t, summaries(), "an outage shorter than for: 1m pages nothing")

	run("23:47:00", down)
	require.Equal(t, []string{"firing: capture instance local on dbxhost is not running: reconnecting, source_unreachable (the error is on the wave's /status)"},
		summaries())
	run("23:47:03", up) // the batch of 23:47:02 carries the running series only
	// The running series takes the alert over (by: [instance]) and resolves it on its point.
	require.Equal(t, []string{"resolved: capture instance local on dbxhost runs again"}, summaries())
}

// An alert the log holds firing whose series ended while no process evaluated it (here
// across a restart) resolves at the node's first batch newer than the point the page
// rested on: no point of the old series will ever come to continue it.
func TestAlertWhoseSeriesEndedMeanwhileResolves(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	c := openCoord(t, dir)
	r := newRigOn(t, c, clk, notRunningPolicy, nil)
	r.e.Observe(batch("wave-1", clk.Now(), down))
	require.Equal(t, []string{F}, r.out.take())
	require.NoError(t, c.Close())

	clk.Add(time.Minute)
	c2 := openCoord(t, dir)
	t.Cleanup(func() { c2.Close() })
	r2 := newRigOn(t, c2, clk, notRunningPolicy, nil)
	r2.e.Observe(batch("wave-1", t0.Add(-10*time.Second), up)) // replayed, older than the page
	r2.e.Tick()
	require.Empty(t, r2.out.take())
	r2.e.Observe(batch("wave-1", clk.Now(), up))
	r2.e.Tick()
	require.Equal(t, []string{R}, r2.out.take())
	entries, err := r2.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.False(t, entries[0].firing())
	require.Equal(t, clk.Now(), entries[0].ResolvedTS, "the batch without the series is the resolution's evidence")
}

// The shipped wave-not-running names its alert by the instance alone (by: [instance]):
// the reason changing during one outage (the password file missing, then wrong: an
// outside trial) continues the alert, with the new reason in its summary, where it
// resolved "(series ended)" and paged again a minute later under the new reason. The
// recovery's running point resolves it. Without by, the reason is the alert's: another
// alert, each ended with its series.
func TestShippedWaveNotRunningKeepsFiringAcrossReasons(t *testing.T) {
	pols, err := policy.Load("../deploy/policies.yaml")
	require.NoError(t, err)
	for _, by := range []bool{true, false} {
		r := newRig(t, basePolicy, func(o *EngineOptions) {
			o.Policies = pols
			if !by {
				for _, p := range pols {
					if p.Name == "wave-not-running" {
						q := *p
						q.By = nil
						o.Policies = []*policy.Policy{&q}
					}
				}
			}
		})
		var statuses []string
		step := func(p metric.Point, seconds int) {
			for range seconds / 10 {
				r.e.Observe(batch("dbxhost", r.clk.Now(), p))
				r.e.Tick()
				r.clk.Add(10 * time.Second)
			}
			r.e.Sync()
			for _, m := range r.out.messages() {
				for _, a := range m.Alerts {
					if a.Labels["alertname"] == "wave-not-running" {
						statuses = append(statuses, a.Status+" "+a.Labels["reason"]+": "+a.Annotations["summary"])
					}
				}
			}
		}
		step(running("retrying", "secret_missing", 0), 120)
		step(running("reconnecting", "access_denied", 0), 120)
		step(up, 20)
		if by {
			// The running point takes the alert over and resolves it as a recovery (it read
			// "(series ended)" with the last reason: a retrial).
			require.Equal(t, []string{
				"firing : capture instance local on dbxhost is not running: retrying, secret_missing (the error is on the wave's /status)",
				"resolved : capture instance local on dbxhost runs again",
			}, statuses)
			continue
		}
		require.Equal(t, []string{
			"firing secret_missing: capture instance local on dbxhost is not running: retrying, secret_missing (the error is on the wave's /status)",
			"resolved secret_missing: capture instance local on dbxhost is not running: retrying, secret_missing (the error is on the wave's /status) (series ended)",
			"firing access_denied: capture instance local on dbxhost is not running: reconnecting, access_denied (the error is on the wave's /status)",
			"resolved access_denied: capture instance local on dbxhost is not running: reconnecting, access_denied (the error is on the wave's /status) (series ended)",
		}, statuses)
	}
}

// A resolution that no point decided (the series ended, or went silent) keeps the series'
// last, violating value; its summary says why it resolved, so a RESOLVED notice does not
// read as the violation (t16: "orders on h4-n2 lags 120s" resolved). One a point decided
// reads as before, with that point's value.
func TestResolvedByTheSeriesEndSaysSo(t *testing.T) {
	const lagPolicy = `policies:
  - name: lag
    metric: wave.lag_s
    condition: last > 60
    severity: P3
    channels: [c]
    annotations:
      summary: "{{ .Labels.instance }} lags {{ printf \"%.0f\" .Value }}s{{ if .Ended }}, its last value{{ end }}"
`
	lag := func(instance string, v float64) metric.Point {
		return metric.Point{Name: "wave.lag_s", Value: v, Labels: map[string]string{"instance": instance}}
	}
	s10 := 10 * time.Second
	cases := []struct {
		name    string
		batches [][]metric.Point // one every 10 s; nil: a tick only
		want    string
	}{
		{"a point resolves it", [][]metric.Point{{lag("orders", 120)}, {lag("orders", 5)}}, "orders lags 5s"},
		{"the series ended", [][]metric.Point{{lag("orders", 120)}, {lag("users", 5)}}, "orders lags 120s, its last value (series ended)"},
		{"the series went silent", [][]metric.Point{{lag("orders", 120)}, nil, nil, nil, nil, nil, nil}, "orders lags 120s, its last value (series went silent)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, lagPolicy, nil)
			var sent []notify.Alert
			for _, pts := range tc.batches {
				if pts != nil {
					r.e.Observe(batch("wave-1", r.clk.Now(), pts...))
				}
				r.e.Tick()
				for _, m := range r.out.messages() {
					sent = append(sent, m.Alerts...)
				}
				r.clk.Add(s10)
			}
			require.Len(t, sent, 2)
			require.Equal(t, notify.StatusResolved, sent[1].Status)
			require.Equal(t, tc.want, sent[1].Annotations["summary"])
			views := r.e.Alerts()
			require.Len(t, views, 1)
			require.Equal(t, tc.want, views[0].Annotations["summary"], "GET /v1/alerts says the same")
		})
	}
}

// An alert the log holds firing whose metric stopped altogether while no process
// evaluated it (the partition moved, or the alarm restarted, before the series went
// stale where it fired): the node's batches go on without the metric at all, which says
// nothing in any one batch, but after StaleIntervals of them the series went silent and
// the alert resolves, as it would have where it fired. Before, it stayed firing in the
// log for good and the page's resolution was never sent.
func TestRestoredAlertWhoseMetricStoppedGoesStale(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	c := openCoord(t, dir)
	r := newRigOn(t, c, clk, basePolicy, nil)
	r.e.Observe(batch("wave-1", clk.Now(), cpu(95)))
	require.Equal(t, []string{F}, r.out.take())
	require.NoError(t, c.Close()) // stopped (or the partition moved) right after

	c2 := openCoord(t, dir)
	t.Cleanup(func() { c2.Close() })
	r2 := newRigOn(t, c2, clk, basePolicy, nil)
	other := metric.Point{Name: "mem.used_pct", Value: 40}
	var got []string
	for i := 1; i <= 8; i++ {
		clk.Add(10 * time.Second) // the batches' interval_s
		r2.e.Observe(batch("wave-1", clk.Now(), other))
		r2.e.Tick()
		for _, s := range r2.out.take() {
			got = append(got, fmt.Sprintf("%s after %d batches", s, i))
		}
	}
	require.Equal(t, []string{R + " after 7 batches"}, got, "stale once 5 intervals passed since the first batch without the metric")
	entries, err := r2.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.False(t, entries[0].firing())
	require.Contains(t, r2.e.Alerts()[0].Annotations["summary"], "(series went silent)")
}
