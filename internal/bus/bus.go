// Package bus moves keyed messages between the roles of BinLake-Go.
//
// Two real implementations satisfy these interfaces: bus/kafka (segmentio/kafka-go,
// the distributed shape) and bus/memory (in-process, the embedded shape). Both pass
// the conformance suite in bus/bustest, so business code never asks which one it has.
package bus

import (
	"context"
	"errors"
	"time"
)

// Message is one keyed record on a topic. Messages with the same key on the same
// topic are delivered in the order they were published.
type Message struct {
	Topic string
	Key   []byte
	Value []byte
	// Time is set by the publisher when zero.
	Time time.Time

	// Partition and Offset are filled on delivery; publishers ignore them.
	Partition int
	Offset    int64
}

// Handler processes one delivered message. A message is committed (and will not be
// delivered again to the same group) only after its handler returned nil, and, if the
// handler took an ack with Defer, after that ack was called. A handler
// error stops the subscription: Subscribe returns it and the message stays uncommitted,
// so a restarted subscriber of the same group sees it again (at-least-once).
//
// Concurrency: Subscribe never calls its handler concurrently with itself, whatever the
// number of partitions. SubscribeConcurrent (ConcurrentSubscriber) calls it from one
// goroutine per assigned partition at once, so a handler given to it must be safe for
// concurrent calls. Either way a partition's messages (and so one key's) are handled one
// at a time, in order. ctx ends when the subscription ends or the message's partition is
// taken away in a rebalance: a handler that then returns ctx's error has not failed, and
// its message is delivered again (here or to the member that took the partition over).
type Handler func(ctx context.Context, m Message) error

// Publisher writes messages.
type Publisher interface {
	// Publish returns after every message was acknowledged by the bus (for Kafka,
	// by all in-sync replicas), or with an error naming what failed. On error,
	// any subset of msgs may have been written.
	Publish(ctx context.Context, msgs ...Message) error
	// Close flushes and releases resources. It is idempotent.
	Close() error
}

// Syncer is a Publisher whose acknowledgement is not yet durable (a file sink without an
// fsync per Publish). The wave calls Sync before it commits an offset, so an offset never
// covers messages that a crash of the machine could take back.
type Syncer interface {
	// Sync makes the messages of every Publish that returned durable, or fails.
	Sync() error
}

// Partitioner is a Publisher that tells which partition of a topic a key goes to, so
// that a caller can keep one request in flight per partition: messages to different
// partitions need no order between them, and a key never changes partition while the
// topic's partition count stays.
type Partitioner interface {
	// Partition returns the partition of topic that a message with key is written to,
	// or -1 when the publisher spreads messages without a key.
	Partition(ctx context.Context, topic string, key []byte) (int, error)
}

// PartitionPublisher is a Publisher that writes to a partition the caller names (one a
// Partitioner chose) as a single produce request, which Kafka appends whole or not at
// all: a caller keeping one request in flight per partition needs nothing else.
type PartitionPublisher interface {
	// PublishTo writes msgs, all of topic, to its partition and returns when all
	// in-sync replicas have them, or with an error naming what failed (then none was
	// written).
	PublishTo(ctx context.Context, topic string, partition int, msgs ...Message) error
}

// Subscriber delivers the messages of one topic to one consumer group.
type Subscriber interface {
	// Subscribe delivers messages to h until ctx ends (then it returns nil) or h
	// returns an error (then it returns that error). Members of the same group
	// share the topic's messages; each group receives every message.
	Subscribe(ctx context.Context, h Handler) error
	// Close releases resources. It is idempotent.
	Close() error
}

// ConcurrentSubscriber is a Subscriber that can handle its partitions in parallel
// (bus/kafka): a consumer whose handler is safe for concurrent calls opts in by calling
// SubscribeConcurrent, and then uses every core instead of one. bus/memory does not
// implement it: it has a single delivery loop.
type ConcurrentSubscriber interface {
	Subscriber
	// SubscribeConcurrent is Subscribe with one handler goroutine per assigned
	// partition: h is called concurrently for messages of different partitions, and
	// one at a time, in order, for the messages of one partition.
	SubscribeConcurrent(ctx context.Context, h Handler) error
}

// SubscribeOptions chooses what a Subscriber reads.
type SubscribeOptions struct {
	Topic string
	Group string
	// StartAt chooses where a group with no committed position starts:
	// StartFirst (the default) or StartLast.
	StartAt StartPosition
}

// StartPosition is where a new consumer group begins.
type StartPosition int

const (
	// StartFirst reads a new group from the oldest retained message.
	StartFirst StartPosition = iota
	// StartLast reads a new group from messages published after it joined.
	StartLast
)

// TopicSpec describes a topic to create.
type TopicSpec struct {
	Name       string
	Partitions int // 1 when zero
	// Replication is the replication factor; 1 when zero.
	Replication int
	// MaxMessageBytes is the largest message the topic accepts; the broker
	// default when zero. The Kafka bus also raises an existing topic's limit to it.
	MaxMessageBytes int
}

// Bus is one connection to a message bus: it creates topics, publishers and subscribers.
type Bus interface {
	// CreateTopic creates the topic if it does not exist yet (idempotent).
	CreateTopic(ctx context.Context, spec TopicSpec) error
	// Publisher returns a publisher for any topic.
	Publisher() (Publisher, error)
	// Subscriber returns a subscriber for one topic and group.
	Subscriber(opts SubscribeOptions) (Subscriber, error)
	// Close releases the bus and everything it created. It is idempotent.
	Close() error
}

// ErrUnknownTopic is returned when publishing to or subscribing to a topic that was not created.
var ErrUnknownTopic = errors.New("unknown topic")

// ErrMessageTooLarge is returned when a message exceeds the topic's size limit.
var ErrMessageTooLarge = errors.New("message too large")

// ErrRefused wraps a bus's answer that refuses what was asked for a reason asking again
// does not change (Kafka's: a replication factor above its brokers, no authorization, a
// topic policy): an operator's to fix, where a bus that does not answer is not.
var ErrRefused = errors.New("the bus refused it")

// ErrClosed is returned by operations on a closed bus, publisher or subscriber.
var ErrClosed = errors.New("bus closed")

// Position is one group member's share of its topic, as the bus knows it.
type Position struct {
	// Known is false while the group rebalances or the member has not joined yet; the
	// other fields are then empty.
	Known bool
	// Partitions are the partitions assigned to this member, sorted.
	Partitions []int
	// CaughtUp reports that every message that was in those partitions at the previous
	// Position call has been handled and committed: the member is not behind. The first
	// call after the assignment changed reports false.
	CaughtUp bool
	// Process names the process this member belongs to, the same across its Subscribe
	// calls (a member joins anew after a broker outage); Processes are those of every
	// member of the group, this one included, sorted. A process missing from them has left
	// the group or crashed and the group noticed (after its session timeout): work it
	// claimed and did not finish is nobody's.
	Process   string
	Processes []string
}

// Positioner is implemented by subscribers whose consumer groups share partitions
// among processes (bus/kafka). A role that keeps state per key (the alarm, per node)
// asks it which keys it still owns and whether it reads them up to date; a subscriber
// without it delivers the whole topic to its only member.
type Positioner interface {
	// Position describes the running Subscribe call's membership.
	Position(ctx context.Context) (Position, error)
}
