package alarm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
)

// History reads back what a partition of the metric stream carried before a message, so
// that a process that just took the partition (a start, a restart, a rebalance) evaluates
// its time windows on the whole window: reading from its committed position alone, an
// avg_over(5m) a minute after a restart averaged that minute, and the default
// replication-lag policy paged at 92 s where the five-minute mean was 58. Two
// implementations: alarm/history.Bus reads Kafka's retained messages (the distributed
// shape), alarm/history.Store the judge's store (`binlake up`, whose in-process bus
// starts empty).
type History interface {
	// ReadBack calls fn, in the order it holds them, with the batches of first's
	// partition from before first that the lookback before first's time covers; it may
	// give more (older points, or a node's points at its own clock's time), as the
	// engine keeps only what its windows hold and skips what it already has. A message
	// that is not a valid batch is skipped and counted. It stops at fn's first error and
	// returns it; it returns ctx's error when ctx ends first.
	ReadBack(ctx context.Context, first bus.Message, lookback time.Duration, fn func(metric.Batch) error) (skipped int, err error)
	// String names where it reads, for the log.
	String() string
}

// readBackTimeout bounds one read back: the partition's messages wait for it, and a
// history that cannot be read in time costs the windows their past, not the stream.
const readBackTimeout = 30 * time.Second

// readBack decides when a partition's history is read back: at the first message the
// process handles of it, and after a gap in its offsets (the messages between were
// handled by another process while this one held the partition's nodes), and not again
// until the partition is released.
type readBack struct {
	h        History
	lookback time.Duration
	timeout  time.Duration

	mu   sync.Mutex
	next map[int]int64 // partition → the offset after the last message handled
}

// due reports whether m's partition must be read back before m is handled, and records m
// as handled.
func (r *readBack) due(m bus.Message) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, known := r.next[m.Partition]
	r.next[m.Partition] = max(next, m.Offset+1)
	// A message before next is a redelivery: the process holds what came before it.
	return !known || m.Offset > next
}

// forget makes the partitions' next messages read back again: their nodes were
// released.
func (r *readBack) forget(parts []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range parts {
		delete(r.next, p)
	}
}

// readBack reads back the history of m's partition before m into the engine's windows,
// when it is due (before the first message of a partition, after a gap). It returns
// false when ctx ended meanwhile (the partition was taken away, or the process stops):
// the points read are dropped, and m must not be evaluated, on windows holding only the
// oldest part of their past; it comes again, here or to the process that took the
// partition, and is read back then. A read that fails or runs out of time is logged and
// counted, its points are dropped, and the windows start from m, as without a history.
func (a *Alarm) readBack(ctx context.Context, m bus.Message) bool {
	r := a.back
	if r == nil || !r.due(m) {
		return true
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := time.Now()
	batches, points := 0, 0
	var first time.Time
	nodes := map[string]bool{}
	skipped, err := r.h.ReadBack(ctx, m, r.lookback, func(hb metric.Batch) error {
		batches++
		points += a.eng.Warm(hb)
		nodes[hb.Node] = true
		if first.IsZero() || hb.TS.Before(first) {
			first = hb.TS
		}
		return nil
	})
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		a.eng.Unwarm(slices.Collect(maps.Keys(nodes)))
	}
	if err != nil && parent.Err() != nil {
		r.forget([]int{m.Partition})
		a.log.Info("reading the partition's history back was cut short: the partition was taken away, or the process stops; its message comes again",
			"partition", m.Partition, "batches_read", batches, "took", took)
		return false
	}
	a.m.historyBatches.Add(float64(batches))
	if err != nil {
		// Not tried again: a history that cannot be read would hold every message of the
		// partition as long.
		a.m.historyErrors.Inc()
		a.log.Warn("reading the partition's history back failed: its time windows start from the stream's position",
			"partition", m.Partition, "from", r.h.String(), "lookback", r.lookback, "batches_read_and_dropped", batches, "took", took, "err", err)
		return true
	}
	attrs := []any{"partition", m.Partition, "from", r.h.String(), "lookback", r.lookback,
		"batches", batches, "nodes", len(nodes), "points_kept", points, "took", took}
	if !first.IsZero() {
		// Later than the lookback's start: the bus had no more (retention, a new topic).
		attrs = append(attrs, "oldest_batch", first)
	}
	if skipped > 0 {
		attrs = append(attrs, "skipped_undecodable", skipped)
	}
	a.log.Info("read the partition's history back into the policies' time windows", attrs...)
	return true
}

// newReadBack returns the read back of o.History, nil when there is none or no policy
// looks back.
func newReadBack(h History, e *Engine) *readBack {
	lb := e.Lookback()
	if h == nil || lb == 0 {
		return nil
	}
	return &readBack{h: h, lookback: lb, timeout: readBackTimeout, next: map[int]int64{}}
}

// describeHistory names the read back for the start-up line.
func describeHistory(r *readBack) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%s, %s before a partition's first message", r.h, r.lookback)
}
