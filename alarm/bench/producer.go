package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/benchkit"
)

const (
	// paceEvery is the producer's tick: each tick sends the batches due by then, at most
	// maxBurst's worth, so that a producer that fell behind (a starved CPU) catches up
	// in steps instead of building one ever larger burst while sending nothing.
	paceEvery = 5 * time.Millisecond
	maxBurst  = 50 * time.Millisecond
	// agentInterval is the interval the nodes declare, an agent's default.
	agentInterval = 10 * time.Second
)

// producer sends the fleet's batches to the topic at the target rate, asynchronously,
// and injects the violations.
type producer struct {
	*benchkit.Producer
	o     Options
	f     *benchkit.Fleet
	viols []violation
	lanes []*lane
	// lastTS is per node (of one lane), so that a node's batches have increasing times.
	lastTS []time.Time
	keys   [][]byte // the nodes' message keys, shared by their messages
	// sentAt is when violation k's batch was handed to the writer (zero: not yet).
	mu     sync.Mutex
	sentAt []time.Time
	// produced counts the points handed to the writer.
	produced atomic.Int64
}

func newProducer(o Options, topic string) *producer {
	p := &producer{Producer: benchkit.NewProducer(o.Brokers, topic, "binlake-bench-alarm"), o: o,
		f: benchkit.NewFleet(o.Nodes, o.Batch), viols: violations(o.Violations, o.Nodes, o.Policies),
		lastTS: make([]time.Time, o.Nodes), sentAt: make([]time.Time, o.Violations), keys: make([][]byte, o.Nodes)}
	for i := range p.keys {
		p.keys[i] = []byte(p.f.Node(i))
	}
	p.newLanes()
	return p
}

// lane builds and sends the batches of a share of the nodes (node mod lanes): the
// lanes run side by side, so that building and encoding batches, which costs more
// CPU than anything else in the bench, is spread over the cores.
type lane struct {
	p     *producer
	nodes []int
	viols []int // the violations on this lane's nodes, by time
	next  int   // batches built so far: batch k is node nodes[k mod len]'s tick k / len
	armed map[int]int
	// msgSize is the largest message so far, to size the next call's buffer.
	msgSize int
}

// newLanes splits the nodes over min(GOMAXPROCS, nodes) lanes.
func (p *producer) newLanes() {
	n := min(runtime.GOMAXPROCS(0), p.o.Nodes)
	p.lanes = make([]*lane, n)
	for g := range p.lanes {
		p.lanes[g] = &lane{p: p, armed: map[int]int{}}
	}
	for node := range p.o.Nodes {
		l := p.lanes[node%n]
		l.nodes = append(l.nodes, node)
	}
	for k, v := range p.viols {
		l := p.lanes[v.node%n]
		l.viols = append(l.viols, k)
	}
}

// send hands count batches to the writer, the violations armed on their nodes included.
// The batches are encoded by the fleet straight into one buffer per call, which the
// writer holds until the broker has them.
func (l *lane) send(ctx context.Context, count int) error {
	p := l.p
	msgs := make([]kafkago.Message, 0, count)
	buf := make([]byte, 0, count*l.msgSize)
	var hit []int
	for range count {
		node, tick := l.nodes[l.next%len(l.nodes)], l.next/len(l.nodes)
		l.next++
		ts := time.Now().Truncate(time.Millisecond)
		if !ts.After(p.lastTS[node]) {
			ts = p.lastTS[node].Add(time.Millisecond) // the engine skips a point not newer than the last
		}
		p.lastTS[node] = ts
		var over []benchkit.Override
		if k, ok := l.armed[node]; ok {
			over = append(over, benchkit.Override{Point: p.viols[k].metric, Value: violationValue})
			delete(l.armed, node)
			hit = append(hit, k)
		}
		start := len(buf)
		buf = p.f.AppendJSON(buf, node, tick, p.o.Batch, ts, agentInterval, over...)
		l.msgSize = max(l.msgSize, len(buf)-start)
		msgs = append(msgs, kafkago.Message{Key: p.keys[node], Value: buf[start:len(buf):len(buf)], Time: ts, WriterData: p.o.Batch})
	}
	if err := p.Write(ctx, msgs...); err != nil {
		return fmt.Errorf("bench alarm: %w", err)
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

// warmUp sends one batch.
func (p *producer) warmUp(ctx context.Context) error { return p.lanes[0].send(ctx, 1) }

// run sends at the target rate for the load's duration, arming each violation at its
// time; it returns when the duration is over (the writer may still hold batches).
func (p *producer) run(ctx context.Context, start time.Time) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range p.lanes {
		g.Go(func() error { return l.run(gctx, start) })
	}
	return g.Wait()
}

// run sends the lane's share of the rate: its nodes' share of the target.
func (l *lane) run(ctx context.Context, start time.Time) error {
	o := l.p.o
	rate := float64(o.Rate) * float64(len(l.nodes)) / float64(o.Nodes)
	burst := max(1, int(rate*maxBurst.Seconds())/o.Batch)
	t := time.NewTicker(paceEvery)
	defer t.Stop()
	nextViol, sent := 0, 0
	for {
		el := time.Since(start)
		if el >= o.Duration {
			return nil
		}
		for ; nextViol < len(l.viols); nextViol++ {
			v := l.p.viols[l.viols[nextViol]]
			if el < time.Duration(v.at*float64(o.Duration)) {
				break
			}
			l.armed[v.node] = l.viols[nextViol]
		}
		due := int(rate*el.Seconds()) / o.Batch
		if n := min(due-sent, burst); n > 0 {
			if err := l.send(ctx, n); err != nil {
				return err
			}
			sent += n
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// violationTimes returns when each violation's batch was sent (zero: never).
func (p *producer) violationTimes() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.sentAt...)
}
