package benchkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
)

// DefaultBrokers are the test services' Kafka (deploy/testenv/services.sh env).
const DefaultBrokers = "127.0.0.1:9092"

// Kafka asks the brokers about a bench's topic and consumer group.
type Kafka struct {
	c  *kafkago.Client
	tr *kafkago.Transport
}

// NewKafka is a client of the brokers (host:port).
func NewKafka(brokers []string) *Kafka {
	tr := &kafkago.Transport{}
	return &Kafka{tr: tr, c: &kafkago.Client{Addr: kafkago.TCP(brokers...), Transport: tr, Timeout: 10 * time.Second}}
}

// Close closes the client's connections.
func (k *Kafka) Close() { k.tr.CloseIdleConnections() }

// EndOffsets are the topic's partitions' end offsets (high watermarks): the messages the
// broker acknowledged, as the topic is new and nothing is deleted from it.
func (k *Kafka) EndOffsets(ctx context.Context, topic string) (map[int]int64, error) {
	md, err := k.c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err == nil && (len(md.Topics) != 1 || md.Topics[0].Error != nil) {
		err = fmt.Errorf("%d topics in the answer", len(md.Topics))
		if len(md.Topics) > 0 {
			err = md.Topics[0].Error
		}
	}
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, p := range md.Topics[0].Partitions {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p.ID))
	}
	resp, err := k.c.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	ends := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p.Partition, p.Error)
		}
		ends[p.Partition] = p.LastOffset
	}
	return ends, nil
}

// Lag is the messages of the topic past the group's committed offsets, summed over the
// partitions; a partition without a commit counts from 0 (the topic is the bench's own).
func (k *Kafka) Lag(ctx context.Context, topic, group string) (int64, error) {
	ends, err := k.EndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	parts := make([]int, 0, len(ends))
	for p := range ends {
		parts = append(parts, p)
	}
	resp, err := k.c.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err == nil {
		err = resp.Error
	}
	if err != nil {
		return 0, fmt.Errorf("offsets of group %s on %s: %w", group, topic, err)
	}
	committed := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("offset of group %s on %s/%d: %w", group, topic, p.Partition, p.Error)
		}
		committed[p.Partition] = max(0, p.CommittedOffset) // -1: nothing committed yet
	}
	var lag int64
	for p, end := range ends {
		lag += max(0, end-committed[p])
	}
	return lag, nil
}

// DeleteTopic deletes a topic.
func (k *Kafka) DeleteTopic(ctx context.Context, topic string) error {
	resp, err := k.c.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	// The controller acknowledges the deletion before every broker's metadata drops the
	// topic: a CI run found it still listed right after a bench "deleted" it. Wait until
	// the metadata no longer lists it (10 s at most).
	deadline := time.Now().Add(10 * time.Second)
	for {
		exists, err := k.TopicExists(ctx, topic)
		if err == nil && !exists {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("delete topic %s: still listed after 10 s (%v)", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DeleteGroup deletes a consumer group that has no members left.
func (k *Kafka) DeleteGroup(ctx context.Context, group string) error {
	resp, err := k.c.DeleteGroups(ctx, &kafkago.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err == nil {
		err = resp.Errors[group]
	}
	if err != nil && !errors.Is(err, kafkago.GroupIdNotFound) {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}

// TopicExists says whether the brokers know the topic.
func (k *Kafka) TopicExists(ctx context.Context, topic string) (bool, error) {
	md, err := k.c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return false, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Name == topic {
			if errors.Is(t.Error, kafkago.UnknownTopicOrPartition) {
				return false, nil
			}
			return t.Error == nil, t.Error
		}
	}
	return false, nil
}

// CreateTopic creates a topic with the bus's own call, which returns once every
// partition has a leader.
func CreateTopic(ctx context.Context, brokers []string, topic string, partitions int, logger *slog.Logger) error {
	b, err := kafka.New(kafka.Options{Brokers: brokers, ClientID: "binlake-bench", Logger: logger})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: partitions}); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}
