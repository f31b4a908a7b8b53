//go:build !agentonly

package main

import (
	"maps"
	"slices"
	"time"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// measuredGaps is how many of a node's last gaps between batches its measured interval
// is the median of: one restart (a short gap) or outage (a long one) does not move it.
const measuredGaps = 5

// batcher turns stored points back into the metric batches they came in: the store keeps
// each point with its node and its batch's time, so the points of one node and time are
// one batch. Points must come in non-decreasing time order (store.Scan's); batches go to
// emit in time order, then node order. The store does not keep a batch's interval_s:
// with fixed set every batch declares it, else each node's is measured, as the median of
// its last gaps between batches (the agents' default interval before its second batch).
type batcher struct {
	fixed time.Duration
	emit  func(metric.Batch) error

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

func newBatcher(fixed time.Duration, emit func(metric.Batch) error) *batcher {
	return &batcher{fixed: fixed, emit: emit, pending: map[string][]metric.Point{}, nodes: map[string]*nodeClock{}, names: map[string]bool{}}
}

// add takes one chunk of a scan. It copies what it keeps: a scan's chunk and labels are
// valid only during the call.
func (b *batcher) add(pts []store.Point) error {
	for i := range pts {
		p := &pts[i]
		if !p.TS.Equal(b.ts) {
			if err := b.flush(); err != nil {
				return err
			}
			b.ts = p.TS
		}
		b.names[p.Name] = true
		b.pending[p.Node] = append(b.pending[p.Node], metric.Point{Name: p.Name, Value: p.Value, Labels: maps.Clone(p.Labels)})
	}
	return nil
}

// flush emits the batches of the current time.
func (b *batcher) flush() error {
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
func (b *batcher) interval(node string, ts time.Time) time.Duration {
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
		return agent.DefaultInterval
	}
	sorted := slices.Clone(nc.gaps)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)/2]
}

// seen returns the metric names of the points added, sorted.
func (b *batcher) seen() []string { return slices.Sorted(maps.Keys(b.names)) }
