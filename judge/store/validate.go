package store

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/metric"
)

// Limits on what a point may carry: the metric batch's own (internal/metric), so that
// every point of a batch the decoder accepted is storable. They keep one bad batch from
// producing documents or rows that the engines reject later, far from the cause.
const (
	MaxLabels    = metric.MaxLabels
	minTimestamp = 0 // the Unix epoch: hour-of-day arithmetic assumes non-negative times
)

// ErrInvalid marks input a store refuses for good: a point or query that fails
// Validate, or a point the engine rejects for a reason a retry will not change. The
// buffer drops such batches instead of retrying them; the HTTP layer answers 400.
var ErrInvalid = errors.New("invalid input")

// Validate reports, wrapping ErrInvalid, the first problem that would make p unstorable: an empty or oversized
// node or name, a metric name or label key outside the wire format's grammar
// (metric.ValidName, metric.ValidLabelKey), too many or oversized labels, a value that is
// not finite (JSON and the engines' double fields cannot carry NaN or ±Inf), or a zero or
// pre-1970 timestamp. The grammar matters to the Elasticsearch store, where a metric name
// is a field path (m.<name>) and a label key a field (labels.<key>): another character
// could nest objects or act as a wildcard. Both stores enforce it, so that they accept
// the same points.
func (p Point) Validate() error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (p Point) validate() error {
	if err := checkIdent("node", p.Node, metric.MaxNodeLen); err != nil {
		return err
	}
	if err := checkName(p.Name); err != nil {
		return fmt.Errorf("node %q: %w", p.Node, err)
	}
	if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		return fmt.Errorf("point %s/%s: value %v is not finite", p.Node, p.Name, p.Value)
	}
	if p.TS.IsZero() || p.TS.UnixMilli() < minTimestamp {
		return fmt.Errorf("point %s/%s: timestamp %s is before 1970", p.Node, p.Name, p.TS.Format(time.RFC3339))
	}
	if len(p.Labels) > MaxLabels {
		return fmt.Errorf("point %s/%s: %d labels, at most %d", p.Node, p.Name, len(p.Labels), MaxLabels)
	}
	for k, v := range p.Labels {
		if !metric.ValidLabelKey(k) {
			if err := checkIdent("label key", k, metric.MaxLabelKeyLen); err != nil {
				return fmt.Errorf("point %s/%s: %w", p.Node, p.Name, err)
			}
			return fmt.Errorf("point %s/%s: label key %q: want [A-Za-z_][A-Za-z0-9_]*, at most %d bytes", p.Node, p.Name, k, metric.MaxLabelKeyLen)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("point %s/%s: label %q value is not valid UTF-8", p.Node, p.Name, k)
		}
		if len(v) > metric.MaxLabelValueLen {
			return fmt.Errorf("point %s/%s: label %q value is %d bytes, at most %d", p.Node, p.Name, k, len(v), metric.MaxLabelValueLen)
		}
	}
	return nil
}

// ValidatePoints validates every point of a batch and reports the first bad one by its
// index, wrapping ErrInvalid. Stores call it before touching anything, so that a bad
// batch stores nothing.
func ValidatePoints(points []Point) error {
	for i, p := range points {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("point %d: %w", i, err)
		}
	}
	return nil
}

// Validate reports, wrapping ErrInvalid, a query that names no series or a metric name
// no point can have. An empty or inverted time range is not an error: it selects nothing.
func (q Query) Validate() error {
	if err := checkIdent("query node", q.Node, metric.MaxNodeLen); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := checkName(q.Name); err != nil {
		return fmt.Errorf("%w: query: %w", ErrInvalid, err)
	}
	return nil
}

// checkName checks a metric name against the wire format's grammar.
func checkName(name string) error {
	if metric.ValidName(name) { // non-empty, short ASCII: checkIdent has nothing to add
		return nil
	}
	if err := checkIdent("metric name", name, metric.MaxNameLen); err != nil {
		return err
	}
	return fmt.Errorf("metric name %q: want lowercase letters, digits, '.' and '_', starting with a letter, no empty dot-separated part, at most %d bytes",
		name, metric.MaxNameLen)
}

func checkIdent(what, s string, maxLen int) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", what)
	case len(s) > maxLen:
		return fmt.Errorf("%s is %d bytes, at most %d", what, len(s), maxLen)
	case !utf8.ValidString(s):
		// JSON would replace the bad bytes, silently merging distinct series.
		return fmt.Errorf("%s %q is not valid UTF-8", what, s)
	}
	return nil
}

// P95 is the reference 95th percentile the exact stores compute and the conformance suite
// checks against: linear interpolation between the two closest ranks of the sorted values
// (Hyndman–Fan type 7, the default of numpy and of most spreadsheets). sorted must be in
// ascending order; P95 of no values is 0.
func P95(sorted []float64) float64 {
	return Quantile(sorted, 0.95)
}

// Quantile is the type-7 quantile q in [0,1] of ascending sorted values; 0 when empty.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}
