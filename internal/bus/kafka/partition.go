package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/bus"

	kafkago "github.com/segmentio/kafka-go"
)

// compressionCodec resolves Options.Compression.
func compressionCodec(name string) (kafkago.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafkago.Gzip, nil
	case "snappy":
		return kafkago.Snappy, nil
	case "lz4":
		return kafkago.Lz4, nil
	case "zstd":
		return kafkago.Zstd, nil
	}
	return 0, fmt.Errorf("kafka bus: compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// compression is the codec of a checked Options.Compression.
func compression(name string) kafkago.Compression {
	c, _ := compressionCodec(name)
	return c
}

// partitionCounts caches the partition count of each topic a publisher writes, for as
// long as the shared metadata cache keeps it (Options.MetadataTTL).
type partitionCounts struct {
	mu    sync.Mutex
	count map[string]cachedCount
}

type cachedCount struct {
	parts []int // 0 … n-1, as the writer hands them to its balancer
	at    time.Time
}

// Partition returns the partition the writer sends a message with key to: the same
// Murmur2 balancer over the topic's partitions (bus.Partitioner). Keyless messages are
// spread (-1). The count comes from the transport's metadata cache, which the writer
// reads too; a count that changes (partitions added) moves keys, as Kafka's clients do.
func (p *publisher) Partition(ctx context.Context, topic string, key []byte) (int, error) {
	if key == nil {
		return -1, nil
	}
	parts, err := p.partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	return murmur2.Balance(kafkago.Message{Key: key}, parts...), nil
}

// murmur2 is stateless for keyed messages: one serves every publisher.
var murmur2 = &kafkago.Murmur2Balancer{}

func (p *publisher) partitions(ctx context.Context, topic string) ([]int, error) {
	c := &p.counts
	c.mu.Lock()
	cc, ok := c.count[topic]
	c.mu.Unlock()
	if ok && time.Since(cc.at) < p.b.opts.MetadataTTL {
		return cc.parts, nil
	}
	md, err := p.b.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		var terr error
		if len(md.Topics) == 1 {
			terr = md.Topics[0].Error
		}
		if terr == nil {
			terr = errors.New("no answer for the topic")
		}
		if unknownTopic(terr) {
			// A caller tells a deleted topic (bus.ErrUnknownTopic), which it may create
			// again, from one the cache has not learnt yet.
			terr = p.b.confirmUnknown(ctx, topic, terr)
		}
		return nil, fmt.Errorf("partitions of %s: %w", topic, terr)
	}
	n := len(md.Topics[0].Partitions)
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	c.mu.Lock()
	if c.count == nil {
		c.count = map[string]cachedCount{}
	}
	c.count[topic] = cachedCount{parts: parts, at: time.Now()}
	c.mu.Unlock()
	return parts, nil
}

// PublishTo writes msgs to one partition of topic as one produce request
// (bus.PartitionPublisher), without the writer's batching: the caller chose the
// partition with Partition and made the chunk. Kafka appends the record batch whole or
// not at all. The request is tried once, bounded by WriteTimeout.
func (p *publisher) PublishTo(ctx context.Context, topic string, partition int, msgs ...bus.Message) error {
	if p.isClosed() {
		return bus.ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := bus.CheckTopicName(topic); err != nil {
		return fmt.Errorf("publish to %s/%d: %w", topic, partition, err)
	}
	records := make([]kafkago.Record, len(msgs))
	var bytes int64
	for i, m := range msgs {
		if m.Topic != topic {
			return fmt.Errorf("publish to %s/%d: message %d is for topic %q", topic, partition, i, m.Topic)
		}
		size := int64(len(m.Key) + len(m.Value))
		if size > p.b.opts.BatchBytes {
			return fmt.Errorf("publish to %s: a message of %d bytes exceeds the batch bytes %d: %w", topic, size, p.b.opts.BatchBytes, bus.ErrMessageTooLarge)
		}
		bytes += size
		records[i] = kafkago.Record{Time: m.Time, Key: kafkago.NewBytes(m.Key), Value: kafkago.NewBytes(m.Value)}
	}
	if bytes > p.b.opts.BatchBytes {
		return fmt.Errorf("publish to %s/%d: %d messages of %d bytes exceed the batch bytes %d in one request: %w",
			topic, partition, len(msgs), bytes, p.b.opts.BatchBytes, bus.ErrMessageTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %d messages: %w", len(msgs), err)
	}
	resp, err := p.b.client.Produce(ctx, &kafkago.ProduceRequest{Topic: topic, Partition: partition,
		RequiredAcks: kafkago.RequireAll, Records: kafkago.NewRecordReader(records...), Compression: compression(p.b.opts.Compression)})
	if err == nil {
		err = resp.Error
		for _, rerr := range resp.RecordErrors {
			err = errors.Join(err, rerr)
			break
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.ErrClosedPipe):
		return bus.ErrClosed
	case ctx.Err() != nil:
		return fmt.Errorf("publish %d messages: %w", len(msgs), err)
	case errors.Is(err, kafkago.MessageSizeTooLarge):
		return p.refusedAsTooLarge(ctx, topic, fmt.Sprintf("%s/%d", topic, partition), msgs, err)
	case unknownTopic(err):
		return fmt.Errorf("publish %d messages to %s/%d: %w", len(msgs), topic, partition, p.b.confirmUnknown(ctx, topic, err))
	}
	return fmt.Errorf("publish %d messages to %s/%d: %w", len(msgs), topic, partition, p.b.explain(ctx, classify(err)))
}
