package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
)

var _ bus.ConcurrentSubscriber = (*subscriber)(nil)

// joinAttempts is how many times in a row joining the group may fail before Subscribe
// returns the error (kafka-go's Reader gave up after as many).
const joinAttempts = 3

type subscriber struct {
	b    *Bus
	opts bus.SubscribeOptions

	mu      sync.Mutex
	closed  bool
	running bool
	stop    context.CancelFunc // ends the running Subscribe call (Close)
	// process names this subscriber's process in the group (Position); clientID, the
	// running call's member, is process-<call>; calls counts the calls.
	// ends are the partitions' end offsets Position saw last.
	process  string
	calls    int
	clientID string
	ends     map[int]int64
}

// Subscribe delivers the group's messages to h, one call at a time across partitions.
func (s *subscriber) Subscribe(ctx context.Context, h bus.Handler) error {
	return s.subscribe(ctx, h, false)
}

// SubscribeConcurrent delivers the group's messages to h from one goroutine per
// assigned partition.
func (s *subscriber) SubscribeConcurrent(ctx context.Context, h bus.Handler) error {
	return s.subscribe(ctx, h, true)
}

// subscribe joins the consumer group and handles one generation (one assignment of
// partitions) after the other until ctx ends, Close is called or h fails. It leaves the
// group as it returns, having committed what was done. A topic deleted meanwhile is
// waited for outside the group (awaitTopic), and read from its start once it is back.
//
// Why kafka-go's ConsumerGroup rather than its group Reader, which merges all partitions
// into one stream: workers fed from that stream block each other (a full worker stops
// the dispatch to the others), and the Reader does not say when a rebalance takes its
// partitions, so it cannot commit what was done at that moment. A Generation gives the
// assigned partitions, runs the per-partition goroutines and ends them explicitly.
func (s *subscriber) subscribe(ctx context.Context, h bus.Handler, concurrent bool) error {
	if h == nil {
		return fmt.Errorf("subscribe to %s: nil handler", s.opts.Topic)
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return bus.ErrClosed
	case s.running:
		s.mu.Unlock()
		return fmt.Errorf("subscribe to %s as group %s: this subscriber is already subscribing", s.opts.Topic, s.opts.Group)
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()

	if !concurrent {
		h = serial(h)
	}
	fromFirst := false
	for {
		// kafka-go would retry an unknown topic forever; say so instead, unless this
		// subscriber read the topic before: then it was deleted, and it waits for it.
		ok, err := s.b.topicExists(ctx, s.opts.Topic)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("subscribe to %s: %w", s.opts.Topic, err)
		case !ok && !s.joinedBefore():
			return fmt.Errorf("subscribe to %q: %w", s.opts.Topic, bus.ErrUnknownTopic)
		case !ok:
			if err := s.awaitTopic(ctx); err != nil || ctx.Err() != nil {
				return err
			}
			// Everything in a topic created again was written after the old one went:
			// a group that starts at the end would skip what came before it rejoined.
			fromFirst = true
		}
		err = s.session(ctx, h, fromFirst)
		if !errors.Is(err, errTopicGone) {
			return err
		}
	}
}

// session joins the group and handles one generation after the other until ctx ends,
// Close is called, h fails or the topic is gone (errTopicGone). It leaves the group as it
// returns, having committed what was done.
func (s *subscriber) session(ctx context.Context, h bus.Handler, fromFirst bool) error {
	s.evictStale(ctx)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cg, err := s.join(cancel, fromFirst)
	if err != nil {
		return err
	}
	defer s.leave(cg)
	log := s.b.log.With("topic", s.opts.Topic, "group", s.opts.Group)
	failed := 0
	for {
		gen, err := cg.Next(runCtx)
		switch {
		case runCtx.Err() != nil:
			if s.isClosed() {
				return bus.ErrClosed
			}
			return nil
		case err != nil && s.topicGone(runCtx):
			return errTopicGone
		case err != nil:
			// kafka-go logs the failure and tries again after JoinGroupBackoff.
			if failed++; failed == joinAttempts {
				return fmt.Errorf("subscribe to %s as group %s: join: %w", s.opts.Topic, s.opts.Group, s.b.explain(ctx, err))
			}
			continue
		}
		failed = 0
		err = s.runGeneration(runCtx, gen, h, log)
		// A deleted topic ends every generation at once (kafka-go's partition watcher
		// cannot read its partitions), and the next one is joined at once: thousands a
		// second, a quarter of a core, until the topic came back. A generation's end is
		// rare otherwise (a rebalance), so asking the cluster each time costs nothing.
		// A commit that failed because the topic went is no failure of the subscription:
		// its messages went with the topic.
		if runCtx.Err() == nil && s.topicGone(runCtx) {
			return errTopicGone
		}
		if err != nil {
			return err
		}
	}
}

// serial makes h's calls from the partitions' workers take turns: the contract of
// Subscribe for handlers that are not safe for concurrent calls.
func serial(h bus.Handler) bus.Handler {
	var mu sync.Mutex
	return func(ctx context.Context, m bus.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err // the partition was given up while this worker waited its turn
		}
		return h(ctx, m)
	}
}

// join creates the consumer group member, unless Close came first; stop is how Close
// ends the Subscribe call. fromFirst starts partitions the group never committed at
// their first message whatever the subscription's StartAt (a topic created again).
func (s *subscriber) join(stop context.CancelFunc, fromFirst bool) (*kafkago.ConsumerGroup, error) {
	o := s.b.opts
	start := kafkago.FirstOffset
	if s.opts.StartAt == bus.StartLast && !fromFirst {
		start = kafkago.LastOffset
	}
	info, errs := s.b.loggers()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, bus.ErrClosed
	}
	dialer := *s.b.dialer
	s.calls++
	dialer.ClientID = fmt.Sprintf("%s-%d", s.process, s.calls)
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                s.opts.Group,
		Brokers:           o.Brokers,
		Dialer:            &dialer,
		Topics:            []string{s.opts.Topic},
		HeartbeatInterval: o.HeartbeatInterval,
		SessionTimeout:    o.SessionTimeout,
		RebalanceTimeout:  o.RebalanceTimeout,
		JoinGroupBackoff:  o.JoinGroupBackoff,
		StartOffset:       start,
		// Partitions added to the topic later are consumed too.
		WatchPartitionChanges: true,
		Logger:                info,
		ErrorLogger:           errs,
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s as group %s: %w", s.opts.Topic, s.opts.Group, err)
	}
	s.clientID, s.ends, s.stop = dialer.ClientID, nil, stop
	return cg, nil
}

// leave leaves the group, so the remaining members take over its partitions promptly.
func (s *subscriber) leave(cg *kafkago.ConsumerGroup) {
	s.mu.Lock()
	s.clientID, s.ends, s.stop = "", nil, nil
	s.mu.Unlock()
	if err := cg.Close(); err != nil {
		s.b.log.Warn("leave consumer group", "topic", s.opts.Topic, "group", s.opts.Group, "err", err)
	}
}

func (s *subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close ends a running Subscribe (it returns bus.ErrClosed once its workers stopped and
// committed what was done) and makes later calls fail with ErrClosed. It does not wait.
func (s *subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	stop := s.stop
	s.mu.Unlock()
	s.b.forget(nil, s)
	if stop != nil {
		stop()
	}
	return nil
}

func rebalancing(err error) bool {
	return errors.Is(err, kafkago.RebalanceInProgress) || errors.Is(err, kafkago.IllegalGeneration) ||
		errors.Is(err, kafkago.UnknownMemberId) || errors.Is(err, kafkago.NotCoordinatorForGroup)
}
