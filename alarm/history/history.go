// Package history reads the metric stream's past back for the alarm (alarm.History):
// Bus from the bus's retained messages (Kafka, the distributed shape), Store from the
// judge's store (`binlake up`, whose in-process bus starts empty at each start).
package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// Bus reads a partition's history from the bus's retained messages (bus.Reader:
// bus/kafka), from the first message published at the window's start, outside any
// consumer group: nothing is committed.
type Bus struct {
	Reader bus.Reader
	Topic  string
	// Now is the clock (time.Now when nil): a first message dated ahead of it (a node's
	// clock) reads from the lookback before now, not before its time.
	Now func() time.Time
}

// errReached ends a read at the message the history comes before.
var errReached = errors.New("reached the first message")

// ReadBack implements alarm.History: the partition's messages from lookback before
// first's time (or now, when first is dated ahead of it) up to first, by the messages'
// times (Kafka's FromTime), every batch among them whatever its own time: a node whose
// clock is off is read all the same, and a batch dated after first's but published
// before it is history.
func (h Bus) ReadBack(ctx context.Context, first bus.Message, lookback time.Duration, fn func(metric.Batch) error) (skipped int, err error) {
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	from := now
	if !first.Time.IsZero() {
		from = minTime(first.Time, now)
	}
	dec := metric.NewDecoder()
	err = h.Reader.Read(ctx, bus.ReadOptions{Topic: h.Topic, Partitions: []int{first.Partition},
		From: bus.From{Kind: bus.FromTime, Time: from.Add(-lookback)}}, func(m bus.Message) error {
		if m.Offset >= first.Offset {
			return errReached
		}
		b, err := dec.Decode(m.Value)
		if err != nil {
			skipped++
			return nil
		}
		return fn(b)
	})
	if errors.Is(err, errReached) {
		err = nil
	}
	if err == nil {
		err = ctx.Err() // Read ends quietly with ctx: the history was cut short
	}
	return skipped, err
}

func (h Bus) String() string { return "the bus's topic " + h.Topic }

// Store reads the history from the judge's store (judge/store): every point it holds
// from lookback before first's time, less ClockSkew, on, regrouped into one batch per
// node and time (Batcher). A store has no partitions and no offsets: it reads every
// node's points, which is the whole stream where the bus has a single partition
// (`binlake up`), up to the newest, those the judge stored of this run's first batches
// too (the engine skips them then, as redeliveries). ClockSkew widens the read for the
// nodes whose clocks run behind; the engine keeps of each series only its window before
// its newest point.
type Store struct {
	Store store.Store
	// Path names the store for the log.
	Path string
	// FirstInterval is a node's interval until its second batch measures it (the
	// agents' default).
	FirstInterval time.Duration
	// ClockSkew is how far a node's clock may be off the alarm's and its history still
	// be read (DefaultClockSkew when zero): the read starts that much earlier and ends
	// that much after now.
	ClockSkew time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultClockSkew is Store's ClockSkew by default: the judge's limit on a batch dated
// ahead of its clock.
const DefaultClockSkew = 10 * time.Minute

// ReadBack implements alarm.History.
func (h Store) ReadBack(ctx context.Context, first bus.Message, lookback time.Duration, fn func(metric.Batch) error) (int, error) {
	skew, now := h.ClockSkew, time.Now()
	if skew <= 0 {
		skew = DefaultClockSkew
	}
	if h.Now != nil {
		now = h.Now()
	}
	from, to := now, now
	if !first.Time.IsZero() {
		from, to = minTime(first.Time, now), maxTime(first.Time, now)
	}
	// The points the judge wrote last may not be visible yet (Elasticsearch's refresh).
	if err := h.Store.Refresh(ctx); err != nil {
		return 0, fmt.Errorf("history: refresh the store: %w", err)
	}
	bt := NewBatcher(0, h.FirstInterval, fn)
	err := h.Store.Scan(ctx, from.Add(-lookback-skew), to.Add(skew), bt.Add)
	if err == nil {
		err = bt.Flush()
	}
	return 0, err
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (h Store) String() string { return "the judge's store " + h.Path }
