package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

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
		return nil, fmt.Errorf("partitions of %s: %v", topic, terr)
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
