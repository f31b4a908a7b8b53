package wave

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// A topic deleted under a leading wave (an operator, a script): the writes fail with
// bus.ErrUnknownTopic, and the publisher creates the topic again with the spec the lead
// created it with (topicRecreator), then writes the chunk it holds again. Nothing is
// lost: a chunk is acknowledged only once written, the lanes keep their order, and the
// offset covers acknowledged rows only. What the deleted topic held is gone with it.
//
// While publishing fails, for that or any reason, the instance's status says so
// (publishHealth): its state stays running (it leads and captures), with the reason
// topic_missing or publish_failing and the error, until every lane got through again.

// topicRecreator creates deleted topics again, once for the lanes that found one gone
// together.
type topicRecreator struct {
	create func(ctx context.Context, topic string, cause error) error

	mu   sync.Mutex
	done map[string]time.Time // when each topic was last created again
}

// recreate creates topic again after a write that started at tried failed with cause,
// unless another lane created it since then: its write then found the topic missing too.
func (r *topicRecreator) recreate(ctx context.Context, topic string, tried time.Time, cause error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.done[topic]; ok && at.After(tried) {
		return nil
	}
	if err := r.create(ctx, topic, cause); err != nil {
		return err
	}
	if r.done == nil {
		r.done = map[string]time.Time{}
	}
	r.done[topic] = time.Now()
	return nil
}

// topicError names the topic whose partition lookup failed (split), so that a deleted
// one can be created again.
type topicError struct {
	topic string
	err   error
}

func (e *topicError) Error() string { return e.err.Error() } // the bus's error names the topic
func (e *topicError) Unwrap() error { return e.err }

// missingTopic is the topic err says is missing (bus.ErrUnknownTopic), if it does: the
// one its topicError names, else the only topic of msgs.
func missingTopic(err error, msgs []bus.Message) (string, bool) {
	if !errors.Is(err, bus.ErrUnknownTopic) {
		return "", false
	}
	var te *topicError
	if errors.As(err, &te) {
		return te.topic, true
	}
	if len(msgs) == 0 {
		return "", false
	}
	for _, m := range msgs[1:] {
		if m.Topic != msgs[0].Topic {
			return "", false // the writer's error does not say which: retried as it is
		}
	}
	return msgs[0].Topic, true
}

// publishHealth tells the instance's status while publishing fails: set is called with
// each failure's error, clear once no attempt is failing any more (a lane that fails
// while another gets through keeps the reason). Either may be nil.
type publishHealth struct {
	set   func(reason string, err error)
	clear func()

	mu      sync.Mutex
	failing int // attempts (one per chunk being retried) that failed and have not got through yet
	reason  string
	setAt   time.Time
}

// healthRefresh is how often a failure with the reason already shown updates the error
// text: each change is a write of the status record to the coordinator, and every lane
// fails at its backoff's pace while the bus is down.
const healthRefresh = 5 * time.Second

// failed is an attempt's failure; first says it is the chunk's first (it now counts as
// failing until done is called for it).
func (h *publishHealth) failed(err error, first bool) {
	if h == nil {
		return
	}
	reason := ReasonPublishFailing
	if errors.Is(err, bus.ErrUnknownTopic) {
		reason = ReasonTopicMissing
	}
	now := time.Now()
	h.mu.Lock()
	if first {
		h.failing++
	}
	say := reason != h.reason || now.Sub(h.setAt) >= healthRefresh
	if say {
		h.reason, h.setAt = reason, now
	}
	h.mu.Unlock()
	if say && h.set != nil {
		h.set(reason, err)
	}
}

// done ends a chunk's failing (it got through, or the publisher stops).
func (h *publishHealth) done() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.failing--
	last := h.failing == 0
	if last {
		h.reason, h.setAt = "", time.Time{}
	}
	h.mu.Unlock()
	if last && h.clear != nil {
		h.clear()
	}
}

// failed counts a write that failed at tried and says so in the instance's status
// (failing: this streak is already said). When err says the topic was deleted it creates
// the topic again as the lead did, and again is true: write at once, unless the attempt
// before followed a recreate too (recreated), then back off as for any failure. It
// returns err with the recreate's own failure added.
func (p *publisher) failed(ctx context.Context, err error, msgs []bus.Message, tried time.Time, failing, recreated *bool) (again bool, _ error) {
	p.m.publishErrors.WithLabelValues(p.id).Inc()
	p.health.failed(err, !*failing)
	*failing = true
	if topic, ok := missingTopic(err, msgs); ok && p.recreate != nil {
		rerr := p.recreate.recreate(ctx, topic, tried, err)
		if rerr == nil && !*recreated {
			*recreated = true
			return true, err
		}
		if rerr != nil {
			err = fmt.Errorf("%w (and %w)", err, rerr)
		}
	}
	*recreated = false
	return false, err
}
