package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/bus"
)

// A topic deleted under a subscription (an operator, or a script, deleting the metrics
// topic) is waited for: the subscriber leaves its group, so that the group does not
// rebalance in a loop, and looks for the topic again with a backoff until it is created
// again (the agent does that with its next batch), then rejoins. While it waits it is no
// member of the group: Position answers unknown, steadily, until it reads again.
const (
	// topicWaitFirst and topicWaitMax bound the backoff between looks at a missing
	// topic: each look is one metadata request. At most 5 s, so that the subscription
	// resumes within seconds of the topic coming back (as SubscribeWithRetry's limit).
	topicWaitFirst = 500 * time.Millisecond
	topicWaitMax   = 5 * time.Second
	// topicReminder is how often a topic still missing is said again.
	topicReminder = time.Minute
)

// errTopicGone ends a session whose topic no longer exists.
var errTopicGone = errors.New("topic gone")

// joinedBefore reports whether this subscriber joined its group before: its topic
// existed then, so a missing topic now was deleted, not misspelt.
func (s *subscriber) joinedBefore() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls > 0
}

// topicGone asks the cluster whether the subscription's topic is gone. A failed
// question (a broker down) is no answer: the caller goes on as before.
func (s *subscriber) topicGone(ctx context.Context) bool {
	ok, err := s.b.topicExists(ctx, s.opts.Topic)
	return err == nil && !ok
}

// awaitTopic waits until the subscription's topic exists again: nil then, or when ctx
// ends; bus.ErrClosed when Close is called meanwhile. It warns once that the topic is
// missing, again every topicReminder while it is, and says when it is back.
func (s *subscriber) awaitTopic(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return bus.ErrClosed
	}
	s.stop = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.stop = nil
		s.mu.Unlock()
	}()
	log := s.b.log.With("topic", s.opts.Topic, "group", s.opts.Group)
	log.Warn("the topic is missing (deleted?); left its consumer group, waiting for the topic to be created again",
		"looking_every_up_to", topicWaitMax.String())
	since := time.Now()
	said := since
	bo := backoff.New(topicWaitFirst, topicWaitMax)
	for {
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			if s.isClosed() {
				return bus.ErrClosed
			}
			return nil
		case <-t.C:
		}
		ok, err := s.b.topicExists(ctx, s.opts.Topic)
		if ok {
			log.Info("the topic is back; subscribing again from its first message", "missing_for", time.Since(since).Round(time.Second).String())
			return nil
		}
		if now := time.Now(); now.Sub(said) >= topicReminder {
			said = now
			args := []any{"missing_for", now.Sub(since).Round(time.Second).String()}
			if err != nil {
				args = append(args, "err", err) // the question failed: a broker down too
			}
			log.Warn("the topic is still missing; waiting for it", args...)
		}
	}
}
