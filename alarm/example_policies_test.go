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
	pols, err := policy.Load("../deploy/policies.example.yaml")
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
