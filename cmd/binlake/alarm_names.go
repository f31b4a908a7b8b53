//go:build !agentonly

package main

import (
	"log/slog"
	"slices"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// knownFromSenders is what knownMetricNames() holds, for the warnings of the alarm, which
// has no store to look in.
const knownFromSenders = "a canonical metric or one the agents' collectors send"

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

// logUnknownMetrics logs a warning for each policy whose metric is not in known: a
// typo (cpu.utl) passes every other check and leaves the policy unable to fire. It is
// not an error: a sender of one's own may push a name nothing here has seen yet.
func logUnknownMetrics(logger *slog.Logger, pols []*policy.Policy, file string, known []string, knownFrom string) {
	for _, m := range unknownMetricMessages(pols, file, known, knownFrom) {
		logger.Warn(m)
	}
}
