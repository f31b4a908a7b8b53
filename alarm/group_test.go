package alarm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/metric"
)

func lagPt(inst string, v float64) metric.Point {
	return metric.Point{Name: metric.WaveLagSeconds, Value: v, Labels: map[string]string{"instance": inst}}
}

// sent describes messages as "key [status node/instance …]", in the order sent.
func sent(ms []notify.Message) []string {
	var out []string
	for _, m := range ms {
		var as []string
		for _, a := range m.Alerts {
			as = append(as, a.Status+" "+a.Labels["node"]+"/"+a.Labels["instance"])
		}
		out = append(out, m.GroupKey+" "+fmt.Sprint(as))
	}
	return out
}

// TestGroupBy: a policy's alerts go out in one message per value of its group_by labels,
// one per alert with "...", one per policy without group_by; the group labels are the
// group_by labels.
func TestGroupBy(t *testing.T) {
	const pol = `policies:
  - name: lag
    metric: wave.lag_s
    nodes: {labels: {instance: "*"}}
    condition: last > 60
    severity: P1
    channels: [c]
`
	run := func(t *testing.T, extra string) []notify.Message {
		r := newRig(t, pol+extra, func(o *EngineOptions) { o.GroupWait = 30 * time.Second })
		// Sync after each batch: the writer groups a page at the clock's time when it runs.
		r.e.Observe(batch("wave-1", r.clk.Now(), lagPt("orders", 90), lagPt("users", 90)))
		r.e.Sync()
		r.clk.Add(10 * time.Second)
		r.e.Observe(batch("wave-2", r.clk.Now(), lagPt("orders", 90)))
		r.e.Sync()
		r.e.Tick()
		require.Empty(t, r.out.messages(), "every group waits group_wait")
		r.clk.Add(30 * time.Second) // the groups of wave-2's alert too
		r.e.Tick()
		return r.out.messages()
	}
	t.Run("default: the policy", func(t *testing.T) {
		ms := run(t, "")
		require.Equal(t, []string{"lag/P1 [firing wave-1/orders firing wave-1/users firing wave-2/orders]"}, sortAlerts(sent(ms)))
		require.Equal(t, map[string]string{"alertname": "lag", "severity": "P1"}, ms[0].GroupLabels)
	})
	t.Run("by instance", func(t *testing.T) {
		ms := run(t, "    group_by: [instance]\n")
		require.Equal(t, []string{
			`lag/P1:{instance="orders"} [firing wave-1/orders firing wave-2/orders]`,
			`lag/P1:{instance="users"} [firing wave-1/users]`,
		}, sent(ms))
		require.Equal(t, map[string]string{"instance": "orders"}, ms[0].GroupLabels)
		require.Equal(t, map[string]string{"instance": "users"}, ms[1].GroupLabels)
	})
	t.Run("by node and instance", func(t *testing.T) {
		ms := run(t, "    group_by: [alertname, node, instance]\n")
		require.Equal(t, []string{
			`lag/P1:{instance="orders", node="wave-1"} [firing wave-1/orders]`,
			`lag/P1:{instance="orders", node="wave-2"} [firing wave-2/orders]`,
			`lag/P1:{instance="users", node="wave-1"} [firing wave-1/users]`,
		}, sent(ms))
		require.Equal(t, map[string]string{"alertname": "lag", "node": "wave-1", "instance": "orders"}, ms[0].GroupLabels)
	})
	t.Run("every label", func(t *testing.T) {
		ms := run(t, "    group_by: [\"...\"]\n")
		require.Len(t, ms, 3)
		for _, m := range ms {
			require.Len(t, m.Alerts, 1)
			require.Equal(t, m.Alerts[0].Labels, m.GroupLabels)
		}
	})
}

// sortAlerts sorts the alerts within each description of sent: within one node the
// writer orders them by fingerprint, which says nothing to a reader.
func sortAlerts(ds []string) []string {
	for i, d := range ds {
		key, list, _ := strings.Cut(d, " [")
		fields := strings.Fields(strings.TrimSuffix(list, "]"))
		var as []string
		for j := 0; j+1 < len(fields); j += 2 {
			as = append(as, fields[j]+" "+fields[j+1])
		}
		slices.Sort(as)
		ds[i] = key + " [" + strings.Join(as, " ") + "]"
	}
	return ds
}

// TestGroupInterval: after a group's notification, what falls due in it waits for the
// end of its group_interval and goes out in one message; a group with nothing due by
// then is forgotten, and its next alert waits group_wait only. Another group is not held.
func TestGroupInterval(t *testing.T) {
	r := newRig(t, basePolicy+"    group_by: [node]\n    group_wait: 10s\n    group_interval: 1m\n", func(o *EngineOptions) {
		o.StaleIntervals = 1000 // the test jumps without points
	})
	at := func(d time.Duration) { r.clk.Add(d - r.clk.Now().Sub(t0)) }
	obs := func(node string, v float64) {
		r.e.Observe(batch(node, r.clk.Now(), cpu(v)))
		r.e.Sync()
	}
	type step struct {
		at   time.Duration
		do   func()
		want []string
	}
	steps := []step{
		{0, func() { obs("wave-1", 95) }, nil},
		{10 * time.Second, nil, []string{`cpu/P2:{node="wave-1"} [firing wave-1/]`}},
		{20 * time.Second, func() { obs("wave-1", 10) }, nil}, // resolved: held until 10s + 1m
		{30 * time.Second, func() { obs("wave-2", 95) }, nil}, // another group: group_wait only
		{40 * time.Second, nil, []string{`cpu/P2:{node="wave-2"} [firing wave-2/]`}},
		{50 * time.Second, func() { obs("wave-1", 96) }, nil}, // fires again within the interval
		{69 * time.Second, nil, nil},
		// The first episode's resolution and the second's page: the page replaced the
		// resolution, and a receiver keeping an incident per startsAt never closed the
		// first (an outside trial).
		{70 * time.Second, nil, []string{`cpu/P2:{node="wave-1"} [resolved wave-1/ firing wave-1/]`}},
		{80 * time.Second, func() { obs("wave-1", 10) }, nil},
		{130 * time.Second, nil, []string{`cpu/P2:{node="wave-1"} [resolved wave-1/]`}},
		// Nothing due until its group_interval ran out (190 s): the group is forgotten,
		// and the next alert waits group_wait, not a group_interval.
		{200 * time.Second, func() { obs("wave-1", 97) }, nil},
		{209 * time.Second, nil, nil},
		{210 * time.Second, nil, []string{`cpu/P2:{node="wave-1"} [firing wave-1/]`}},
	}
	for i, s := range steps {
		at(s.at)
		if s.do != nil {
			s.do()
		}
		r.e.Tick()
		require.Equal(t, s.want, sent(r.out.messages()), "step %d at %s", i, s.at)
	}
}

// TestGroupIntervalHoldsTheLease: a page waiting out its group's group_interval is not
// taken over by another alarm process as a crashed one (its claim's lease covers the
// group_interval): when the node moves to another process meanwhile, the page still goes
// out once, from the process that claimed it.
func TestGroupIntervalHoldsTheLease(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	clk := &clock{t: t0}
	pol := basePolicy + "    group_wait: 0s\n    group_interval: 10m\n"
	r1 := newRigOn(t, c, clk, pol, nil)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{F}, r1.out.take(), "a new group: no wait")
	clk.Add(10 * time.Second)
	r1.observe("wave-2", 95) // claimed; waits for the group's next notification, at 10m
	require.Empty(t, r1.out.take())
	// A rebalance moves wave-2 to another process, which continues it from the log.
	r1.e.Release([]string{"wave-2"})
	r2 := newRigOn(t, c, clk, pol, nil)
	var pages []string
	// Until the claim's lease ends: 10 s + the group_interval + the delivery timeout.
	for clk.Now().Sub(t0) < 12*time.Minute {
		clk.Add(10 * time.Second)
		r1.observe("wave-1", 95)
		r2.observe("wave-2", 95)
		for _, s := range r1.out.take() {
			pages = append(pages, "process 1 at "+clk.Now().Sub(t0).String()+": "+s)
		}
		for _, s := range r2.out.take() {
			pages = append(pages, "process 2 at "+clk.Now().Sub(t0).String()+": "+s)
		}
	}
	require.Equal(t, []string{"process 1 at 10m0s: firing wave-2"}, pages)
}

// TestFlapWithinGroupWaitResolvesEveryEpisode: an alert that resolves and fires again
// within its group's wait sends the first episode's resolution beside the second's page
// (in that order, each with its own startsAt), then the second's resolution: the page
// replaced the resolution, and a receiver keeping an incident per fingerprint and
// startsAt, as docs/design.md advises, never saw the first one end (an outside trial).
func TestFlapWithinGroupWaitResolvesEveryEpisode(t *testing.T) {
	r := newRig(t, basePolicy+"    group_wait: 6s\n", func(o *EngineOptions) {
		o.StaleIntervals = 1000 // the test jumps without points
	})
	at := func(d time.Duration) { r.clk.Add(d - r.clk.Now().Sub(t0)) }
	for _, s := range []struct {
		at time.Duration
		v  float64 // 0: no point
	}{{0, 99}, {6 * time.Second, 0}, {10 * time.Second, 10}, {12 * time.Second, 99}, {16 * time.Second, 0}, {30 * time.Second, 10}, {36 * time.Second, 0}} {
		at(s.at)
		if s.v != 0 {
			r.e.Observe(batch("wave-1", r.clk.Now(), cpu(s.v)))
			r.e.Sync()
		}
		r.e.Tick()
	}
	var got []string
	for _, m := range r.out.messages() {
		var as []string
		for _, a := range m.Alerts {
			as = append(as, fmt.Sprintf("%s from %s", a.Status, a.StartsAt.Sub(t0)))
		}
		got = append(got, strings.Join(as, ", "))
	}
	require.Equal(t, []string{"firing from 0s", "resolved from 0s, firing from 12s", "resolved from 12s"}, got)
}
