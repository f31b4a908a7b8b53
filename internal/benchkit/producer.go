package benchkit

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Producer settings: the agents' partitioner (Murmur2, Kafka's Java client's, as the bus
// uses) keeps a node on one partition; batching up to 1 MiB per partition request with a
// 5 ms linger, acks from every in-sync replica.
const (
	producerBatchSize  = 1000
	producerBatchBytes = 1 << 20
	producerLinger     = 5 * time.Millisecond
)

// Producer writes metric batches to a topic as the agents do (one message per batch,
// keyed by node), asynchronously, and counts the points the broker acknowledged.
type Producer struct {
	w  *kafkago.Writer
	tr *kafkago.Transport

	acked, failed atomic.Int64
	firstErr      atomic.Pointer[error]
}

// NewProducer is a producer to topic.
func NewProducer(brokers []string, topic, clientID string) *Producer {
	p := &Producer{tr: &kafkago.Transport{ClientID: clientID}}
	p.w = &kafkago.Writer{
		Addr: kafkago.TCP(brokers...), Topic: topic, Balancer: &kafkago.Murmur2Balancer{},
		BatchSize: producerBatchSize, BatchBytes: producerBatchBytes, BatchTimeout: producerLinger,
		RequiredAcks: kafkago.RequireAll, Async: true, Transport: p.tr,
		Completion: func(msgs []kafkago.Message, err error) {
			var n int64
			for _, m := range msgs {
				n += int64(m.WriterData.(int))
			}
			if err != nil {
				p.failed.Add(n)
				p.firstErr.CompareAndSwap(nil, &err)
				return
			}
			p.acked.Add(n)
		},
	}
	return p
}

// Write hands messages (WriterData: their points, an int) to the writer; the broker's answer comes later
// (Acked, Failed).
func (p *Producer) Write(ctx context.Context, msgs ...kafkago.Message) error {
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return nil
}

// Acked and Failed are the points the broker acknowledged, or that failed for good.
func (p *Producer) Acked() int64  { return p.acked.Load() }
func (p *Producer) Failed() int64 { return p.failed.Load() }

// Err is the first failure the broker answered, if any.
func (p *Producer) Err() error {
	if e := p.firstErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Close flushes what the writer holds, waits for every answer and closes the
// connections; it may be called again.
func (p *Producer) Close() error {
	err := p.w.Close()
	p.tr.CloseIdleConnections()
	return err
}
