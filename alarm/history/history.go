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
}

// errReached ends a read at the message the history comes before.
var errReached = errors.New("reached the first message")

// ReadBack implements alarm.History.
func (h Bus) ReadBack(ctx context.Context, first bus.Message, from, to time.Time, fn func(metric.Batch) error) (skipped int, err error) {
	dec := metric.NewDecoder()
	err = h.Reader.Read(ctx, bus.ReadOptions{Topic: h.Topic, Partitions: []int{first.Partition},
		From: bus.From{Kind: bus.FromTime, Time: from}}, func(m bus.Message) error {
		if m.Offset >= first.Offset {
			return errReached
		}
		b, err := dec.Decode(m.Value)
		if err != nil {
			skipped++
			return nil
		}
		if b.TS.Before(from) || !b.TS.Before(to) {
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
// of the window, regrouped into one batch per node and time (Batcher). A store has no partitions:
// it reads every node's, which is the whole stream where the bus has a single
// partition (`binlake up`), and points the engine already holds are skipped.
type Store struct {
	Store store.Store
	// Path names the store for the log.
	Path string
	// FirstInterval is a node's interval until its second batch measures it (the
	// agents' default).
	FirstInterval time.Duration
}

// ReadBack implements alarm.History.
func (h Store) ReadBack(ctx context.Context, _ bus.Message, from, to time.Time, fn func(metric.Batch) error) (int, error) {
	// The points the judge wrote last may not be visible yet (Elasticsearch's refresh).
	if err := h.Store.Refresh(ctx); err != nil {
		return 0, fmt.Errorf("history: refresh the store: %w", err)
	}
	bt := NewBatcher(0, h.FirstInterval, fn)
	err := h.Store.Scan(ctx, from, to, bt.Add)
	if err == nil {
		err = bt.Flush()
	}
	return 0, err
}

func (h Store) String() string { return "the judge's store " + h.Path }
