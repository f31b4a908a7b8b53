package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/internal/check"
)

// runGeneration handles one assignment of partitions: a worker per partition and a
// committer, until ctx ends, the group rebalances (the generation ends) or a worker or
// the committer fails (its error). It returns once the workers stopped and what they
// finished is committed.
func (s *subscriber) runGeneration(ctx context.Context, gen *kafkago.Generation, h bus.Handler, log *slog.Logger) error {
	parts := gen.Assignments[s.opts.Topic]
	log.Debug("partitions assigned", "generation", gen.ID, "partitions", len(parts))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once    sync.Once
		failure error
		workers sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { failure = err })
		cancel()
	}
	idle := make(chan struct{}) // closed when every worker has returned
	done := make(chan struct{}) // closed when the committer has returned
	c := &committer{gen: gen, topic: s.opts.Topic, group: s.opts.Group, acks: bus.NewAckTracker(),
		count: &s.b.commits, log: log}

	// Everything runs under gen.Start: kafka-go keeps the generation's coordinator
	// connection, which commits use, open until all of it returned, and joins the next
	// generation only then. The first function to return ends the generation for all.
	gen.Start(func(gctx context.Context) {
		defer close(done)
		stop := context.AfterFunc(gctx, cancel) // a rebalance ends the workers
		defer stop()
		if err := c.run(wctx, s.b.opts.CommitInterval, idle); err != nil {
			fail(err)
		}
	})
	workers.Add(len(parts))
	for _, p := range parts {
		gen.Start(func(context.Context) {
			defer workers.Done()
			if err := s.consume(wctx, p, h, c.acks); err != nil {
				fail(err)
			}
		})
	}
	workers.Wait()
	close(idle)
	<-done
	return failure
}

// consume hands one partition's messages to h, in order, from the assignment's offset
// until ctx ends (nil) or fetching or h fails (the error).
func (s *subscriber) consume(ctx context.Context, p kafkago.PartitionAssignment, h bus.Handler, acks *bus.AckTracker) error {
	o := s.b.opts
	info, errs := s.b.loggers()
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:        o.Brokers,
		Topic:          s.opts.Topic,
		Partition:      p.ID,
		Dialer:         s.b.dialer,
		MinBytes:       1,
		MaxBytes:       o.MaxBytes,
		MaxWait:        o.MaxWait,
		ReadBackoffMin: o.ReadBackoffMin,
		ReadBackoffMax: o.ReadBackoffMax,
		Logger:         info,
		ErrorLogger:    errs,
	})
	defer r.Close()
	// The assignment's offset is the group's committed position, or the start position
	// (kafka-go's FirstOffset or LastOffset) for a partition never committed.
	if err := r.SetOffset(p.Offset); err != nil {
		return fmt.Errorf("subscribe to %s as group %s: partition %d at offset %d: %w", s.opts.Topic, s.opts.Group, p.ID, p.Offset, err)
	}
	for {
		m, err := r.FetchMessage(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("subscribe to %s as group %s: fetch partition %d: %w", s.opts.Topic, s.opts.Group, p.ID, err)
		}
		hctx, entry := acks.Add(ctx, m.Partition, m.Offset)
		herr := h(hctx, bus.Message{
			Topic: m.Topic, Key: m.Key, Value: m.Value, Time: m.Time,
			Partition: m.Partition, Offset: m.Offset,
		})
		if herr != nil {
			if check.Canceled(ctx, herr) {
				return nil
			}
			return herr
		}
		entry.Handled()
	}
}
