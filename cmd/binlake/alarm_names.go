//go:build !agentonly

package main

import (
	"slices"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// knownMetricNames are the names a policy may watch without a warning: the canonical
// ones (internal/metric), those an agent's collectors send, and those of seen (a store's,
// the judge's, a replayed history's), sorted, each once.
func knownMetricNames(seen ...[]string) []string {
	names := append(metric.CanonicalNames(), agent.PointNames()...)
	for _, s := range seen {
		names = append(names, s...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// unknownMetricMessages are the warnings for the policies of file whose metric is not in
// known: knownFrom says what known holds.
func unknownMetricMessages(pols []*policy.Policy, file string, known []string, knownFrom string) []string {
	var out []string
	for _, u := range policy.UnknownMetrics(pols, known) {
		out = append(out, u.Message(file, knownFrom))
	}
	return out
}
