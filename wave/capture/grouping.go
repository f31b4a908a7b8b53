package capture

import (
	"context"

	"github.com/binlake/binlake/wave/rowenc"
)

// The partitions a subscription's keys go to, for the formats that put the rows of one
// rows event and partition in one message (rowenc.GroupFormat: canal-protobuf). The
// capture asks the bus that will publish them (Options.Partitioner), the same function
// the publisher splits messages by, so a group keyed by its first row lands on the
// partition each of its rows would have landed on alone. While a topic's partitions
// cannot be told (metadata unreachable), its rows go one per message, as for every
// other format, and a log line says so.

// topicPartitions tells the partitions of one topic's keys for the Encoder
// (rowenc.Target.Partition).
type topicPartitions struct {
	c     *Capture
	topic string
	// unknown: the last question failed (logged once until it succeeds again).
	unknown bool
	fn      func(key []byte) (int, bool)
}

// partitionOf is topic's Target.Partition, nil when the capture has no Partitioner.
func (c *Capture) partitionOf(topic string) func(key []byte) (int, bool) {
	if c.Partitioner == nil {
		return nil
	}
	tp := c.partitions[topic]
	if tp == nil {
		if c.partitions == nil {
			c.partitions = map[string]*topicPartitions{}
		}
		tp = &topicPartitions{c: c, topic: topic}
		tp.fn = tp.partition
		c.partitions[topic] = tp
	}
	return tp.fn
}

// partition asks the bus for key's partition, in the context of the encoding under way
// (Capture.encodeCtx).
func (tp *topicPartitions) partition(key []byte) (int, bool) {
	ctx := tp.c.encodeCtx
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := tp.c.Partitioner.Partition(ctx, tp.topic, key)
	switch {
	case err != nil && !tp.unknown:
		tp.unknown = true
		tp.c.Log.Warn("partitions of the topic unknown: its rows go one per message until known", "topic", tp.topic, "err", err)
	case err == nil && tp.unknown:
		tp.unknown = false
		tp.c.Log.Info("partitions of the topic known again: its rows go grouped by partition", "topic", tp.topic)
	}
	return p, err == nil && p >= 0
}

// groupBytes is the bound of a group message: the largest message the sink accepts,
// when that is below rowenc's default.
func (c *Capture) groupBytes() int {
	if c.MaxBytes > 0 && c.MaxBytes < rowenc.DefaultGroupBytes {
		return c.MaxBytes
	}
	return rowenc.DefaultGroupBytes
}
