package bench

import (
	"fmt"

	"github.com/binlake/binlake/internal/benchkit"
)

// The thresholds sit far above anything the fleet reports (its largest series, network
// bytes/s, stays near 1e8), so that no policy ever fires on the load itself and every
// notification is an injected violation. Policy i watches node series i mod 8; the
// first policy of each series (tier 0) is a violation target with threshold baseThreshold,
// every later tier t a threshold of (t+1) × baseThreshold with another function, so
// that a violation's value (violationValue) trips its target policy alone.
const (
	baseThreshold  = 1e12
	violationValue = 1.5 * baseThreshold
)

// tierFuncs are the conditions' functions by tier, cycling: each evaluates a different
// window over the series. Tier 0's (last) fires on the violating point alone.
var tierFuncs = []string{"last", "avg(#3)", "max(#5)", "min(#3)", "sum(#2)", "last(#2)", "avg_over(1m)", "max_over(30s)"}

// policySpec is one policy of policies.yaml.
type policySpec struct {
	Name      string   `yaml:"name"`
	Metric    string   `yaml:"metric"`
	Condition string   `yaml:"condition"`
	Severity  string   `yaml:"severity"`
	Channels  []string `yaml:"channels"`
	// GroupWait 0s sends an alert the moment it fires: the bench times the path, not the
	// grouping delay.
	GroupWait string `yaml:"group_wait"`
}

func policyName(i int) string { return fmt.Sprintf("bench-%03d", i) }

// policySpecs are n policies over every node.
func policySpecs(n int) []policySpec {
	per := len(benchkit.NodeMetrics)
	ps := make([]policySpec, n)
	for i := range ps {
		tier := i / per
		ps[i] = policySpec{
			Name: policyName(i), Metric: benchkit.NodeMetrics[i%per],
			Condition: fmt.Sprintf("%s > %g", tierFuncs[tier%len(tierFuncs)], float64(tier+1)*baseThreshold),
			Severity:  "P2", Channels: []string{channel}, GroupWait: "0s",
		}
	}
	return ps
}

// violation is one injected violation: node's next batch after at carries
// violationValue on the series of policy, which then fires on node alone.
type violation struct {
	at     float64 // share of the load's duration, in (0, 1)
	node   int
	metric int // index in the batch (benchkit.NodeMetrics)
	policy string
}

// violations spreads v violations evenly over the load and over the nodes, rotating over
// the tier-0 policies.
func violations(v, nodes, policies int) []violation {
	targets := min(policies, len(benchkit.NodeMetrics))
	out := make([]violation, v)
	for k := range out {
		out[k] = violation{at: float64(k+1) / float64(v+1), node: k * nodes / v, metric: k % targets, policy: policyName(k % targets)}
	}
	return out
}
