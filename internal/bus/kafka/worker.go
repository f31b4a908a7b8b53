package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// until ctx ends (nil) or fetching or h fails (the error). An offset out of the
// partition's range (the group's committed offset past the end of a topic deleted and
// created again, or before its start after retention) is read from the partition's
// first message: Kafka's auto.offset.reset=earliest, never a skip forward past messages
// that are there.
func (s *subscriber) consume(ctx context.Context, p kafkago.PartitionAssignment, h bus.Handler, acks *bus.AckTracker) error {
	offset := p.Offset
	for {
		next, err := s.consumeFrom(ctx, p.ID, offset, h, acks)
		if ctx.Err() != nil || !errors.Is(err, kafkago.OffsetOutOfRange) {
			return err
		}
		if offset, err = s.outOfRange(ctx, p.ID, next, next == p.Offset); err != nil {
			return err
		}
	}
}

// kafkaGoPastEnd begins what kafka-go's reader logs when a fetch found its offset past
// the partition's end (Reader.run, v0.4.51), which it then retries.
const kafkaGoPastEnd = "the kafka reader is reading passed the last offset"

// consumeFrom reads partition part from offset with a Reader of its own until ctx ends,
// fetching or h fails. It returns the offset the reader would read next.
func (s *subscriber) consumeFrom(ctx context.Context, part int, offset int64, h bus.Handler, acks *bus.AckTracker) (int64, error) {
	o := s.b.opts
	info, warn := s.b.loggers()
	// A reader already reading when its offset went past the end (the topic created
	// again under its connection) only logs that, and waits for the partition to grow:
	// that line ends the fetch, and the offset is out of range as above.
	fctx, endFetch := context.WithCancel(ctx)
	defer endFetch()
	var pastEnd atomic.Bool
	errs := kafkago.LoggerFunc(func(format string, args ...any) {
		if strings.HasPrefix(format, kafkaGoPastEnd) {
			pastEnd.Store(true)
			endFetch()
			return // outOfRange says it in its own words
		}
		warn.Printf(format, args...)
	})
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:        o.Brokers,
		Topic:          s.opts.Topic,
		Partition:      part,
		Dialer:         s.b.dialer,
		MinBytes:       1,
		MaxBytes:       o.MaxBytes,
		MaxWait:        o.MaxWait,
		ReadBackoffMin: o.ReadBackoffMin,
		ReadBackoffMax: o.ReadBackoffMax,
		Logger:         info,
		ErrorLogger:    errs,
		// An offset past the partition's end is returned (consume resets it), not
		// retried until the partition grows past it: kafka-go would wait there, logging
		// "Offset Out Of Range", while a topic created again fills up below it.
		OffsetOutOfRangeError: true,
	})
	defer r.Close()
	// The assignment's offset is the group's committed position, or the start position
	// (kafka-go's FirstOffset or LastOffset) for a partition never committed.
	if err := r.SetOffset(offset); err != nil {
		return offset, fmt.Errorf("subscribe to %s as group %s: partition %d at offset %d: %w", s.opts.Topic, s.opts.Group, part, offset, err)
	}
	for {
		m, err := r.FetchMessage(fctx)
		switch {
		case ctx.Err() != nil:
			return r.Offset(), nil
		case pastEnd.Load():
			return r.Offset(), fmt.Errorf("subscribe to %s as group %s: fetch partition %d: %w", s.opts.Topic, s.opts.Group, part, kafkago.OffsetOutOfRange)
		case err != nil:
			return r.Offset(), fmt.Errorf("subscribe to %s as group %s: fetch partition %d: %w", s.opts.Topic, s.opts.Group, part, err)
		}
		hctx, entry := acks.Add(ctx, m.Partition, m.Offset)
		herr := h(hctx, bus.Message{
			Topic: m.Topic, Key: m.Key, Value: m.Value, Time: m.Time,
			Partition: m.Partition, Offset: m.Offset,
		})
		if herr != nil {
			if check.Canceled(ctx, herr) {
				return r.Offset(), nil
			}
			return r.Offset(), herr
		}
		entry.Handled()
	}
}

// outOfRange returns where to read partition part from after offset was out of its
// range: its first offset when offset is past its end or before its start (with a WARN),
// offset itself when it is in range again (messages came meanwhile). committed says the
// offset is the group's committed one (not one this member read up to).
func (s *subscriber) outOfRange(ctx context.Context, part int, offset int64, committed bool) (int64, error) {
	first, last, err := s.b.partitionRange(ctx, s.opts.Topic, part)
	if err != nil {
		return 0, fmt.Errorf("subscribe to %s as group %s: partition %d: offset %d out of range: %w", s.opts.Topic, s.opts.Group, part, offset, err)
	}
	what := "offset"
	if committed {
		what = "committed offset"
	}
	log := s.b.log.With("topic", s.opts.Topic, "group", s.opts.Group, "partition", part, "offset", offset, "start", first, "end", last)
	switch {
	case offset > last:
		log.Warn(fmt.Sprintf("%s %d is past the end %d of the topic (deleted and created again?); reading from its start", what, offset, last))
		return first, nil
	case offset >= 0 && offset < first:
		log.Warn(fmt.Sprintf("%s %d is before the start %d of the partition (deleted by retention?); reading from its start", what, offset, first))
		return first, nil
	}
	// In range by now: read it again, after a pause lest a broker that keeps answering
	// so spin the worker.
	t := time.NewTimer(s.b.opts.ReadBackoffMax)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return offset, nil
}

// partitionRange returns the first offset of a topic's partition and its end (the
// offset its next message will get). One request per kind of offset: a ListOffsets
// request may name a partition once.
func (b *Bus) partitionRange(ctx context.Context, topic string, part int) (first, last int64, err error) {
	list := func(req kafkago.OffsetRequest, what string) (kafkago.PartitionOffsets, error) {
		resp, err := b.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: {req}}})
		if err != nil {
			return kafkago.PartitionOffsets{}, fmt.Errorf("list its %s offset: %w", what, b.explain(ctx, err))
		}
		for _, po := range resp.Topics[topic] {
			if po.Partition == part {
				if po.Error != nil {
					return po, fmt.Errorf("list its %s offset: %w", what, po.Error)
				}
				return po, nil
			}
		}
		return kafkago.PartitionOffsets{}, fmt.Errorf("list its %s offset: no answer for the partition", what)
	}
	lo, err := list(kafkago.FirstOffsetOf(part), "first")
	if err != nil {
		return 0, 0, err
	}
	hi, err := list(kafkago.LastOffsetOf(part), "last")
	if err != nil {
		return 0, 0, err
	}
	return lo.FirstOffset, hi.LastOffset, nil
}
