package alarm

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/metric"
)

var t0 = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

// clock is the injected time of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// outbox records what the engine sends.
// take and messages wait for the engine's writer, then count as delivery: they report it
// to the engine.
type outbox struct {
	mu   sync.Mutex
	msgs []notify.Message
	e    *Engine
}

// deliver reports ms delivered and waits for the engine to record it.
func (o *outbox) deliver(ms []notify.Message) {
	if o.e == nil {
		return
	}
	for _, m := range ms {
		o.e.Delivered(m, nil)
	}
	o.e.Sync()
}

// sync waits until the engine wrote and sent what it decided so far.
func (o *outbox) sync() {
	if o.e != nil {
		o.e.Sync()
	}
}

func (o *outbox) send(m notify.Message) { o.mu.Lock(); o.msgs = append(o.msgs, m); o.mu.Unlock() }

// take returns the statuses of the alerts sent since the last call ("firing wave-1").
func (o *outbox) take() []string {
	var out []string
	for _, m := range o.messages() {
		for _, a := range m.Alerts {
			out = append(out, a.Status+" "+a.Labels["node"])
		}
	}
	return out
}

func (o *outbox) messages() []notify.Message {
	o.sync()
	o.mu.Lock()
	m := o.msgs
	o.msgs = nil
	o.mu.Unlock()
	o.deliver(m)
	return m
}

func parsePolicies(t testing.TB, yaml string) []*policy.Policy {
	t.Helper()
	ps, err := policy.Parse(strings.NewReader(yaml), "test.yaml")
	require.NoError(t, err)
	return ps
}

func openCoord(t testing.TB, dir string) coord.Coordinator {
	t.Helper()
	c, err := single.New(single.Options{Path: filepath.Join(dir, "coord.json")})
	require.NoError(t, err)
	return c
}

type rig struct {
	e   *Engine
	clk *clock
	out *outbox
	c   coord.Coordinator
	sil *Silences
}

func newRig(t testing.TB, yaml string, mod func(*EngineOptions)) *rig {
	t.Helper()
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	return newRigOn(t, c, &clock{t: t0}, yaml, mod)
}

func newRigOn(t testing.TB, c coord.Coordinator, clk *clock, yaml string, mod func(*EngineOptions)) *rig {
	t.Helper()
	r := &rig{clk: clk, out: &outbox{}, c: c}
	r.sil = NewSilences(c, "", clk.Now)
	o := EngineOptions{Policies: parsePolicies(t, yaml), Log: &CoordLog{C: c}, Silences: r.sil,
		Send: r.out.send, Now: clk.Now, Logger: quiet}
	if mod != nil {
		mod(&o)
	}
	r.e = NewEngine(o)
	r.out.e = r.e
	_, err := r.e.Restore(context.Background())
	require.NoError(t, err)
	return r
}

func batch(node string, at time.Time, pts ...metric.Point) metric.Batch {
	return metric.Batch{Node: node, TS: at, IntervalS: 10, Points: pts}
}

func cpu(v float64) metric.Point { return metric.Point{Name: "cpu.util", Value: v} }

// observe sends one cpu.util point of node at the rig's time, then ticks, and waits for
// the notification log writes and notifications that followed.
func (r *rig) observe(node string, v float64) {
	r.e.Observe(batch(node, r.clk.Now(), cpu(v)))
	r.e.Tick()
	r.e.Sync()
}

func (r *rig) state(node string) string {
	for _, a := range r.e.Alerts() {
		if a.Labels["node"] == node {
			return a.State
		}
	}
	return "inactive"
}

const basePolicy = `policies:
  - name: cpu
    metric: cpu.util
    condition: last > 90
    severity: P2
    channels: [c]
    annotations:
      summary: "{{ .Node }} at {{ .Value }}"
`

// step is one moment of a state test: advance the clock, maybe observe a point, tick,
// then check the state and the notifications sent.
type step struct {
	dt    time.Duration
	v     float64
	tick  bool // no point, only the timers
	state string
	sent  []string
}

func pt(dt time.Duration, v float64, state string, sent ...string) step {
	return step{dt: dt, v: v, state: state, sent: sent}
}

func tick(dt time.Duration, state string, sent ...string) step {
	return step{dt: dt, tick: true, state: state, sent: sent}
}

const (
	F = "firing wave-1"
	R = "resolved wave-1"
)

func TestStateTransitions(t *testing.T) {
	s10 := 10 * time.Second
	cases := []struct {
		name  string
		extra string // policy fields added to basePolicy
		steps []step
	}{
		{"fires at once and resolves", "", []step{
			pt(0, 50, "inactive"), pt(s10, 95, "firing", F), pt(s10, 96, "firing"), pt(s10, 10, "resolved", R), pt(s10, 20, "resolved"),
		}},
		{"for: pending until it held long enough", "    for: 30s\n", []step{
			pt(0, 95, "pending"), pt(s10, 95, "pending"), pt(s10, 95, "pending"), tick(s10, "firing", F), pt(s10, 10, "resolved", R),
		}},
		{"for: pending cleared without a page", "    for: 30s\n", []step{
			pt(0, 95, "pending"), pt(s10, 95, "pending"), pt(s10, 10, "inactive"), pt(s10, 95, "pending"), tick(25*time.Second, "pending"), tick(5*time.Second, "firing", F),
		}},
		{"flapping without keep_firing_for pages every flap", "", []step{
			pt(0, 95, "firing", F), pt(s10, 10, "resolved", R), pt(s10, 95, "firing", F), pt(s10, 10, "resolved", R), pt(s10, 95, "firing", F),
		}},
		{"keep_firing_for absorbs flapping", "    keep_firing_for: 1m\n", []step{
			pt(0, 95, "firing", F), pt(s10, 10, "firing"), pt(s10, 95, "firing"), pt(s10, 10, "firing"), pt(s10, 10, "firing"),
			tick(40*time.Second, "firing"), tick(10*time.Second, "resolved", R),
		}},
		{"repeat interval", "    repeat_interval: 1m\n", []step{
			pt(0, 95, "firing", F), pt(30*time.Second, 95, "firing"), pt(30*time.Second, 95, "firing", F),
			pt(30*time.Second, 95, "firing"), tick(20*time.Second, "firing"), tick(10*time.Second, "firing", F), pt(s10, 10, "resolved", R),
		}},
		{"max_notifications caps the repeats, not the resolution", "    repeat_interval: 1m\n    max_notifications: 2\n", []step{
			pt(0, 95, "firing", F), pt(time.Minute, 95, "firing", F), pt(time.Minute, 95, "firing"), pt(time.Minute, 95, "firing"), pt(s10, 10, "resolved", R),
		}},
		{"a silent series goes stale and resolves", "", []step{
			pt(0, 95, "firing", F), tick(50*time.Second, "firing"), tick(s10, "resolved", R),
		}},
		{"resolved is listed for a while, then forgotten", "", []step{
			pt(0, 95, "firing", F), pt(s10, 10, "resolved", R), pt(14*time.Minute, 10, "resolved"), pt(time.Minute, 10, "inactive"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, basePolicy+tc.extra, nil)
			for i, s := range tc.steps {
				r.clk.Add(s.dt)
				if s.tick {
					r.e.Tick()
				} else {
					r.observe("wave-1", s.v)
				}
				require.Equal(t, s.state, r.state("wave-1"), "step %d: state", i)
				require.Equal(t, s.sent, r.out.take(), "step %d: notifications", i)
			}
		})
	}
}

// TestPendingIsNotNotified: an alert pending again after an episode that paged reads
// as not notified: it showed the last episode's lastNotified and count (outside trial).
func TestPendingIsNotNotified(t *testing.T) {
	r := newRig(t, basePolicy+"    for: 30s\n", nil)
	for _, v := range []float64{95, 95, 95, 95, 10, 95} {
		r.clk.Add(10 * time.Second)
		r.observe("wave-1", v)
	}
	require.Equal(t, []string{F, R}, r.out.take())
	views := r.e.Alerts()
	require.Len(t, views, 1)
	require.Equal(t, "pending", views[0].State)
	require.Zero(t, views[0].Notifications)
	require.Nil(t, views[0].LastNotified)
}

func TestConditionFunctionsDriveAlerts(t *testing.T) {
	// Each function through the engine: the series, and the state after its last point.
	cases := []struct {
		cond  string
		vs    []float64
		state string
	}{
		{"all(#3) > 90", []float64{95, 95, 10, 95, 95}, "inactive"},
		{"all(#3) > 90", []float64{10, 95, 95, 95}, "firing"},
		{"avg(#2) > 90", []float64{100, 85}, "firing"},
		{"max(#2) < 5", []float64{1, 6}, "inactive"},
		{"min(#2) > 50", []float64{60, 70}, "firing"},
		{"sum(#3) >= 30", []float64{10, 10, 10}, "firing"},
		{"diff(#1) > 20", []float64{10, 40}, "firing"},
		{"pdiff(#1) < -50", []float64{100, 40}, "firing"},
		{"avg_over(15s) > 50", []float64{100, 100, 0, 0}, "resolved"},
		{"avg_over(25s) > 50", []float64{100, 100, 0}, "firing"},
		{"last(#2) > 50", []float64{60, 0}, "firing"},
		{"lookup(#2,3) > 90", []float64{95, 10, 95}, "firing"},
		{"lookup(#2,3) > 90", []float64{95, 10, 10, 95}, "inactive"},
		{"stddev(#3) = 3", []float64{10, 11, 9, 10, 30}, "firing"},
		{"stddev(#3) = 3", []float64{10, 11, 9, 10, 11}, "inactive"},
		{"stddev(#3) = 3", []float64{10, 10, 30}, "inactive"}, // 3 points: too few to decide
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %v", tc.cond, tc.vs), func(t *testing.T) {
			r := newRig(t, strings.Replace(basePolicy, "last > 90", tc.cond, 1), nil)
			for _, v := range tc.vs {
				r.clk.Add(10 * time.Second)
				r.observe("wave-1", v)
			}
			require.Equal(t, tc.state, r.state("wave-1"))
		})
	}
}

func TestNodata(t *testing.T) {
	r := newRig(t, `policies:
  - name: agent-dead
    nodata: 3
    severity: P0
    channels: [c]
    annotations: {summary: "{{ .Node }} silent for {{ .Value }}s"}
`, nil)
	r.e.Observe(batch("wave-1", r.clk.Now(), cpu(1)))
	r.e.Observe(batch("wave-2", r.clk.Now(), cpu(1)))
	r.clk.Add(20 * time.Second)
	r.e.Observe(batch("wave-2", r.clk.Now(), cpu(1)))
	r.e.Tick()
	require.Empty(t, r.out.take())
	r.clk.Add(11 * time.Second) // wave-1: 31 s > 3 × 10 s
	r.e.Tick()
	msgs := r.out.messages()
	require.Len(t, msgs, 1)
	require.Equal(t, "wave-1", msgs[0].Alerts[0].Labels["node"])
	require.Equal(t, "nodata", msgs[0].Alerts[0].Labels["reason"])
	require.Equal(t, "wave-1 silent for 31s", msgs[0].Alerts[0].Annotations["summary"])
	require.Equal(t, "firing", r.state("wave-1"))
	require.Equal(t, "inactive", r.state("wave-2"))
	r.clk.Add(time.Second)
	r.e.Observe(batch("wave-1", r.clk.Now(), cpu(1)))
	require.Equal(t, []string{R}, r.out.take())
}

// A resolved alert keeps the value it resolved with, in its notice and in GET
// /v1/alerts for as long as it is listed; a resolved nodata alert's value is how long
// its node was silent.
func TestResolvedAlertKeepsItsValue(t *testing.T) {
	const nodata = `policies:
  - name: agent-dead
    nodata: 3
    severity: P0
    channels: [c]
    annotations: {summary: "{{ .Node }} sent no metrics for {{ .Value }}s"}
`
	type point struct{ sec, v float64 }
	cases := []struct {
		name, yaml string
		// wave-1's cpu.util points until the alert resolved (ticks every second between);
		// after them, a point of value `after` every 10 s for 12 minutes
		points  []point
		after   float64
		summary string // of the resolved notice, and in /v1/alerts at the end
	}{
		{"a series: its value when it resolved", basePolicy, []point{{0, 95}, {10, 95}, {20, 70.3}}, 45.4,
			"wave-1 at 70.3"},
		{"nodata: how long the node was silent", nodata, []point{{0, 10}, {47, 10}}, 10,
			"wave-1 sent no metrics for 47s"},
		{"nodata with keep_firing_for: the silence, not the time since", nodata + "    keep_firing_for: 30s\n",
			[]point{{0, 10}, {47, 10}, {57, 10}, {67, 10}, {77, 10}}, 10, "wave-1 sent no metrics for 47s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.yaml, nil)
			send := func(p point) (resolved []string) {
				for r.clk.Now().Before(t0.Add(time.Duration(p.sec) * time.Second)) {
					r.clk.Add(time.Second)
					r.e.Tick()
				}
				r.e.Observe(batch("wave-1", r.clk.Now(), cpu(p.v)))
				r.e.Tick()
				for _, m := range r.out.messages() {
					for _, a := range m.Alerts {
						if a.Status == notify.StatusResolved {
							resolved = append(resolved, a.Annotations["summary"])
						}
					}
				}
				return resolved
			}
			var resolved []string
			for _, p := range tc.points {
				resolved = append(resolved, send(p)...)
			}
			require.Equal(t, []string{tc.summary}, resolved)
			last := tc.points[len(tc.points)-1].sec
			for sec := last + 10; sec <= last+720; sec += 10 {
				require.Empty(t, send(point{sec, tc.after}))
			}
			views := r.e.Alerts()
			require.Len(t, views, 1)
			require.Equal(t, "resolved", views[0].State)
			require.Equal(t, tc.summary, views[0].Annotations["summary"])
		})
	}
}

func TestSilence(t *testing.T) {
	// Series never go stale here: the test jumps minutes without points.
	r := newRig(t, basePolicy+"    repeat_interval: 1h\n", func(o *EngineOptions) { o.StaleIntervals = 1000 })
	ctx := context.Background()
	s, err := r.sil.Create(ctx, Silence{Matchers: []Matcher{{Name: "node", Value: "wave-[12]", IsRegex: true}},
		EndsAt: t0.Add(10 * time.Minute), CreatedBy: "test"})
	require.NoError(t, err)
	r.observe("wave-1", 95)
	r.observe("wave-3", 95)
	require.Equal(t, []string{"firing wave-3"}, r.out.take(), "wave-1 is silenced")
	require.Equal(t, "firing", r.state("wave-1"), "a silenced alert still fires")
	var silencedBy []string
	for _, a := range r.e.Alerts() {
		if a.Labels["node"] == "wave-1" {
			silencedBy = a.SilencedBy
		}
	}
	require.Equal(t, []string{s.ID}, silencedBy)
	// The silence ends: the alert, never sent, goes out at the next tick.
	r.clk.Add(10 * time.Minute)
	r.e.Tick()
	require.Equal(t, []string{F}, r.out.take())

	// Deleting a silence unmutes at once.
	s2, err := r.sil.Create(ctx, Silence{Matchers: []Matcher{{Name: "alertname", Value: "cpu"}}, EndsAt: r.clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	r.clk.Add(time.Second)
	r.observe("wave-2", 95)
	require.Empty(t, r.out.take())
	require.NoError(t, r.sil.Delete(ctx, s2.ID))
	require.ErrorIs(t, r.sil.Delete(ctx, s2.ID), ErrSilenceNotFound)
	r.e.Tick()
	require.Equal(t, []string{"firing wave-2"}, r.out.take())
	// An alert silenced after its page still has its resolution told to the channels
	// the page reached, or a pager keeps the incident open for good (an outside trial:
	// a silence posted a few seconds after a page left 1 page and 0 resolves); one
	// silenced before any page tells nothing, having paged nothing.
	_, err = r.sil.Create(ctx, Silence{Matchers: []Matcher{{Name: "node", Value: "wave-[34]", IsRegex: true}}, EndsAt: r.clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	r.clk.Add(time.Second)
	r.observe("wave-4", 95)
	require.Empty(t, r.out.take(), "wave-4 is silenced before its page")
	r.clk.Add(time.Second)
	r.observe("wave-3", 10)
	r.observe("wave-4", 10)
	require.Equal(t, "resolved", r.state("wave-3"))
	require.Equal(t, "resolved", r.state("wave-4"))
	require.Equal(t, []string{"resolved wave-3"}, r.out.take())
}

// A silenced alert counts one suppression per notification it would have sent (the first,
// then one per repeat interval), not one per evaluation tick (issue 18, item 8).
func TestSilencedCounter(t *testing.T) {
	var suppressed []string
	r := newRig(t, basePolicy+"    repeat_interval: 1h\n", func(o *EngineOptions) {
		o.StaleIntervals = 1000
		o.OnSuppressed = func(reason string) { suppressed = append(suppressed, reason) }
	})
	_, err := r.sil.Create(context.Background(), Silence{Matchers: []Matcher{{Name: "node", Value: "wave-1"}},
		EndsAt: t0.Add(3 * time.Hour), CreatedBy: "test"})
	require.NoError(t, err)
	r.observe("wave-1", 95)
	for range 30 { // half a minute of evaluation ticks
		r.clk.Add(time.Second)
		r.e.Tick()
	}
	require.Equal(t, []string{"silenced"}, suppressed, "one notification was due")
	r.clk.Add(time.Hour)
	r.e.Tick()
	r.e.Tick()
	require.Equal(t, []string{"silenced", "silenced"}, suppressed, "and its repeat an hour later")
	require.Empty(t, r.out.take())
}

func TestSilenceValidation(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	f := false
	bad := []Silence{
		{EndsAt: t0.Add(time.Hour)},
		{Matchers: []Matcher{{Name: "node", Value: ""}}, EndsAt: t0.Add(time.Hour)},
		{Matchers: []Matcher{{Name: "node", Value: "x", IsEqual: &f}}, EndsAt: t0.Add(time.Hour)},
		{Matchers: []Matcher{{Name: "node", Value: ".*", IsRegex: true}}, EndsAt: t0.Add(time.Hour)},
		{Matchers: []Matcher{{Name: "node", Value: "(", IsRegex: true}}, EndsAt: t0.Add(time.Hour)},
		{Matchers: []Matcher{{Name: "no de", Value: "x"}}, EndsAt: t0.Add(time.Hour)},
		{Matchers: []Matcher{{Name: "node", Value: "x"}}},
		{Matchers: []Matcher{{Name: "node", Value: "x"}}, StartsAt: t0, EndsAt: t0},
	}
	for i, s := range bad {
		_, err := r.sil.Create(context.Background(), s)
		require.ErrorIs(t, err, ErrInvalidSilence, "case %d", i)
	}
	// A silence that has ended would silence nothing (and the listing leaves it out), and
	// one past the year 9999 could not be stored: both refused, saying why.
	node := []Matcher{{Name: "node", Value: "x"}}
	for want, s := range map[string]Silence{
		"endsAt 2026-11-29T13:00:00Z has passed": {Matchers: node, StartsAt: t0.Add(-2 * time.Hour), EndsAt: t0.Add(-time.Hour)},
		"endsAt is past the year 9999 (10000)":   {Matchers: node, EndsAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"endsAt (or duration) is required":       {Matchers: node},
	} {
		_, err := r.sil.Create(context.Background(), s)
		require.ErrorIs(t, err, ErrInvalidSilence)
		require.ErrorContains(t, err, want)
	}
	require.Empty(t, r.sil.List())
}

// inhibitingPolicies are a P0 and a P3 on the same metric: the P0, firing on a node,
// inhibits the P3's pages there.
const inhibitingPolicies = `policies:
  - name: cpu-critical
    metric: cpu.util
    condition: last > 95
    severity: P0
    channels: [c]
  - name: cpu-high
    metric: cpu.util
    condition: last > 80
    severity: P3
    channels: [c]
`

func TestInhibition(t *testing.T) {
	two := inhibitingPolicies
	names := func(ms []notify.Message) []string {
		var out []string
		for _, m := range ms {
			for _, a := range m.Alerts {
				out = append(out, a.Status+" "+a.Labels["alertname"]+" "+a.Labels["node"])
			}
		}
		return out
	}
	t.Run("enabled", func(t *testing.T) {
		r := newRig(t, two, func(o *EngineOptions) { o.Inhibition.Enabled = true })
		r.observe("wave-1", 99)
		r.observe("wave-2", 85)
		require.Equal(t, []string{"firing cpu-critical wave-1", "firing cpu-high wave-2"}, names(r.out.messages()),
			"the P3 on wave-1 is inhibited by its P0; wave-2 has no P0")
		require.Equal(t, "firing", r.e.Alerts()[1].State)
		// The P0 resolves while the P3 still holds: the P3 is no longer inhibited.
		r.clk.Add(10 * time.Second)
		r.observe("wave-1", 85)
		require.Equal(t, []string{"resolved cpu-critical wave-1", "firing cpu-high wave-1"}, names(r.out.messages()))
	})
	t.Run("disabled", func(t *testing.T) {
		r := newRig(t, two, nil)
		r.observe("wave-1", 99)
		require.ElementsMatch(t, []string{"firing cpu-critical wave-1", "firing cpu-high wave-1"}, names(r.out.messages()))
	})
}

// TestNotificationOrder pins the order of the messages of one evaluation: groups that only
// resolve first, then groups that fire, each by group key ("policy/severity").
func TestNotificationOrder(t *testing.T) {
	three := `policies:
  - name: c-mem
    metric: cpu.util
    condition: last > 50
    severity: P2
    channels: [c]
  - name: a-cpu
    metric: cpu.util
    condition: last > 70
    severity: P2
    channels: [c]
  - name: b-cpu
    metric: cpu.util
    condition: last < 60
    severity: P1
    channels: [c]
`
	keys := func(ms []notify.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.GroupKey+" "+m.Alerts[0].Status)
		}
		return out
	}
	for i := 0; i < 20; i++ { // map iteration differs run to run; the order must not
		r := newRig(t, three, nil)
		r.observe("wave-1", 80) // fires a-cpu and c-mem
		require.Equal(t, []string{"a-cpu/P2 firing", "c-mem/P2 firing"}, keys(r.out.messages()))
		r.clk.Add(10 * time.Second)
		r.observe("wave-1", 55) // a-cpu resolves, b-cpu fires, c-mem holds
		require.Equal(t, []string{"a-cpu/P2 resolved", "b-cpu/P1 firing"}, keys(r.out.messages()))
		r.clk.Add(10 * time.Second)
		r.observe("wave-1", 10) // b-cpu holds, c-mem resolves: resolved comes first
		require.Equal(t, []string{"c-mem/P2 resolved"}, keys(r.out.messages()))
		r.clk.Add(10 * time.Second)
		r.observe("wave-1", 65) // b-cpu resolves, c-mem fires again
		require.Equal(t, []string{"b-cpu/P1 resolved", "c-mem/P2 firing"}, keys(r.out.messages()))
	}
}

func TestGroupWait(t *testing.T) {
	r := newRig(t, basePolicy, func(o *EngineOptions) { o.GroupWait = 30 * time.Second })
	r.observe("wave-1", 95)
	r.clk.Add(10 * time.Second)
	r.observe("wave-2", 95)
	require.Empty(t, r.out.take(), "the group waits")
	r.clk.Add(20 * time.Second)
	r.e.Tick()
	msgs := r.out.messages()
	require.Len(t, msgs, 1, "one message for the group")
	require.Equal(t, "cpu/P2", msgs[0].GroupKey)
	require.Len(t, msgs[0].Alerts, 2)
	require.Equal(t, "wave-1", msgs[0].Alerts[0].Labels["node"])
	require.Equal(t, "wave-2", msgs[0].Alerts[1].Labels["node"])
	require.Equal(t, "wave-1 at 95", msgs[0].Alerts[0].Annotations["summary"])
}

func TestLabelsSelectSeries(t *testing.T) {
	r := newRig(t, `policies:
  - name: lag
    metric: wave.lag_s
    nodes: {names: [wave-1], labels: {instance: orders}}
    condition: last > 60
    severity: P1
    labels: {team: dba}
    channels: [c]
`, nil)
	lag := func(inst string, v float64) metric.Point {
		return metric.Point{Name: "wave.lag_s", Value: v, Labels: map[string]string{"instance": inst}}
	}
	r.e.Observe(batch("wave-1", t0, lag("orders", 100), lag("users", 100)))
	r.e.Observe(batch("wave-2", t0, lag("orders", 100)))
	msgs := r.out.messages()
	require.Len(t, msgs, 1)
	require.Equal(t, map[string]string{"alertname": "lag", "node": "wave-1", "severity": "P1", "metric": "wave.lag_s",
		"instance": "orders", "team": "dba"}, msgs[0].Alerts[0].Labels)
}

func TestRedeliveredBatchIsNotEvaluatedTwice(t *testing.T) {
	r := newRig(t, strings.Replace(basePolicy, "last > 90", "all(#2) > 90", 1), nil)
	b := batch("wave-1", t0, cpu(95))
	r.e.Observe(b)
	r.e.Observe(b) // at-least-once delivery: the same batch again
	require.Equal(t, "inactive", r.state("wave-1"))
}

// TestRestart: an alert firing before a restart is not paged again before its repeat
// interval; one that stopped violating meanwhile is resolved with a notification.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	pol := basePolicy + "    for: 20s\n    repeat_interval: 1h\n"
	c := openCoord(t, dir)
	r := newRigOn(t, c, clk, pol, nil)
	r.observe("wave-1", 95)
	r.observe("wave-2", 95)
	clk.Add(30 * time.Second)
	r.observe("wave-1", 95)
	r.observe("wave-2", 95)
	require.Equal(t, []string{F, "firing wave-2"}, r.out.take())
	require.NoError(t, c.Close())

	// A new process on the same file, ten minutes later.
	clk.Add(10 * time.Minute)
	c2 := openCoord(t, dir)
	t.Cleanup(func() { c2.Close() })
	r2 := newRigOn(t, c2, clk, pol, nil)
	r2.observe("wave-1", 95)
	require.Equal(t, "firing", r2.state("wave-1"), "continues firing without waiting for `for` again")
	require.Empty(t, r2.out.take(), "no page before the repeat interval")
	r2.observe("wave-2", 10)
	require.Equal(t, []string{"resolved wave-2"}, r2.out.take(), "not forgotten: its resolution is sent")
	clk.Add(50*time.Minute - time.Second)
	r2.observe("wave-1", 95)
	require.Empty(t, r2.out.take())
	clk.Add(time.Second)
	r2.e.Tick()
	require.Equal(t, []string{F}, r2.out.take(), "the repeat interval counts from the page before the restart")
	var views []AlertView
	for _, a := range r2.e.Alerts() {
		if a.Labels["node"] == "wave-1" {
			views = append(views, a)
		}
	}
	require.Equal(t, 2, views[0].Notifications)
	require.Equal(t, t0.Add(30*time.Second), *views[0].FiringSince)
}

// An alert Alertmanager has goes on being refreshed while it fires though a silence of
// this alarm's came after its page (it lapsed there, read as resolved, and came back as
// a new alert when the silence ended); one silenced before its first page is not sent.
func TestFiringForKeepsMutedAlertsAlertmanagerHas(t *testing.T) {
	r := newRig(t, basePolicy, func(o *EngineOptions) { o.StaleIntervals = 1000 })
	r.observe("wave-1", 95)
	require.Len(t, r.out.take(), 1, "wave-1's page")
	_, err := r.sil.Create(context.Background(), Silence{Matchers: []Matcher{{Name: "node", Value: "wave-[12]", IsRegex: true}},
		EndsAt: t0.Add(time.Hour), CreatedBy: "test"})
	require.NoError(t, err)
	r.clk.Add(time.Minute)
	r.observe("wave-1", 96)
	r.observe("wave-2", 97) // fires while silenced: no page, nothing to refresh
	require.Empty(t, r.out.take())
	var nodes []string
	for _, a := range r.e.RefreshFor("c") {
		nodes = append(nodes, a.Labels["node"])
	}
	require.Equal(t, []string{"wave-1"}, nodes)
}

// A resolved alert is refreshed with the firing ones for 15 minutes, with its resolution
// as endsAt: an Alertmanager that was down when the resolution went out (its retries gave
// up, or it restarted and forgot the alert) learns that the alert ended, as Prometheus
// re-sends resolved alerts. Before, only firing ones were sent again, and the resolution
// was lost there.
func TestRefreshResendsResolvedAlerts(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	r.observe("wave-1", 95)
	r.observe("wave-2", 97)
	require.Len(t, r.out.take(), 2)
	r.clk.Add(10 * time.Second)
	resolvedAt := r.clk.Now()
	r.observe("wave-1", 10)
	r.observe("wave-2", 97)
	require.Equal(t, []string{R}, r.out.take())
	byNode := func() map[string]notify.Alert {
		out := map[string]notify.Alert{}
		for _, a := range r.e.RefreshFor("c") {
			out[a.Labels["node"]] = a
		}
		return out
	}
	got := byNode()
	require.Len(t, got, 2)
	require.Equal(t, notify.StatusFiring, got["wave-2"].Status)
	require.Equal(t, notify.StatusResolved, got["wave-1"].Status)
	require.Equal(t, resolvedAt, got["wave-1"].EndsAt)
	r.clk.Add(14 * time.Minute)
	r.observe("wave-2", 97)
	require.Len(t, byNode(), 2, "within 15 minutes")
	r.clk.Add(time.Minute)
	r.observe("wave-2", 97)
	require.Equal(t, []string{"wave-2"}, slices.Collect(maps.Keys(byNode())), "not after")
}

// TestRestoredAlertsAreListed: after a restart, the alerts the notification log holds
// firing are in GET /v1/alerts (and the health's counts) at once, as the log has them,
// not only from their nodes' next batches (a restart listed none of them for an agent
// interval); with several processes, only those of the nodes this one evaluates, and
// each once when its node's batch comes.
func TestRestoredAlertsAreListed(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	r.observe("n1", 95)
	r.observe("n2", 97)
	require.Len(t, r.out.take(), 2, "both paged")

	r2 := newRigOn(t, r.c, r.clk, basePolicy, nil) // the restart: the same log
	views := r2.e.Alerts()
	require.Len(t, views, 2)
	for _, v := range views {
		require.Equal(t, "firing", v.State, "%+v", v)
		require.Equal(t, 1, v.Notifications, "%+v", v)
		require.NotNil(t, v.FiringSince, "%+v", v)
		require.Equal(t, v.Labels["node"]+" at "+map[string]string{"n1": "95", "n2": "97"}[v.Labels["node"]], v.Annotations["summary"])
	}
	_, firing, _ := r2.e.Counts()
	require.Equal(t, 2, firing)

	r2.e.SetOwner(func(node string) bool { return node == "n1" }) // n2's partition is another process's
	views = r2.e.Alerts()
	require.Len(t, views, 1)
	require.Equal(t, "n1", views[0].Labels["node"])
	_, firing, _ = r2.e.Counts()
	require.Equal(t, 1, firing)

	r2.clk.Add(10 * time.Second)
	r2.observe("n1", 96) // continued: listed once, as the live alert
	views = r2.e.Alerts()
	require.Len(t, views, 1)
	require.Equal(t, "firing", views[0].State)
	require.Equal(t, 96.0, views[0].Value)
}
