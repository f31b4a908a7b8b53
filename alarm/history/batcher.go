package history

import (
	"maps"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// measuredGaps is how many of a node's last gaps between batches its measured interval
// is the median of: one restart (a short gap) or outage (a long one) does not move it.
const measuredGaps = 5

// Batcher turns stored points back into the metric batches they came in: the store keeps
// each point with its node and its batch's time, so the points of one node and time are
// one batch. Points must come in non-decreasing time order (store.Scan's); batches go to
// emit in time order, then node order. The store does not keep a batch's interval_s:
// with fixed set every batch declares it, else each node's is measured, as the median of
// its last gaps between batches (first, the agents' default, before its second batch).
// `binlake alarm test` replays the store's history with it; Store reads it back.
type Batcher struct {
	fixed, first time.Duration
	emit         func(metric.Batch) error

	ts      time.Time
	pending map[string][]metric.Point // node → its points at ts
	nodes   map[string]*nodeClock

	batches int
	names   map[string]bool // every metric name seen
}

type nodeClock struct {
	last time.Time
	gaps []time.Duration // the last measuredGaps, oldest first
}

// NewBatcher returns a Batcher that hands each batch to emit; fixed, when positive, is
// every batch's interval, first a node's before its second batch.
func NewBatcher(fixed, first time.Duration, emit func(metric.Batch) error) *Batcher {
	return &Batcher{fixed: fixed, first: first, emit: emit, pending: map[string][]metric.Point{}, nodes: map[string]*nodeClock{}, names: map[string]bool{}}
}

// Add takes one chunk of a scan (store.Store's Scan). It copies what it keeps: a scan's chunk and labels are
// valid only during the call.
func (b *Batcher) Add(pts []store.Point) error {
	for i := range pts {
		p := &pts[i]
		if !p.TS.Equal(b.ts) {
			if err := b.Flush(); err != nil {
				return err
			}
			b.ts = p.TS
		}
		b.names[p.Name] = true
		b.pending[p.Node] = append(b.pending[p.Node], metric.Point{Name: p.Name, Value: p.Value, Labels: maps.Clone(p.Labels)})
	}
	return nil
}

// Flush emits the batches of the current time: after the scan's last chunk.
func (b *Batcher) Flush() error {
	nodes := slices.Sorted(maps.Keys(b.pending))
	for _, node := range nodes {
		batch := metric.Batch{Node: node, TS: b.ts, IntervalS: b.interval(node, b.ts).Seconds(), Points: b.pending[node]}
		delete(b.pending, node)
		b.batches++
		if err := b.emit(batch); err != nil {
			return err
		}
	}
	return nil
}

// interval is the node's interval as of a batch at ts.
func (b *Batcher) interval(node string, ts time.Time) time.Duration {
	if b.fixed > 0 {
		return b.fixed
	}
	nc := b.nodes[node]
	if nc == nil {
		nc = &nodeClock{}
		b.nodes[node] = nc
	} else if gap := ts.Sub(nc.last); gap > 0 {
		if len(nc.gaps) == measuredGaps {
			nc.gaps = nc.gaps[1:]
		}
		nc.gaps = append(nc.gaps, gap)
	}
	nc.last = ts
	if len(nc.gaps) == 0 {
		return b.first
	}
	sorted := slices.Clone(nc.gaps)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)/2]
}

// Seen returns the metric names of the points added, sorted.
func (b *Batcher) Seen() []string { return slices.Sorted(maps.Keys(b.names)) }
