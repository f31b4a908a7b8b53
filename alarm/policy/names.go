package policy

import (
	"fmt"
	"slices"
)

// UnknownMetric is a policy watching a metric that nothing known sends: most often a
// typo (cpu.utl), which passes every other check and leaves the policy unable to fire.
// It is a warning, not an error: a sender of one's own may push a name no one has seen
// yet.
type UnknownMetric struct {
	Policy string
	Line   int // of the policy's metric key
	Metric string
	// Closest is the known name nearest to Metric in edits, "" when none is near enough
	// to be a likely typo.
	Closest string
}

// Message is the warning: file and line, the policy, its metric and the closest known
// name. knownFrom says what the name was looked up in ("a canonical metric or one the
// agents' collectors send").
func (u UnknownMetric) Message(file, knownFrom string) string {
	s := fmt.Sprintf("%s:%d: policy %q watches metric %q, which is not %s: the policy can never fire", file, u.Line, u.Policy, u.Metric, knownFrom)
	if u.Closest != "" {
		s += "; did you mean " + u.Closest + "?"
	}
	return s
}

// UnknownMetrics returns, in file order, the policies whose metric is not in known, each
// with the closest known name. A nodata policy without a metric watches every batch and
// is never unknown.
func UnknownMetrics(pols []*Policy, known []string) []UnknownMetric {
	set := make(map[string]bool, len(known))
	for _, k := range known {
		set[k] = true
	}
	sorted := slices.Clone(known)
	slices.Sort(sorted) // ties go to the first name in order, whatever the callers' order
	var out []UnknownMetric
	for _, p := range pols {
		if p.Metric == "" || set[p.Metric] {
			continue
		}
		out = append(out, UnknownMetric{Policy: p.Name, Line: p.MetricLine, Metric: p.Metric, Closest: Closest(p.Metric, sorted)})
	}
	return out
}

// Closest returns the name of names nearest to s in edits (insertions, deletions,
// substitutions and swaps of two neighbours), the first in names' order of the nearest,
// or "" when even the nearest takes more than a third of s's length in edits (at least
// two are allowed): farther than that is another name, not a typo.
func Closest(s string, names []string) string {
	limit := max(2, len(s)/3)
	best, bestD := "", limit+1
	for _, n := range names {
		if d := editDistance(s, n, bestD); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b (Levenshtein's, with
// the swap of two adjacent bytes as one edit), capped at bound: names are short, so only
// a length difference of bound or more is cut short.
func editDistance(a, b string, bound int) int {
	if d := len(a) - len(b); d >= bound || -d >= bound {
		return bound
	}
	// Three rows: the one before the previous, for swaps.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], bound)
}
