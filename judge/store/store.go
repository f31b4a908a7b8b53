// Package store keeps raw metric points for the judge's historical analysis.
//
// Two real implementations pass the conformance suite in store/storetest:
// store/elastic (go-elasticsearch/v8, the distributed shape) and store/sqlite
// (one embedded file, the embedded shape).
package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// Point is one stored measurement: a metric batch's point with its node and time.
type Point struct {
	Node   string
	Name   string
	Labels map[string]string // nil for node-level series
	TS     time.Time
	Value  float64
}

// Query selects one series over [From, To). Labels nil selects the points without
// labels (the node-level series); a non-nil map selects points carrying exactly those labels.
type Query struct {
	Node   string
	Name   string
	Labels map[string]string
	From   time.Time
	To     time.Time
}

// Stats summarises a series over a time range. P95 may be approximate where the
// engine computes percentiles with a sketch (Elasticsearch's TDigest); Count is exact.
type Stats struct {
	Count int64
	Avg   float64
	Max   float64
	P95   float64
}

// SeriesKey names a series of a known name: its node and labels (nil: none).
type SeriesKey struct {
	Node   string
	Labels map[string]string
}

// CompareSeries orders keys by node, then by their labels' canonical key: the order
// Series returns them in.
func CompareSeries(a, b SeriesKey) int {
	return compareSeries(a.Node, metric.LabelSetKey(a.Labels), b.Node, metric.LabelSetKey(b.Labels))
}

func compareSeries(aNode, aLabels, bNode, bLabels string) int {
	return cmp.Or(cmp.Compare(aNode, bNode), cmp.Compare(aLabels, bLabels))
}

// SortSeries sorts keys by CompareSeries, each label set's key built once rather than
// at every comparison.
func SortSeries(keys []SeriesKey) {
	type keyed struct {
		labels string
		key    SeriesKey
	}
	ks := make([]keyed, len(keys))
	for i, k := range keys {
		ks[i] = keyed{metric.LabelSetKey(k.Labels), k}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return compareSeries(a.key.Node, a.labels, b.key.Node, b.labels) })
	for i := range ks {
		keys[i] = ks[i].key
	}
}

// HourProfile is the hour-of-day profile of a series: Stats per UTC hour 0–23.
type HourProfile [24]Stats

// Store writes and queries raw points.
//
// Visibility: Write returns once the points are durable (a crash after it returns loses
// none of them), but queries and Scan may see them only after the store's refresh
// interval (Elasticsearch refreshes its indices every 10 s by default instead of on
// every write, which is much of what lets it ingest fast); SQLite shows them at once.
// Refresh makes every point whose Write returned visible now: tests, benchmarks and
// tools call it, and so should a reader that needs the latest points (a restart rebuild
// before its Scan); the judge's analyses, which read past hours, need not. Buffered's
// Refresh first waits until what it holds is written.
type Store interface {
	// Write stores points durably. A point's identity is (Node, Name, Labels, TS to the
	// millisecond): writing it again replaces the stored value, so retried or
	// redelivered batches do not count twice, and points of the same series and time
	// written by different calls both stay. If any point fails Point.Validate, none is
	// stored and the error wraps ErrInvalid. If the engine refuses some points for good
	// (an Elasticsearch mapping conflict), Write stores the others and then returns a
	// *RefusedError, which wraps ErrInvalid, counting the refused ones.
	Write(ctx context.Context, points []Point) error
	// Refresh makes every point whose Write has returned visible to the queries and to
	// Scan.
	Refresh(ctx context.Context) error
	// Stats returns count, avg, max and p95 of the selected series; Count 0 when empty.
	Stats(ctx context.Context, q Query) (Stats, error)
	// Profile returns the hour-of-day profile of the selected series over [From, To).
	Profile(ctx context.Context, q Query) (HourProfile, error)
	// Nodes lists the nodes with at least one point in [from, to), sorted.
	Nodes(ctx context.Context, from, to time.Time) ([]string, error)
	// Series lists the series named name with at least one point in [from, to), by
	// node and labels, sorted (SortSeries): where an instance's work was reported, on
	// the waves it left as on the one it runs on.
	Series(ctx context.Context, name string, from, to time.Time) ([]SeriesKey, error)
	// Scan delivers every point with from ≤ TS < to, of every node, to fn in chunks, in
	// non-decreasing TS order across chunks (the order of points with the same TS is
	// unspecified). It stops at fn's first error and returns it (wrapped); an empty or
	// inverted range calls fn never. The chunk is valid only during the call, and the
	// points' Labels maps may be shared between points: fn must copy what it keeps and
	// modify neither. A point that becomes visible while the scan runs is delivered only
	// if the scan has not yet passed its time. It is what the judge reads to rebuild its
	// in-memory analysis on restart (after a Refresh, so that the points written in the
	// last refresh interval before the stop are there).
	Scan(ctx context.Context, from, to time.Time, fn func([]Point) error) error
	// DeleteBefore removes points older than t (retention). Records are not points: it
	// leaves them.
	DeleteBefore(ctx context.Context, t time.Time) error
	// WriteRecords stores records durably, as Write does points: each replaces the
	// record of its kind and key, or deletes it when its Value is empty (deleting a
	// missing record is no error). If any record fails Record.Validate, none is
	// written and the error wraps ErrInvalid.
	WriteRecords(ctx context.Context, recs []Record) error
	// Records returns every record of kind whose WriteRecords has returned, in no
	// particular order.
	Records(ctx context.Context, kind string) ([]Record, error)
	// Close releases the store. It is idempotent.
	Close() error
}

// ErrClosed is returned by a closed store.
var ErrClosed = errors.New("store closed")
