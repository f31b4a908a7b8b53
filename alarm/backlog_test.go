package alarm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noticesOf returns the alerts sent since the last call, as "status startsAt endsAt"
// in minutes after t0 (endsAt only for resolved notices).
func (o *outbox) noticesOf() []string {
	var out []string
	for _, m := range o.messages() {
		for _, a := range m.Alerts {
			s := fmt.Sprintf("%s %v", a.Status, a.StartsAt.Sub(t0))
			if !a.EndsAt.IsZero() {
				s += fmt.Sprintf(" %v", a.EndsAt.Sub(t0))
			}
			out = append(out, s)
		}
	}
	return out
}

// A restarted alarm reads the backlog of the metrics sent while it was down: its
// batches are evaluated on their own time, so `for`, keep_firing_for, startsAt and
// endsAt are what they would have been had the alarm been up, not counted from the
// restart. The engine's timer runs between the replayed batches, as it does while the
// bus delivers a backlog, the bus says the process is behind meanwhile, and the clock
// stands at the restart (30 min). A resolved alert stays listed for the resolved
// retention (15 min) from its resolution's decision, not from its end in the backlog.
func TestBacklogEvaluatedOnThePointsTime(t *testing.T) {
	m := func(n int) time.Duration { return time.Duration(n) * time.Minute }
	cases := []struct {
		name     string
		extra    string        // policy fields added to basePolicy
		from, to time.Duration // the violation, in the backlog's time
		want     []string
		state    string // after the replay
	}{
		{"a violation going on at the restart pages at once, since for ran out", "    for: 5m\n", m(10), m(31),
			[]string{"firing 15m0s"}, "firing"},
		{"an episode inside the backlog pages and resolves with its own times", "    for: 5m\n", m(2), m(12),
			[]string{"firing 7m0s", "resolved 7m0s 12m0s"}, "resolved"},
		{"keep_firing_for runs on the backlog's time", "    for: 5m\n    keep_firing_for: 3m\n", m(2), m(12),
			[]string{"firing 7m0s", "resolved 7m0s 15m0s"}, "resolved"},
		{"a violation shorter than for in the backlog does not page", "    for: 5m\n", m(2), m(6), nil, "inactive"},
		{"without for, an episode of the backlog keeps its start and end", "", m(3), m(4),
			[]string{"firing 3m0s", "resolved 3m0s 4m0s"}, "resolved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, basePolicy+tc.extra, nil)
			r.clk.Add(m(30))
			r.e.SetCaughtUp(false)
			var got []string
			for d := time.Duration(0); d <= m(30); d += 10 * time.Second {
				v := 10.0
				if d >= tc.from && d < tc.to {
					v = 95
				}
				r.e.Observe(batch("wave-1", t0.Add(d), cpu(v)))
				r.e.Tick()
				got = append(got, r.out.noticesOf()...)
			}
			r.e.SetCaughtUp(true)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.state, r.state("wave-1"))
			r.clk.Add(m(15))
			r.e.Tick()
			if tc.state == "resolved" {
				require.Equal(t, "inactive", r.state("wave-1"), "forgotten after the retention")
			}
		})
	}
}

// Another process resolved the episode this one paged, reading a backlog (the overlap of
// a rebalance): its resolution is dated by the points, before this process's page was
// claimed. This process's own resolution of it finds the episode resolved and tells
// nothing more: the other process's notice was the one.
func TestResolvedFromABacklogElsewhereIsNotToldTwice(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, basePolicy, nil)
	r.clk.Add(10 * time.Minute)
	r.e.SetCaughtUp(false)
	r.e.Observe(batch("wave-1", t0, cpu(95)))
	r.e.Tick()
	require.Equal(t, []string{"firing 0s"}, r.out.noticesOf())
	les, err := r.e.o.Log.Load(ctx)
	require.NoError(t, err)
	require.Len(t, les, 1)
	le := les[0]
	le.ResolvedAt, le.ResolvedTS, le.ResolveSent = t0.Add(time.Minute), t0.Add(time.Minute), true
	require.NoError(t, r.e.o.Log.Save(ctx, le))
	r.e.Observe(batch("wave-1", t0.Add(time.Minute), cpu(10)))
	r.e.Tick()
	require.Empty(t, r.out.noticesOf())
}

// A node whose clock runs ahead is evaluated on the engine's clock: a node whose clock
// jumps an hour ahead while it violates has not violated for an hour, and pages once `for`
// ran out on the alarm's clock, dated by it.
func TestClockAheadDoesNotFireEarly(t *testing.T) {
	r := newRig(t, basePolicy+"    for: 30s\n", nil)
	var got []string
	for i := range 4 {
		ts := r.clk.Now()
		if i > 0 {
			ts = ts.Add(time.Hour)
		}
		r.e.Observe(batch("wave-1", ts, cpu(95)))
		r.e.Tick()
		got = append(got, fmt.Sprintf("%s %v", r.state("wave-1"), r.out.noticesOf()))
		r.clk.Add(10 * time.Second)
	}
	require.Equal(t, []string{"pending []", "pending []", "pending []", "firing [firing 30s]"}, got)
}

// A node whose clock lags the alarm's by more than the staleness window (a minute, at
// 10 s batches and 3 intervals) still pages after for, live, as a node whose clock
// agrees does: a series is stale when the alarm has received nothing of it for the
// window, not when its last point's own time is that old. (On the points' age each tick
// took the pending alert back to inactive, and it never fired.) Stopping the batches
// still ends it.
func TestClockBehindStillPages(t *testing.T) {
	r := newRig(t, basePolicy+"    for: 30s\n", nil)
	var got []string
	for range 5 {
		r.e.Observe(batch("wave-1", r.clk.Now().Add(-time.Minute), cpu(95)))
		r.e.Tick()
		got = append(got, fmt.Sprintf("%s %v", r.state("wave-1"), r.out.noticesOf()))
		r.clk.Add(10 * time.Second)
	}
	require.Equal(t, []string{"pending []", "pending []", "pending []", "firing [firing -30s]", "firing []"}, got)
	r.clk.Add(time.Minute)
	r.e.Tick()
	require.Equal(t, "resolved", r.state("wave-1"), "stale once nothing came for the window")
}

// The tombstone of an episode resolved from a backlog stays in the log for the resolved
// retention from when its notice went out, not from its end in the backlog: it is what
// refuses a page of the episode to a process that reads the backlog again.
func TestBacklogTombstoneKeptForTheRetention(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, basePolicy, nil)
	r.clk.Add(30 * time.Minute)
	r.e.SetCaughtUp(false)
	for d := time.Duration(0); d <= 2*time.Minute; d += 10 * time.Second {
		v := 10.0
		if d >= time.Minute && d < 90*time.Second {
			v = 95
		}
		r.e.Observe(batch("wave-1", t0.Add(d), cpu(v)))
		r.e.Tick()
		r.out.noticesOf()
	}
	r.clk.Add(time.Minute)
	_, err := r.e.Restore(ctx) // sweeps the log
	require.NoError(t, err)
	les, err := r.e.o.Log.Load(ctx)
	require.NoError(t, err)
	require.Len(t, les, 1)
	require.Equal(t, t0.Add(90*time.Second), les[0].ResolvedAt.UTC())
}
