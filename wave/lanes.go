package wave

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// The publisher keeps several produce requests in flight without giving up per-key order
// or the commit rule:
//
//   - A lane is one partition of one topic (one lane in all when the bus cannot say
//     which partition a key goes to). A lane publishes its chunks one at a time, each
//     retried until acknowledged before the next, so a partition receives a key's
//     changes in order and a retry repeats only its own contiguous run; lanes run at
//     once, so the partitions' requests overlap each other and the capture.
//   - A flight is one gathered batch: its messages split into the lanes' chunks. A
//     flight is done when all its chunks are acknowledged; flights complete in the
//     order they were gathered, and only then does a batch's boundary reach the
//     committer: the committed position covers acknowledged rows only, in order.
//   - At most inFlight flights are out at once: the capture waits behind them.

// DefaultPublishInFlight is how many gathered batches may be on their way at once.
const DefaultPublishInFlight = 4

// flight is one gathered batch on its way.
type flight struct {
	commit     *cluster.Position // the batch's last transaction boundary, if any
	commitRows int64             // rows published up to that boundary
	rows       int               // row changes (capture.Item.Rows)
	msgs       int               // messages carrying them
	bytes      int
	ts         int64         // the time of its last item that has one (capture.LagTracker.Acked)
	heartbeat  uint64        // the heartbeat it ends with, if it does
	pending    atomic.Int32  // chunks not yet acknowledged
	done       chan struct{} // closed when pending reaches zero
}

// ack counts one of the flight's chunks acknowledged.
func (f *flight) ack() {
	if f.pending.Add(-1) == 0 {
		close(f.done)
	}
}

// laneKey names a lane: a topic's partition (-1: the bus spreads it, or cannot say).
type laneKey struct {
	topic     string
	partition int
}

type laneWork struct {
	msgs []bus.Message
	f    *flight
}

// run gathers items into flights, sends their chunks down the lanes and completes the
// flights in order, until ctx ends (nil) or a publish fails for good (its error).
func (p *publisher) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	window := max(p.inFlight, 1)
	order := make(chan *flight, window-1) // with the one completing: window flights out
	lanes := &laneSet{p: p, g: g, ctx: gctx, lanes: map[laneKey]chan laneWork{}}
	g.Go(func() error { return p.complete(gctx, order) })
	g.Go(func() error {
		defer lanes.close()
		return p.dispatch(gctx, order, lanes)
	})
	return g.Wait()
}

// dispatch is the gathering side of run.
func (p *publisher) dispatch(ctx context.Context, order chan<- *flight, lanes *laneSet) error {
	part, _ := p.pub.(bus.Partitioner)
	for {
		var first capture.Item
		select {
		case first = <-p.in:
		case <-ctx.Done():
			return nil
		}
		batch := []capture.Item{first}
		n := first.Rows()
		var linger <-chan time.Time // started once the queue runs dry before the flight is full
	gather:
		for n < p.maxRows {
			select {
			case it := <-p.in:
				batch = append(batch, it)
				n += it.Rows()
				continue
			default:
			}
			// The queue ran dry before the flight is full: wait for more rows up to the
			// linger (sink.kafka.linger), as a Kafka producer does. Each flight makes a
			// produce request per partition, which the broker pays for whatever its size.
			// Sent at once, the flights of a capture slower than the publisher shrank to
			// what one round trip let in: canal-protobuf (few, large messages, quick to
			// publish) made two to four times json's requests per row, and its broker
			// spent half as much again as json's.
			if p.linger <= 0 {
				break
			}
			if linger == nil {
				linger = time.After(p.linger)
			}
			select {
			case it := <-p.in:
				batch = append(batch, it)
				n += it.Rows()
			case <-linger:
				break gather
			case <-ctx.Done():
				return nil
			}
		}
		f := &flight{done: make(chan struct{}), commitRows: p.rows}
		for _, it := range batch {
			f.rows += it.Rows()
			f.msgs += len(it.Msgs)
			f.bytes += it.Bytes
			if it.Commit != nil {
				f.commit = it.Commit
				f.commitRows = p.rows + int64(f.rows)
			}
			if it.TS != 0 {
				// The last, not the largest: the lag is measured where the binlog was
				// read to, whose timestamps a session may set back (SET timestamp).
				f.ts = it.TS
			}
			if it.Heartbeat != 0 {
				f.heartbeat = it.Heartbeat // what was read after it, capture.LagTracker counted
			}
		}
		p.rows += int64(f.rows)
		work, err := p.laneWork(ctx, part, batch, f.msgs)
		switch {
		case ctx.Err() != nil:
			return nil // stopping: this flight goes nowhere, and nothing after it
		case err != nil:
			return err
		}
		total := 0
		for _, w := range work {
			total += len(w.chunks)
		}
		f.pending.Store(int32(total))
		if total == 0 {
			close(f.done)
		}
		select {
		case order <- f:
		case <-ctx.Done():
			return nil
		}
		for _, w := range work {
			for _, c := range w.chunks {
				if !lanes.send(w.key, laneWork{msgs: c, f: f}) {
					return nil
				}
			}
		}
	}
}

// laneChunks are one lane's share of a flight, cut into chunks.
type laneChunks struct {
	key    laneKey
	chunks [][]bus.Message
}

// laneWork splits the n messages of batch into their lanes, asking the bus for partitions again with
// backoff while it cannot say (the cluster unreachable, as a publish would find it). It
// never falls back to a lane of its own: a key's newer changes must not overtake its
// older ones still on their partition's lane. It returns errLost once the leadership is
// gone, and nothing once ctx ends.
func (p *publisher) laneWork(ctx context.Context, part bus.Partitioner, batch []capture.Item, n int) ([]laneChunks, error) {
	bo := backoff.New(p.backoffMin, p.backoffMax)
	failing := false // as in publishWith
	defer func() {
		if failing {
			p.health.done()
		}
	}()
	recreated := false
	for attempt := 1; ; attempt++ {
		tried := time.Now()
		work, err := p.split(ctx, part, batch, n)
		if err == nil || ctx.Err() != nil {
			return work, err
		}
		if isClosed(p.lost) {
			return nil, errLost
		}
		// Without the topic no key has a partition: created again with the lead's spec,
		// it has the partitions it had, and keys theirs.
		var again bool
		if again, err = p.failed(ctx, err, nil, tried, &failing, &recreated); again {
			continue
		}
		wait := bo.NextBackOff()
		p.log.Warn("partitions unknown; retrying", "messages", n, "attempt", attempt, "backoff", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// split sorts the n messages of batch into their lanes, keeping their order within
// each, and cuts each lane's share into chunks of one produce request (see chunks). The
// lanes' messages share one allocation; a batch has few lanes (one per partition), found
// by a scan that mostly stops at the lane of the message before.
func (p *publisher) split(ctx context.Context, part bus.Partitioner, batch []capture.Item, n int) ([]laneChunks, error) {
	if n == 0 {
		return nil, nil
	}
	all := make([]bus.Message, 0, n)
	if part == nil {
		for _, it := range batch {
			all = append(all, it.Msgs...)
		}
		return []laneChunks{{key: laneKey{partition: -1}, chunks: chunks(all, p.chunkMsgs, p.chunkBytes)}}, nil
	}
	type lane struct {
		key   laneKey
		count int
		msgs  []bus.Message
	}
	var lanes []lane
	of := p.laneOf[:0] // each message's lane, in batch order
	last := -1
	for _, it := range batch {
		for _, m := range it.Msgs {
			pn, err := part.Partition(ctx, m.Topic, m.Key)
			if err != nil {
				return nil, &topicError{topic: m.Topic, err: err}
			}
			k := laneKey{topic: m.Topic, partition: pn}
			if last < 0 || lanes[last].key != k {
				last = slices.IndexFunc(lanes, func(l lane) bool { return l.key == k })
				if last < 0 {
					lanes = append(lanes, lane{key: k})
					last = len(lanes) - 1
				}
			}
			lanes[last].count++
			of = append(of, int32(last))
		}
	}
	p.laneOf = of
	for i := range lanes { // carve each lane's room out of all
		end := len(all) + lanes[i].count
		lanes[i].msgs = all[len(all):len(all):end]
		all = all[:end]
	}
	i := 0
	for _, it := range batch {
		for _, m := range it.Msgs {
			l := &lanes[of[i]]
			l.msgs = append(l.msgs, m)
			i++
		}
	}
	out := make([]laneChunks, 0, len(lanes))
	for _, l := range lanes {
		out = append(out, laneChunks{key: l.key, chunks: chunks(l.msgs, p.chunkMsgs, p.chunkBytes)})
	}
	return out, nil
}

// complete finishes the flights in order: once a flight's chunks are all acknowledged it
// counts them, tells the lag tracker and hands the batch's boundary to the committer.
func (p *publisher) complete(ctx context.Context, order <-chan *flight) error {
	for {
		var f *flight
		select {
		case f = <-order:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil
		}
		if f.rows > 0 {
			p.m.rows.WithLabelValues(p.id).Add(float64(f.rows))
			p.m.bytes.WithLabelValues(p.id).Add(float64(f.bytes))
			p.m.messages.WithLabelValues(p.id).Add(float64(f.msgs))
			p.m.batches.WithLabelValues(p.id).Inc()
		}
		// The leadership may have ended while the batch was out (the watcher cancels ctx
		// only shortly after Lost closes): hand no boundary to the committer then. A term
		// that lost its leadership commits nothing more, or it could move the offset under
		// its successor.
		if isClosed(p.lost) {
			return errLost
		}
		p.lag.Acked(f.ts, f.heartbeat)
		if f.commit != nil {
			c := *f.commit
			c.Rows = f.commitRows
			p.commit.ack(c)
		}
	}
}

// laneSet starts a lane the first time a chunk goes its way.
type laneSet struct {
	p     *publisher
	g     *errgroup.Group
	ctx   context.Context
	lanes map[laneKey]chan laneWork
}

// send hands w to its lane; false when the publisher is stopping.
func (ls *laneSet) send(k laneKey, w laneWork) bool {
	ch, ok := ls.lanes[k]
	if !ok {
		ch = make(chan laneWork, 1)
		ls.lanes[k] = ch
		ls.g.Go(func() error { return ls.p.lane(ls.ctx, k, ch) })
	}
	select {
	case ch <- w:
		return true
	case <-ls.ctx.Done():
		return false
	}
}

func (ls *laneSet) close() {
	for _, ch := range ls.lanes {
		close(ch)
	}
}

// lane publishes its chunks one at a time, in order, each until acknowledged. A lane of
// a known partition produces straight to it when the bus can (bus.PartitionPublisher):
// one request per chunk, without the writer looking the partition up again per message.
func (p *publisher) lane(ctx context.Context, k laneKey, in <-chan laneWork) error {
	to, direct := p.pub.(bus.PartitionPublisher)
	direct = direct && k.partition >= 0
	for w := range in {
		var err error
		if direct {
			err = p.publishWith(ctx, w.msgs, func(ctx context.Context) error { return to.PublishTo(ctx, k.topic, k.partition, w.msgs...) })
		} else {
			err = p.publish(ctx, w.msgs)
		}
		if err != nil {
			if errors.Is(err, capture.ErrMessageTooLarge) && w.f.commit != nil {
				// The sink's refusal names no row: say where in the binlog they are.
				err = fmt.Errorf("%w (rows of the transactions up to %s)", err, w.f.commit)
			}
			return err
		}
		if ctx.Err() != nil {
			return nil // publish gave up on a stop: the chunk is not acknowledged
		}
		clear(w.msgs) // release the messages for the collector
		w.f.ack()
	}
	return nil
}
