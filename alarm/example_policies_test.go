package alarm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// examplePolicyRig is a rig running one policy of deploy/policies.example.yaml, as the
// file ships it.
func examplePolicyRig(t *testing.T, name string) *rig {
	t.Helper()
	return shippedPolicyRig(t, "../deploy/policies.example.yaml", name)
}

// shippedPolicyRig is a rig running the policy name of the policy file at path.
func shippedPolicyRig(t *testing.T, path, name string) *rig {
	t.Helper()
	pols, err := policy.Load(path)
	require.NoError(t, err)
	for _, p := range pols {
		if p.Name == name {
			return newRig(t, basePolicy, func(o *EngineOptions) { o.Policies = []*policy.Policy{p} })
		}
	}
	t.Fatalf("no policy %s in the example", name)
	return nil
}

// TestExampleLookupAndStddevPolicies runs the example's memory-flapping (lookup(#3,5) >
// 95) and tps-anomaly (stddev(#30) = 4, keep_firing_for 5m) as their comments describe
// them.
func TestExampleLookupAndStddevPolicies(t *testing.T) {
	summaries := func(ms []notify.Message) []string {
		var out []string
		for _, m := range ms {
			for _, a := range m.Alerts {
				out = append(out, m.Receiver+" "+a.Status+": "+a.Annotations["summary"])
			}
		}
		return out
	}
	t.Run("memory-flapping", func(t *testing.T) {
		r := examplePolicyRig(t, "memory-flapping")
		mem := func(v float64) {
			r.clk.Add(10 * time.Second)
			r.e.Observe(batch("wave-1", r.clk.Now(), metric.Point{Name: metric.MemUsedPct, Value: v}))
			r.e.Tick()
		}
		for _, v := range []float64{90, 96, 90, 96, 90} { // touches the ceiling twice in 5 points
			mem(v)
			require.Empty(t, r.out.messages())
		}
		mem(96) // the third time in the last 5
		require.Equal(t, []string{"ops-webhook firing: memory on wave-1 was above 95% in 3 of the last 5 points (now 96.0%)"},
			summaries(r.out.messages()))
	})
	t.Run("tps-anomaly", func(t *testing.T) {
		r := examplePolicyRig(t, "tps-anomaly")
		tps := func(v float64) {
			r.clk.Add(10 * time.Second)
			r.e.Observe(batch("wave-1", r.clk.Now(), metric.Point{Name: metric.WaveTPS, Value: v,
				Labels: map[string]string{"instance": "orders"}}))
			r.e.Tick()
			r.e.Sync()
		}
		for i := range 30 { // 1000 rows/s, ± 10: too few points for a baseline of 30 before the newest
			tps(1000 + 10*float64(i%3-1))
			require.Empty(t, r.out.messages(), "point %d", i)
		}
		tps(1000) // within 4σ of the 30 before it
		require.Empty(t, r.out.messages())
		tps(0) // the instance stops publishing
		require.Equal(t, []string{"ops-slack firing: capture instance orders on wave-1 publishes 0 rows/s, far off its last 5 minutes"},
			summaries(r.out.messages()))
		// 0 is off the baseline while it holds mostly 1000s (two points), then the baseline
		// has spread; keep_firing_for holds the alert 5 minutes after the last point off.
		for i := 32; i < 63; i++ { // until 5 minutes after point 33, the first within 4σ again
			tps(0)
			require.Empty(t, r.out.messages(), "point %d", i)
			require.Equal(t, "firing", r.state("wave-1"), "point %d", i)
		}
		tps(0)
		require.Equal(t, []string{"ops-slack resolved: capture instance orders on wave-1 publishes 0 rows/s, far off its last 5 minutes"},
			summaries(r.out.messages()))
	})
}

// TestDefaultPublishErrorsPolicyHoldsThroughAnOutage: wave.publish_errors counts the
// errors since the agent's last scrape, so through a sustained outage with an agent
// interval shorter than the publisher's back-off every other point is 0 (an outside trial
// saw the default policy fire and resolve every 2–6 s, twice each time: for the
// instance's series and the node's unlabelled sum). The default policy pages once per
// instance and resolves once, when two minutes passed without an error.
func TestDefaultPublishErrorsPolicyHoldsThroughAnOutage(t *testing.T) {
	r := shippedPolicyRig(t, "../deploy/policies.yaml", "publish-errors")
	tick := func(errs float64) {
		r.clk.Add(2 * time.Second)
		r.e.Observe(batch("wave-1", r.clk.Now(),
			metric.Point{Name: metric.WavePublishErrs, Value: errs},
			metric.Point{Name: metric.WavePublishErrs, Value: errs, Labels: map[string]string{"instance": "orders"}}))
		r.e.Tick()
		r.e.Sync()
	}
	var got []string
	collect := func() {
		for _, m := range r.out.messages() {
			for _, a := range m.Alerts {
				got = append(got, a.Status+" "+a.Labels["instance"])
			}
		}
	}
	for i := range 25 { // 50 s of outage: errors at every other scrape
		tick(float64(3 * (i % 2)))
		collect()
	}
	require.Equal(t, []string{"firing orders"}, got, "one page, for the instance, through the outage")
	for range 59 { // under 2 min without an error
		tick(0)
		collect()
	}
	require.Equal(t, []string{"firing orders"}, got, "still firing within 2 min of the last error")
	for range 3 {
		tick(0)
		collect()
	}
	require.Equal(t, []string{"firing orders", "resolved orders"}, got, "resolved once 2 min passed without an error")
}
