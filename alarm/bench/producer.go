package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/metric"
)

// Producer settings: the agents' partitioner (Murmur2, Kafka's Java client's, as the bus
// uses) keeps a node on one partition; batching up to 1 MiB per partition request with a
// 5 ms linger, acks from every in-sync replica.
const (
	producerBatchSize  = 1000
	producerBatchBytes = 1 << 20
	producerLinger     = 5 * time.Millisecond
	// paceEvery is the producer's tick: each tick sends the batches due by then.
	paceEvery = 5 * time.Millisecond
	// agentInterval is the interval the nodes declare, an agent's default.
	agentInterval = 10 * time.Second
)

// producer sends the fleet's batches to the topic at the target rate, asynchronously,
// and injects the violations.
type producer struct {
	o     Options
	f     *benchkit.Fleet
	w     *kafkago.Writer
	tr    *kafkago.Transport
	viols []violation

	next   int         // batches built so far: batch k is node k mod N's tick k / N
	lastTS []time.Time // per node, so that a node's batches have increasing times
	// sentAt is when violation k's batch was handed to the writer (zero: not yet).
	mu     sync.Mutex
	sentAt []time.Time

	produced      atomic.Int64 // points handed to the writer
	acked, failed atomic.Int64 // points the broker acknowledged, or that failed for good
	firstErr      atomic.Pointer[error]
}

func newProducer(o Options, topic string) *producer {
	p := &producer{o: o, f: benchkit.NewFleet(o.Nodes, o.Batch), viols: violations(o.Violations, o.Nodes, o.Policies),
		lastTS: make([]time.Time, o.Nodes), sentAt: make([]time.Time, o.Violations),
		tr: &kafkago.Transport{ClientID: "binlake-bench-alarm"}}
	p.w = &kafkago.Writer{
		Addr: kafkago.TCP(o.Brokers...), Topic: topic, Balancer: &kafkago.Murmur2Balancer{},
		BatchSize: producerBatchSize, BatchBytes: producerBatchBytes, BatchTimeout: producerLinger,
		RequiredAcks: kafkago.RequireAll, Async: true,
		Transport: p.tr,
		Completion: func(msgs []kafkago.Message, err error) {
			n := int64(len(msgs) * o.Batch) // every batch holds o.Batch points
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

// send hands count batches to the writer; armed maps a node to the violation its next
// batch carries.
func (p *producer) send(ctx context.Context, count int, armed map[int]int) error {
	msgs := make([]kafkago.Message, 0, count)
	var hit []int
	for range count {
		node, tick := p.next%p.o.Nodes, p.next/p.o.Nodes
		p.next++
		ts := time.Now().Truncate(time.Millisecond)
		if !ts.After(p.lastTS[node]) {
			ts = p.lastTS[node].Add(time.Millisecond) // the engine skips a point not newer than the last
		}
		p.lastTS[node] = ts
		b := p.f.Batch(node, tick, p.o.Batch, ts, agentInterval)
		if k, ok := armed[node]; ok {
			b.Points[p.viols[k].metric].Value = violationValue
			delete(armed, node)
			hit = append(hit, k)
		}
		data, err := metric.Encode(b)
		if err != nil {
			return fmt.Errorf("bench alarm: encode batch of %s: %w", b.Node, err)
		}
		msgs = append(msgs, kafkago.Message{Key: []byte(b.Node), Value: data, Time: ts})
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("bench alarm: produce: %w", err)
	}
	now := time.Now()
	p.mu.Lock()
	for _, k := range hit {
		p.sentAt[k] = now
	}
	p.mu.Unlock()
	p.produced.Add(int64(count * p.o.Batch))
	return nil
}

// run sends at the target rate for the load's duration, arming each violation at its
// time; it returns when the duration is over (the writer may still hold batches).
func (p *producer) run(ctx context.Context, start time.Time) error {
	t := time.NewTicker(paceEvery)
	defer t.Stop()
	armed := map[int]int{}
	nextViol, sent := 0, 0
	for {
		now := time.Now()
		el := now.Sub(start)
		if el >= p.o.Duration {
			return nil
		}
		for nextViol < len(p.viols) && el >= time.Duration(p.viols[nextViol].at*float64(p.o.Duration)) {
			armed[p.viols[nextViol].node] = nextViol
			nextViol++
		}
		due := int(float64(p.o.Rate)*el.Seconds()) / p.o.Batch
		if due > sent {
			if err := p.send(ctx, due-sent, armed); err != nil {
				return err
			}
			sent = due
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// close flushes what the writer holds, waits for every acknowledgement and closes the
// connections; it may be called again.
func (p *producer) close() error {
	err := p.w.Close()
	p.tr.CloseIdleConnections()
	return err
}

// violationTimes returns when each violation's batch was sent (zero: never).
func (p *producer) violationTimes() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.sentAt...)
}

// err is the first produce failure, if any.
func (p *producer) err() error {
	if e := p.firstErr.Load(); e != nil {
		return *e
	}
	return nil
}
