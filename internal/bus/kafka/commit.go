package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
)

// committer commits one generation's positions: what its workers finished, in
// partition order (bus.AckTracker), batched into one request per interval.
type committer struct {
	gen          *kafkago.Generation
	topic, group string
	acks         *bus.AckTracker
	count        *atomic.Int64 // the Bus's commit requests
	log          *slog.Logger
}

// run commits every interval until ctx ends, then waits until idle is closed (the
// workers returned: no handler is running) and commits what they finished, so that the
// member taking a partition over, or this one subscribing again, starts right after it.
// It returns early with an error only when a periodic commit fails for a reason other
// than a rebalance; the last commit's failure is logged (its messages are delivered
// again).
func (c *committer) run(ctx context.Context, interval time.Duration, idle <-chan struct{}) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			<-idle
			if err := c.commit(); err != nil {
				c.log.Warn("last commit of the generation failed; what was done since the previous one will be delivered again",
					"generation", c.gen.ID, "err", err)
			}
			return nil
		case <-tick.C:
		}
		switch err := c.commit(); {
		case err == nil:
		case rebalancing(err):
			// The generation is ending: its last commit tries again, and if that
			// fails the partitions' next owners resume from the previous commit.
			c.log.Warn("commit failed during a rebalance", "generation", c.gen.ID, "err", err)
		default:
			return err
		}
	}
}

// commit commits what the acks have ready, if anything.
func (c *committer) commit() error {
	ready := c.acks.Ready()
	if len(ready) == 0 {
		return nil
	}
	next := make(map[int]int64, len(ready))
	for p, off := range ready {
		next[p] = off + 1 // Kafka stores the offset to read next
	}
	c.count.Add(1)
	if err := c.gen.CommitOffsets(map[string]map[int]int64{c.topic: next}); err != nil {
		return fmt.Errorf("subscribe to %s as group %s: commit offsets %v: %w", c.topic, c.group, next, err)
	}
	c.acks.Committed(ready)
	return nil
}
