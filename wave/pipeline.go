package wave

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// ErrFenced reports that the offset was written by someone else since this wave read it:
// another wave leads the instance, so this one stops publishing and committing.
var ErrFenced = errors.New("offset changed under us: another wave leads this instance")

// publisher is the stage that batches items, publishes them and reports the boundary
// that is safe to commit once everything before it was acknowledged.
type publisher struct {
	id         string
	pub        bus.Publisher
	lost       <-chan struct{} // the leadership's Lost: no attempt starts after it closed
	in         <-chan capture.Item
	maxRows    int
	backoffMin time.Duration
	backoffMax time.Duration
	m          *metrics
	log        *slog.Logger
	commit     *committer
	rows       int64               // rows published by the instance so far (carried in the offset)
	lag        *capture.LagTracker // told of each batch acknowledged (nil: no lag kept)
	// chunkMsgs and chunkBytes bound each topic's share of one Publish call (0 = no
	// bound); see chunks.
	chunkMsgs  int
	chunkBytes int64
	// inFlight is how many gathered batches may be on their way at once (1: stop and
	// wait); see lanes.go.
	inFlight int
	// linger is how long a batch that is not full waits for more rows once the queue runs
	// dry (0: it goes at once).
	linger time.Duration
	laneOf []int32 // split's scratch: each message's lane (dispatch's goroutine only)
	resume resumeSignal
	// recreate creates a deleted topic again (nil: the wave creates no topics); health
	// shows failing publishes in the instance's status (nil: nowhere). publishfail.go.
	recreate *topicRecreator
	health   *publishHealth
}

// recordOverhead is what a producer adds to key and value when it sizes a batch: kafka-go
// counts 4+1+1+8 bytes of record fields, 4+4 of lengths and a header count (23 bytes);
// rounded up so a chunk can never overflow the writer's batch bytes.
const recordOverhead = 32

// chunks splits msgs, in order, into consecutive runs in which no topic has more than
// maxMsgs messages or maxBytes bytes (key + value + recordOverhead each).
//
// Why: kafka-go's Writer cuts a partition's share of one WriteMessages call into several
// produce requests when it exceeds its batch size or bytes, writes them one after another,
// and writes the later ones even when an earlier one failed for good. A retried call then
// puts a key's older changes after its newer ones on the partition: a reordering, not a
// duplicate. Kept to one produce request per partition, a call's effect on each partition
// is all or nothing (Kafka appends a record batch atomically) and a retry repeats a
// contiguous run: consumers see duplicates, never a key's changes out of order. A topic's
// share bounds every partition's share, whatever the partition count.
func chunks(msgs []bus.Message, maxMsgs int, maxBytes int64) [][]bus.Message {
	if maxMsgs <= 0 && maxBytes <= 0 {
		return [][]bus.Message{msgs}
	}
	type load struct {
		n     int
		bytes int64
	}
	var out [][]bus.Message
	per := map[string]*load{}
	start := 0
	for i, m := range msgs {
		size := int64(len(m.Key) + len(m.Value) + recordOverhead)
		l := per[m.Topic]
		if l == nil {
			l = &load{}
			per[m.Topic] = l
		}
		if l.n > 0 && ((maxMsgs > 0 && l.n+1 > maxMsgs) || (maxBytes > 0 && l.bytes+size > maxBytes)) {
			out = append(out, msgs[start:i])
			start = i
			clear(per)
			l = &load{}
			per[m.Topic] = l
		}
		l.n++
		l.bytes += size
	}
	return append(out, msgs[start:])
}

// publish sends msgs until acknowledged, retrying with capped exponential backoff: while
// the sink is down, capture stalls behind the bounded queue instead of growing memory.
func (p *publisher) publish(ctx context.Context, msgs []bus.Message) error {
	return p.publishWith(ctx, msgs, func(ctx context.Context) error { return p.pub.Publish(ctx, msgs...) })
}

// publishWith is publish through send, one attempt per call.
func (p *publisher) publishWith(ctx context.Context, msgs []bus.Message, send func(context.Context) error) error {
	bo := backoff.New(p.backoffMin, p.backoffMax)
	failing := false   // an attempt failed: the status says so until this chunk is done
	recreated := false // the last attempt followed a recreate: back off if it failed too
	defer func() {
		if failing {
			p.health.done()
		}
	}()
	for attempt := 1; ; attempt++ {
		// The context ends shortly after Lost closes (lead's watcher cancels it); look
		// at Lost itself too, so that no attempt starts once the leadership is gone. It
		// is an error, not a quiet return: the caller must not treat msgs as published.
		if isClosed(p.lost) {
			return errLost
		}
		gen := p.resume.seen()
		tried := time.Now()
		err := send(ctx)
		if err == nil {
			if attempt > 1 {
				p.log.Info("publishing resumed", "attempts", attempt)
			}
			p.resume.resumed() // lanes backing off may try again now (a no-op when none is)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, bus.ErrMessageTooLarge) {
			return capture.Fatal(fmt.Errorf("%w: %w", capture.ErrMessageTooLarge, err))
		}
		if errors.Is(err, bus.ErrClosed) {
			return fmt.Errorf("publish: %w", err)
		}
		// The chunk is still this lane's next: nothing after it was written.
		var again bool
		if again, err = p.failed(ctx, err, msgs, tried, &failing, &recreated); again {
			continue
		}
		wait := bo.NextBackOff()
		p.log.Warn("publish failed; retrying", "messages", len(msgs), "attempt", attempt, "backoff", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		case <-p.resume.since(gen): // another lane got through since this attempt: try again now
		}
	}
}

// committer writes the acknowledged boundary to "instances/<id>/offset" with a version
// check, at most once per interval.
type committer struct {
	c        coord.Coordinator
	lost     <-chan struct{} // the leadership's Lost: nothing is written after it closed
	key      string
	id       string
	interval time.Duration
	m        *metrics
	log      *slog.Logger
	now      func() time.Time
	// sync makes the acknowledged messages durable before each commit: the publisher's
	// Sync when it is a bus.Syncer, else nil.
	sync func() error
	// syncErr is a failed sync: the acknowledged position is no longer known durable, so
	// nothing more is committed in this leadership term (not even the final flush).
	syncErr error
	// onCommit, when set, is told each position written, so that the wave's /status
	// shows where the instance would resume now rather than where the term started.
	onCommit func(cluster.Position)

	mu        sync.Mutex
	version   int64
	acked     cluster.Position
	hasAcked  bool
	committed cluster.Position
	kick      chan struct{}
}

func (c *committer) ack(p cluster.Position) {
	c.mu.Lock()
	c.acked, c.hasAcked = p, true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *committer) run(ctx context.Context) error {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := c.flush(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// flush commits the acknowledged position if it moved.
func (c *committer) flush(ctx context.Context) error {
	c.mu.Lock()
	p, ok, v := c.acked, c.hasAcked, c.version
	same := p == c.committed
	c.mu.Unlock()
	if !ok || same {
		return nil
	}
	if isClosed(c.lost) {
		return errLost
	}
	if c.syncErr != nil {
		return c.syncErr
	}
	if c.sync != nil {
		// A failed sync may have lost acknowledged messages: the pipeline restarts from
		// the committed offset and publishes them again.
		if err := c.sync(); err != nil {
			c.syncErr = fmt.Errorf("sync the sink before committing %s: %w", c.key, err)
			return c.syncErr
		}
	}
	p.At = c.now().UnixMilli()
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	nv, err := c.c.Put(ctx, c.key, data, v)
	if errors.Is(err, coord.ErrVersionConflict) {
		return fmt.Errorf("commit %s: %w", c.key, ErrFenced)
	}
	if err != nil {
		// A transient coordinator error: the next tick tries again with the same version.
		// One cut short by the pipeline stopping is no failure (the stop commits what it
		// has with a context of its own): it was logged after each clean stop.
		if ctx.Err() == nil {
			c.log.Warn("commit offset failed; will retry", "err", err)
		}
		return nil
	}
	p.At = 0
	c.mu.Lock()
	c.version, c.committed = nv, p
	c.mu.Unlock()
	c.m.commitPos.DeletePartialMatch(map[string]string{"instance": c.id})
	c.m.commitPos.WithLabelValues(c.id, p.File).Set(float64(p.Pos))
	c.m.commitTS.WithLabelValues(c.id).Set(float64(p.TS))
	if c.onCommit != nil {
		c.onCommit(p)
	}
	return nil
}

// syncOf is what a committer calls before each commit to make pub's acknowledgements
// durable: its Sync when it is a bus.Syncer, else nil (a Kafka acknowledgement is).
func syncOf(pub bus.Publisher) func() error {
	if s, ok := pub.(bus.Syncer); ok {
		return s.Sync
	}
	return nil
}

// partitionerOf is pub's bus.Partitioner, nil when it cannot tell partitions (the capture
// then groups no rows).
func partitionerOf(pub bus.Publisher) bus.Partitioner {
	p, _ := pub.(bus.Partitioner)
	return p
}

// lead runs the capture pipeline of one instance for as long as this wave holds its
// leadership: it returns when ctx ends, the leadership is lost (publishing and committing
// stop first) or the pipeline fails.
func (w *Wave) lead(ctx context.Context, inst *cluster.Instance, lead coord.Leadership) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lead.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	log := w.log.With("instance", inst.ID)
	password, err := w.opts.Password(inst.Source)
	if err != nil {
		// Retried, not fatal: a password file put in place is read on the next attempt
		// without an operator having to touch the instance.
		return err // ErrSecretMissing, naming the variable or the file
	}
	if blankPasswordEnv(inst.Source, password) {
		log.Info("source.password_env names a variable that is set but empty: connecting without a password (the source's refusal then says \"using password: NO\")",
			"variable", inst.Source.PasswordEnv)
	}
	// The capture reads it again before each reconnect (capture.Options.Secret): a
	// password changed on the source and then in the file or variable is taken up at the
	// next attempt, while this term goes on.
	secret := func() (string, error) {
		pw, err := w.opts.Password(inst.Source)
		return pw.Reveal(), err
	}
	filter, err := cluster.NewFilter(inst.Subscriptions)
	if err != nil {
		return capture.Fatal(err)
	}
	maxBytes, maxBytesFrom := w.opts.MaxMessageBytes, "the sink's max_message_bytes"
	if w.opts.Topics != nil {
		for _, t := range filter.Topics() {
			spec := w.opts.TopicSpec
			spec.Name = t
			if err := w.opts.Topics.CreateTopic(ctx, spec); err != nil {
				return fmt.Errorf("a subscription's topic: %w", &busError{err}) // the bus names the topic
			}
			// The Kafka bus raises a topic's max.message.bytes to the sink's limit; where it
			// could not, the topic's own limit holds the rows, so that one too large
			// stops the instance (or is skipped) naming its table and position, before
			// the broker refuses it.
			if l, ok := w.opts.Topics.(topicLimiter); ok && maxBytes > 0 {
				n, err := l.TopicMaxMessageBytes(ctx, t)
				if err == nil && n-recordBatchOverhead < maxBytes {
					maxBytes = max(n-recordBatchOverhead, 1)
					maxBytesFrom = fmt.Sprintf("topic %s's max.message.bytes %d, below the sink's max_message_bytes %d: raise it on the topic", t, n, w.opts.MaxMessageBytes)
					log.Warn("a topic takes smaller messages than the sink's max_message_bytes: the instance's rows are held to it",
						"topic", t, "max.message.bytes", n, "max_message_bytes", w.opts.MaxMessageBytes)
				}
			}
		}
	}

	offKey := cluster.OffsetKey(inst.ID)
	start, version, ok, err := cluster.ReadOffset(ctx, w.opts.Coord, inst.ID)
	if errors.As(err, new(*cluster.InvalidOffsetError)) {
		return capture.Fatal(err)
	}
	if err != nil {
		return err
	}
	if !ok {
		switch {
		case inst.Start != nil:
			start = *inst.Start
		case inst.AddedAt > 0:
			// Added without a start, the source unread: where its binlog was then, not
			// where it is now, or the rows written since the add would be skipped.
			added := time.Unix(inst.AddedAt, 0)
			if start, err = capture.PositionAt(ctx, inst.Source, password.Reveal(), added, log); err != nil {
				if capture.IsFatal(err) {
					return err
				}
				return fmt.Errorf("find the source's binlog of when the instance was added: %w", err)
			}
			log.Info("first start at the binlog file the source was writing when the instance was added",
				"added_at", added.UTC().Format(time.RFC3339), "position", start.String())
		default:
			if start, err = capture.CurrentPosition(ctx, inst.Source, password.Reveal()); err != nil {
				return fmt.Errorf("read the source's current position: %w", err)
			}
		}
		if inst.Snapshot != nil && inst.Snapshot.Initial {
			if start.Snapshot, err = capture.InitialSnapshotProgress(ctx, inst, password.Reveal(), filter); err != nil {
				return err
			}
			if len(start.Snapshot.Tables) == 0 {
				log.Warn("initial snapshot: the source shows the instance's user no table its subscriptions take: nothing to read (grant it SELECT on them, then `binlake instance snapshot`)",
					"source", inst.Source.Addr, "user", inst.Source.User)
			}
		}
		// Commit the starting point at once: a restart before the first row must not
		// jump ahead to a newer "current position" (nor forget the initial snapshot).
		data, _ := json.Marshal(start)
		if version, err = w.opts.Coord.Put(ctx, offKey, data, coord.NoVersion); err != nil {
			if errors.Is(err, coord.ErrVersionConflict) || errors.Is(err, coord.ErrExists) {
				return fmt.Errorf("create %s: %w", offKey, ErrFenced)
			}
			return fmt.Errorf("create %s: %w", offKey, err)
		}
		log.Info("first start of instance", "position", start.String())
	}
	if ctx.Err() != nil {
		return nil
	}
	log.Info("capture starting", "position", start.String(), "token", lead.Token(), "source", inst.Source.Addr, "tls", inst.Source.TLS != nil)
	lag := &capture.LagTracker{}
	if prev, ok := cluster.LastLag(ctx, w.opts.Coord, inst.ID); ok {
		lag.Seed(prev, time.Now())
	}
	w.m.lag.track(inst.ID, lag)
	defer w.m.lag.forget(inst.ID) // the term's lag: none in the error state that may follow
	w.setStatus(inst.ID, func(s *InstanceStatus) {
		s.State, s.Error, s.Reason, s.Position = cluster.StateStarting, "", "", start
	})

	busPub := w.opts.Publisher
	if w.opts.NewPublisher != nil {
		// One publisher per leadership term, closed when the term ends (after Lost, the
		// pipeline has stopped: no new attempt; Close waits at most for the one produce
		// request in flight, bounded by the writer's timeout).
		if busPub, err = w.opts.NewPublisher(); err != nil {
			return fmt.Errorf("open a publisher: %w", err)
		}
		defer func() {
			if cerr := busPub.Close(); cerr != nil {
				log.Debug("close the term's publisher", "err", cerr)
			}
		}()
	}
	items := make(chan capture.Item, w.opts.Pipeline.QueueItems)
	cm := &committer{c: w.opts.Coord, lost: lead.Lost(), key: offKey, id: inst.ID, interval: w.opts.Pipeline.CommitInterval,
		m: w.m, log: log, now: time.Now, version: version, committed: start, kick: make(chan struct{}, 1),
		onCommit: func(p cluster.Position) { w.setStatus(inst.ID, func(s *InstanceStatus) { s.Position = p }) }}
	cm.sync = syncOf(busPub)
	pub := &publisher{id: inst.ID, pub: busPub, lost: lead.Lost(), in: items, maxRows: w.opts.Pipeline.BatchRows,
		backoffMin: 100 * time.Millisecond, backoffMax: w.opts.Pipeline.PublishBackoffMax,
		m: w.m, log: log, commit: cm, rows: start.Rows, lag: lag,
		chunkMsgs: w.opts.Pipeline.PublishChunkMessages, chunkBytes: w.opts.Pipeline.PublishChunkBytes,
		inFlight: w.opts.Pipeline.PublishInFlight, linger: w.opts.Pipeline.PublishLinger}
	if w.opts.Topics != nil {
		pub.recreate = &topicRecreator{create: func(ctx context.Context, topic string, cause error) error {
			spec := w.opts.TopicSpec // as above, at the lead's start
			spec.Name = topic
			return bus.RecreateTopic(ctx, w.opts.Topics, spec, cause, log)
		}}
	}
	// Publishing that fails shows in the status, the state still running (the wave
	// leads and captures): before, /status and instance list said running with no error
	// while rows piled up behind a deleted topic. A reason other than the publisher's
	// (the source reconnecting) is left to its owner.
	pub.health = &publishHealth{
		set: func(reason string, err error) {
			w.setStatus(inst.ID, func(s *InstanceStatus) {
				if s.State == cluster.StateRunning {
					s.Reason, s.Error = reason, err.Error()
				}
			})
		},
		clear: func() {
			w.setStatus(inst.ID, func(s *InstanceStatus) {
				if s.State == cluster.StateRunning && (s.Reason == ReasonTopicMissing || s.Reason == ReasonPublishFailing) {
					s.Reason, s.Error = "", ""
				}
			})
		},
	}
	snapshotRequests := make(chan cluster.SnapshotRequest, 1)
	binlogRead := w.m.binlogRead.WithLabelValues(inst.ID)
	capt, err := capture.New(capture.Options{
		Inst: inst, Password: password.Reveal(), Secret: secret, Filter: filter, Log: log, Out: items,
		MaxBytes: maxBytes, MaxBytesFrom: maxBytesFrom, Partitioner: partitionerOf(busPub),
		OnSkip:       func() { w.m.skipped.WithLabelValues(inst.ID).Inc() },
		OnUnreadable: func() { w.m.unreadable.WithLabelValues(inst.ID).Inc() },
		XAHoldBytes:  w.opts.Pipeline.XAHoldBytes,
		OnError: func(err error) {
			w.m.reconnects.WithLabelValues(inst.ID).Inc()
			w.setStatus(inst.ID, func(s *InstanceStatus) { s.fail(cluster.StateReconnecting, err) })
		},
		OnConn: func() {
			w.setStatus(inst.ID, func(s *InstanceStatus) { s.State, s.Error, s.Reason = cluster.StateRunning, "", "" })
		},
		BackoffMin: 200 * time.Millisecond, BackoffMax: w.opts.Pipeline.ReconnectBackoffMax,
		EventQueue: w.opts.Pipeline.EventQueue, Heartbeat: w.opts.Pipeline.Heartbeat, Lag: lag,
		OnRead:   func(n int) { binlogRead.Add(float64(n)) },
		Snapshot: inst.Snapshot, SnapshotRequests: snapshotRequests,
		OnSnapshot: func(rows, tablesLeft int) {
			w.m.snapshotRows.WithLabelValues(inst.ID).Set(float64(rows))
			w.m.snapshotTables.WithLabelValues(inst.ID).Set(float64(tablesLeft))
		},
	}, start)
	if err != nil {
		return err
	}

	// Sinks before sources: the publisher and committer run in the group, the capture
	// feeds them; the first error cancels all three.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return pub.run(gctx) })
	g.Go(func() error { return cm.run(gctx) })
	g.Go(func() error {
		w.pollSnapshotRequests(gctx, inst.ID, snapshotRequests, log)
		return nil
	})
	g.Go(func() error {
		w.recordLag(gctx, inst.ID, lag, lead.Lost())
		return nil
	})
	g.Go(func() error {
		err := capt.Run(gctx)
		if err == nil && gctx.Err() == nil {
			err = errors.New("capture ended")
		}
		return err
	})
	err = g.Wait()

	select {
	case <-lead.Lost():
		log.Warn("leadership lost: capture stopped without a final commit")
		if err == nil {
			err = errLost
		}
		return err
	default:
	}
	// Stopped while still leading (shutdown, or an error): commit what was acknowledged,
	// so a successor repeats as little as possible.
	fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer fcancel()
	if ferr := cm.flush(fctx); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

var errLost = errors.New("leadership lost")

// topicLimiter is a TopicCreator that tells the largest record batch a topic takes (the
// Kafka bus).
type topicLimiter interface {
	TopicMaxMessageBytes(ctx context.Context, topic string) (int, error)
}

// recordBatchOverhead is what a record batch of one message adds to its key and value:
// Kafka's 61-byte batch header and the record's own fields, rounded up.
const recordBatchOverhead = 128

// isClosed reports whether ch is closed (a nil channel never is).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
