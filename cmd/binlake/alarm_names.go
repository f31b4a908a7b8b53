//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/client"
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

// knownToJudge is knownMetricNames with the names the judge at url has seen, and what
// they are for the warnings; with no url, or a judge that cannot answer (the error says
// so, and that only the senders' names are known), the senders' names alone.
func knownToJudge(ctx context.Context, url, caFile string) (known []string, knownFrom string, err error) {
	if url == "" {
		return knownMetricNames(), knownFromSenders, nil
	}
	hc, err := httpapi.Client(caFile, client.DefaultTimeout)
	if err != nil {
		return knownMetricNames(), knownFromSenders, fmt.Errorf("-judge-ca-file: %w", err)
	}
	names, err := (&client.Client{URL: url, HTTP: hc}).MetricNames(ctx)
	if err != nil {
		return knownMetricNames(), knownFromSenders, fmt.Errorf("the judge at %s: %w; policies are checked against the names the agents' collectors send only", url, err)
	}
	return knownMetricNames(names.Names), "a canonical metric, one the agents' collectors send, or one the judge at " + url + " has seen", nil
}
