package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
)

var _ bus.Reader = (*Bus)(nil)

// readAttempts is how many failed fetches in a row end a Read that does not follow; a
// following one retries as long as it runs (a broker restart only pauses `tail -f`).
const readAttempts = 10

// Read reads opts.Topic from opts.From in each partition without a consumer group
// (bus.Reader): fetch requests from the partitions' leaders, nothing committed.
func (b *Bus) Read(ctx context.Context, opts bus.ReadOptions, h func(bus.Message) error) error {
	var herr error
	err := b.read(ctx, opts, func(m bus.Message) error {
		herr = h(m)
		return herr
	})
	if err != nil && err != herr && ctx.Err() != nil {
		// Ended by its caller (Ctrl-C), wherever it was: not a failure.
		return nil
	}
	return err
}

func (b *Bus) read(ctx context.Context, opts bus.ReadOptions, h func(bus.Message) error) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	if err := bus.CheckTopicName(opts.Topic); err != nil {
		return fmt.Errorf("read %s: %w", opts.Topic, err)
	}
	all, ok, err := b.topicPartitions(ctx, opts.Topic, b.opts.WriteTimeout)
	switch {
	case err != nil:
		return fmt.Errorf("read %s: %w", opts.Topic, err)
	case !ok:
		return fmt.Errorf("read %q: %w", opts.Topic, bus.ErrUnknownTopic)
	}
	parts := all
	if len(opts.Partitions) > 0 {
		parts = slices.Clone(opts.Partitions)
		slices.Sort(parts)
		parts = slices.Compact(parts)
		for _, p := range parts {
			if !slices.Contains(all, p) {
				return fmt.Errorf("read %s: partition %d: %w (the topic has %s)", opts.Topic, p, bus.ErrNoSuchPartition, partitionList(all))
			}
		}
	}
	starts, ends, err := b.positions(ctx, opts.Topic, parts, opts.From)
	if err != nil {
		return err
	}
	next := make(map[int]int64, len(parts))
	for _, p := range parts {
		if next[p], err = b.readPartition(ctx, opts.Topic, p, starts[p], ends[p], false, h); err != nil || ctx.Err() != nil {
			return err
		}
	}
	if !opts.Follow {
		return nil
	}
	// From the end on, every partition at once; h still takes one message at a time.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	serial := func(m bus.Message) error {
		mu.Lock()
		defer mu.Unlock()
		return h(m)
	}
	errs := make(chan error, len(parts))
	for _, p := range parts {
		go func() {
			_, err := b.readPartition(fctx, opts.Topic, p, next[p], -1, true, serial)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var first error
	for range parts {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func partitionList(parts []int) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return "partitions " + strings.Join(s, ", ")
}

// positions returns where each partition's reading starts and its end (the offset the
// next message will get) now.
func (b *Bus) positions(ctx context.Context, topic string, parts []int, from bus.From) (starts, ends map[int]int64, err error) {
	// One request per kind of offset: a ListOffsets request may name a partition once.
	list := func(ts func(int) kafkago.OffsetRequest, what string) (map[int]kafkago.PartitionOffsets, error) {
		reqs := make([]kafkago.OffsetRequest, len(parts))
		for i, p := range parts {
			reqs[i] = ts(p)
		}
		resp, err := b.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
		if err != nil {
			return nil, fmt.Errorf("read %s: list the %s offsets: %w", topic, what, b.explain(ctx, err))
		}
		out := map[int]kafkago.PartitionOffsets{}
		for _, po := range resp.Topics[topic] {
			if po.Error != nil {
				return nil, fmt.Errorf("read %s: partition %d: list the %s offset: %w", topic, po.Partition, what, po.Error)
			}
			out[po.Partition] = po
		}
		for _, p := range parts {
			if _, ok := out[p]; !ok {
				return nil, fmt.Errorf("read %s: partition %d: no %s offset in the broker's answer", topic, p, what)
			}
		}
		return out, nil
	}
	first, err := list(kafkago.FirstOffsetOf, "first")
	if err != nil {
		return nil, nil, err
	}
	last, err := list(kafkago.LastOffsetOf, "last")
	if err != nil {
		return nil, nil, err
	}
	var at map[int]kafkago.PartitionOffsets
	if from.Kind == bus.FromTime {
		if at, err = list(func(p int) kafkago.OffsetRequest { return kafkago.TimeOffsetOf(p, from.Time) }, "time"); err != nil {
			return nil, nil, err
		}
	}
	starts, ends = map[int]int64{}, map[int]int64{}
	for _, p := range parts {
		lo, hi := first[p].FirstOffset, last[p].LastOffset
		var s int64
		switch from.Kind {
		case bus.FromOldest:
			s = lo
		case bus.FromNewest:
			s = hi
		case bus.FromOffset:
			s = min(max(from.N, lo), hi)
		case bus.FromLast:
			s = max(hi-max(from.N, 0), lo)
		case bus.FromTime:
			s = hi // no message at or after the time: nothing before the end
			for off := range at[p].Offsets {
				if off >= 0 {
					s = min(max(off, lo), hi)
				}
			}
		default:
			return nil, nil, fmt.Errorf("read %s: unknown start kind %d", topic, from.Kind)
		}
		starts[p], ends[p] = s, hi
	}
	return starts, ends, nil
}

// readPartition delivers partition p's messages from offset next, up to until (not
// included; -1: for ever, as they come) and returns the offset after the last one. It
// returns nil when ctx ends.
func (b *Bus) readPartition(ctx context.Context, topic string, p int, next, until int64, follow bool, h func(bus.Message) error) (int64, error) {
	failed, empty := 0, 0
	backoff := b.opts.ReadBackoffMin
	for until < 0 || next < until {
		resp, err := b.client.Fetch(ctx, &kafkago.FetchRequest{Topic: topic, Partition: p, Offset: next,
			MinBytes: 1, MaxBytes: int64(b.opts.MaxBytes), MaxWait: b.opts.MaxWait})
		if err == nil && resp.Error != nil {
			err = resp.Error
			if errors.Is(err, kafkago.OffsetOutOfRange) {
				if first, ok := b.outOfRange(ctx, topic, p, next); ok {
					next, err = first, nil
					continue
				}
			}
		}
		if ctx.Err() != nil {
			return next, nil
		}
		if err != nil {
			failed++
			// A following read waits for a deleted topic to be created again (the agent
			// and the wave do so with their next message).
			if !(retriable(err) || follow && unknownTopic(err)) || (!follow && failed >= readAttempts) {
				return next, fmt.Errorf("read %s partition %d at offset %d: %w", topic, p, next, b.explain(ctx, err))
			}
			if failed&(failed-1) == 0 { // the 1st, 2nd, 4th, 8th… of a run: a missing topic is not a line a fetch
				b.log.Warn("read: fetch failed, retrying", "topic", topic, "partition", p, "offset", next, "attempt", failed, "err", err)
			}
			select {
			case <-ctx.Done():
				return next, nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, b.opts.ReadBackoffMax)
			continue
		}
		failed, backoff = 0, b.opts.ReadBackoffMin
		n, err := b.deliver(topic, p, resp.Records, &next, until, h)
		if err != nil {
			return next, err
		}
		switch {
		case n > 0:
			empty = 0
		case until >= 0 && resp.HighWatermark >= until:
			// The broker has the offsets up to until but sent none of them twice: they
			// are not readable records (transaction markers, compacted away).
			if empty++; empty >= 2 {
				return next, nil
			}
		}
	}
	return next, nil
}

// outOfRange is where to read partition p from when the broker says offset next is out
// of its range: its first offset, when the messages before it were deleted by retention
// or when the partition ends before next (the topic deleted and created again, as the
// agent does, or its log truncated), with a warning that says which. ok is false when
// next is in range by the partition's offsets now, or they cannot be read: the fetch's
// error stands.
func (b *Bus) outOfRange(ctx context.Context, topic string, p int, next int64) (first int64, ok bool) {
	starts, ends, err := b.positions(ctx, topic, []int{p}, bus.From{Kind: bus.FromOldest})
	if err != nil {
		return 0, false
	}
	first, last := starts[p], ends[p]
	switch {
	case next < first:
		b.log.Warn("read: messages deleted by retention before they were read", "topic", topic, "partition", p,
			"from", next, "to", first)
	case next > last:
		b.log.Warn("read: the partition ends before the offset being read (the topic was deleted and created again, or its log truncated): reading from its first offset",
			"topic", topic, "partition", p, "offset", next, "end", last, "first", first)
	default:
		return 0, false
	}
	return first, true
}

// deliver hands the records of one fetch answer, from *next on and before until (-1: no
// bound), to h, advancing *next, and returns how many it handed.
func (b *Bus) deliver(topic string, p int, records kafkago.RecordReader, next *int64, until int64, h func(bus.Message) error) (int, error) {
	defer closeRecords(records)
	n := 0
	for {
		r, err := records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read %s partition %d at offset %d: decode the broker's records: %w", topic, p, *next, err)
		}
		if r.Offset < *next {
			continue // a record batch starts before the offset asked for
		}
		if until >= 0 && r.Offset >= until {
			return n, nil
		}
		m := bus.Message{Topic: topic, Partition: p, Offset: r.Offset, Time: r.Time}
		if m.Key, err = readBytes(r.Key); err == nil {
			m.Value, err = readBytes(r.Value)
		}
		if err != nil {
			return n, fmt.Errorf("read %s partition %d offset %d: %w", topic, p, r.Offset, err)
		}
		*next = r.Offset + 1
		n++
		if err := h(m); err != nil {
			return n, err
		}
	}
}

func readBytes(b kafkago.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	return io.ReadAll(b)
}

func closeRecords(r kafkago.RecordReader) {
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
}

// retriable reports whether a fetch may succeed when tried again: a leader moving, a
// broker restarting, a connection dropped.
func retriable(err error) bool {
	var ke kafkago.Error
	if errors.As(err, &ke) {
		return ke.Temporary()
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, kafkago.BrokerNotAvailable)
}
