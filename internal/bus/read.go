package bus

import (
	"context"
	"errors"
	"time"
)

// Reader reads a topic's partitions from chosen positions, outside any consumer group:
// nothing is committed and no other reader is affected. `binlake tail` reads with it;
// bus/kafka and the wave's file sink (wave/sink) implement it.
type Reader interface {
	// Read delivers the messages of opts.Topic to h: each partition's in order, the
	// partitions one after the other, up to each partition's end as it was when Read
	// started. With opts.Follow it then waits for new messages, delivering them as they
	// come (from every partition at once, still one call at a time), until ctx ends.
	// Read returns nil when it reached the end or ctx ended, and h's error if h fails.
	Read(ctx context.Context, opts ReadOptions, h func(Message) error) error
}

// ReadOptions chooses what a Reader reads.
type ReadOptions struct {
	Topic string
	// Partitions are the partitions to read; every partition of the topic when empty.
	Partitions []int
	// From is where each partition's reading starts.
	From From
	// Follow keeps reading new messages after the end.
	Follow bool
}

// From is a position in each partition of a topic.
type From struct {
	Kind FromKind
	// N is the offset for FromOffset and how many messages before the end for FromLast.
	N int64
	// Time is the earliest message time for FromTime.
	Time time.Time
}

// FromKind is the kind of a From.
type FromKind int

const (
	// FromOldest starts at the oldest retained message.
	FromOldest FromKind = iota
	// FromNewest starts at the end: only messages published from then on (with Follow).
	FromNewest
	// FromOffset starts at offset N (the oldest retained one when N is older, the end
	// when N is past it).
	FromOffset
	// FromLast starts N messages before the end (at the oldest when there are fewer).
	FromLast
	// FromTime starts at the first message whose time is Time or later.
	FromTime
)

// ErrNoSuchPartition is returned by Read for a partition the topic does not have.
var ErrNoSuchPartition = errors.New("no such partition")

// ErrNotSupported is returned for a From a Reader cannot honour (a rows file has no
// message times).
var ErrNotSupported = errors.New("not supported")
