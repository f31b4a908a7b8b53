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

// TestGroupingAndFunctionsThroughWebhook runs two policies on an engine with an injected
// clock, whose notifications a dispatcher delivers to an Alertmanager webhook receiver
// (an httptest server), and checks every payload the receiver got:
//
//   - lag-flapping: lookup(#2,3) > 60 on each instance's lag, grouped by node, group_wait
//     30s, group_interval 2m. On wave-1, orders (90 10 90) and users (10 10 90 90) fire
//     20 s apart and go out in one message; orders resolving and audit firing within the
//     group_interval go out together at its end. Billing on wave-2 (90 10 10 …) never
//     has 2 of 3 points above 60: no alert.
//   - tps-anomaly: stddev(#5) = 3 on each instance's rows/s, one group per alert ("..."),
//     the alarm's group_wait (0). Billing's 300 rows/s after 100 ± 2 fires; the next
//     point, 100, is within 3σ of a baseline that now holds the 300: it resolves.
func TestGroupingAndFunctionsThroughWebhook(t *testing.T) {
	const pols = `policies:
  - name: lag-flapping
    metric: wave.lag_s
    nodes: {labels: {instance: "*"}}
    condition: lookup(#2,3) > 60
    severity: P1
    channels: [c]
    group_by: [node]
    group_wait: 30s
    group_interval: 2m
    annotations:
      summary: "{{ .Labels.instance }} lags {{ .Value }}s on {{ .Node }}"
  - name: tps-anomaly
    metric: wave.tps
    nodes: {labels: {instance: "*"}}
    condition: stddev(#5) = 3
    severity: P3
    channels: [c]
    group_by: ["..."]
    annotations:
      summary: "{{ .Labels.instance }} publishes {{ .Value }} rows/s on {{ .Node }}, off its recent mean"
`
	rcv := newReceiver(t)
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	var (
		d      *notify.Dispatcher
		r      *rig
		sentAt []string // when the engine handed each message over, on its clock
	)
	r = newRigOn(t, c, &clock{t: t0}, pols, func(o *EngineOptions) {
		o.Send = func(m notify.Message) {
			sentAt = append(sentAt, fmt.Sprint(r.clk.Now().Sub(t0)))
			d.Enqueue(m)
		}
		o.ExternalURL = "http://alarm.test"
	})
	d = mustDispatcherWithDone(t, rcv, r)
	d.Start()

	// One value per 10 s step; the steps after a series' last value repeat it.
	series := map[string][]float64{
		"wave-1 lag orders": {90, 10, 90, 90, 90, 90, 10, 10},
		"wave-1 lag users":  {10, 10, 10, 90, 90},
		"wave-1 lag audit":  {10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 90},
		"wave-2 lag billing": {90, 10, 10, 90, 10, 10, 90, 10, 10, 90, 10, 10, 90, 10, 10, 90, 10, 10,
			90, 10, 10},
		"wave-2 tps billing": {100, 102, 98, 100, 101, 99, 300, 100},
	}
	at := func(name string, step int) float64 {
		vs := series[name]
		return vs[min(step, len(vs)-1)]
	}
	for step := 0; step <= 20; step++ {
		now := t0.Add(time.Duration(step) * 10 * time.Second)
		r.clk.Add(now.Sub(r.clk.Now()))
		for _, node := range []string{"wave-1", "wave-2"} {
			var pts []metric.Point
			for name := range series {
				f := strings.Fields(name) // node, lag or tps, instance
				if f[0] != node {
					continue
				}
				m := metric.WaveLagSeconds
				if f[1] == "tps" {
					m = metric.WaveTPS
				}
				pts = append(pts, metric.Point{Name: m, Value: at(name, step), Labels: map[string]string{"instance": f[2]}})
			}
			slices.SortFunc(pts, func(a, b metric.Point) int {
				return strings.Compare(a.Name+a.Labels["instance"], b.Name+b.Labels["instance"])
			})
			r.e.Observe(batch(node, now, pts...))
			r.e.Sync()
		}
		r.e.Tick()
		r.e.Sync()
	}
	d.Close(10 * time.Second)

	type alert struct{ status, summary, startsAt, endsAt string }
	type payload struct {
		groupKey, status string
		groupLabels      map[string]string
		alerts           []alert
	}
	var got []payload
	for _, p := range rcv.payloads() {
		require.Equal(t, "4", p.Version)
		require.Equal(t, "c", p.Receiver)
		gp := payload{groupKey: p.GroupKey, status: p.Status, groupLabels: p.GroupLabels}
		for i, a := range p.Alerts {
			require.Equal(t, "http://alarm.test/v1/alerts?fingerprint="+a.Fingerprint, a.GeneratorURL)
			if i > 0 { // one node per message here: by fingerprint
				require.Less(t, p.Alerts[i-1].Fingerprint, a.Fingerprint)
			}
			end := ""
			if !a.EndsAt.IsZero() && a.EndsAt.Year() > 1 {
				end = fmt.Sprint(a.EndsAt.Sub(t0))
			}
			gp.alerts = append(gp.alerts, alert{a.Status, a.Annotations["summary"], fmt.Sprint(a.StartsAt.Sub(t0)), end})
		}
		// Compare the alerts of a message as a set: their order is their fingerprints'.
		slices.SortFunc(gp.alerts, func(a, b alert) int { return strings.Compare(a.summary, b.summary) })
		got = append(got, gp)
	}
	tpsLabels := map[string]string{"alertname": "tps-anomaly", "severity": "P3", "node": "wave-2", "metric": "wave.tps", "instance": "billing"}
	want := []payload{
		// orders fired at 20 s (90 10 90), users at 40 s (10 90 90): one message after group_wait.
		{`lag-flapping/P1:{node="wave-1"}`, "firing", map[string]string{"node": "wave-1"}, []alert{
			{"firing", "orders lags 90s on wave-1", "20s", ""},
			{"firing", "users lags 90s on wave-1", "40s", ""},
		}},
		{`tps-anomaly/P3:{instance="billing", metric="wave.tps", node="wave-2"}`, "firing", tpsLabels, []alert{
			{"firing", "billing publishes 300 rows/s on wave-2, off its recent mean", "1m0s", ""},
		}},
		{`tps-anomaly/P3:{instance="billing", metric="wave.tps", node="wave-2"}`, "resolved", tpsLabels, []alert{
			{"resolved", "billing publishes 100 rows/s on wave-2, off its recent mean", "1m0s", "1m10s"},
		}},
		// orders resolved at 1m10s (90 10 10), audit fired at 1m50s: held to the end of
		// the group_interval, 2m after the group's message at 50 s.
		{`lag-flapping/P1:{node="wave-1"}`, "firing", map[string]string{"node": "wave-1"}, []alert{
			{"firing", "audit lags 90s on wave-1", "1m50s", ""},
			{"resolved", "orders lags 10s on wave-1", "20s", "1m10s"},
		}},
	}
	require.Equal(t, want, got)
	require.Equal(t, []string{"50s", "1m0s", "1m10s", "2m50s"}, sentAt)
}
