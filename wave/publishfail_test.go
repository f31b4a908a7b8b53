package wave

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// TestPublishHealthClearsWhenEveryLaneGotThrough: the status says topic_missing or
// publish_failing from a lane's first failure until the last failing lane got through,
// and a lane getting through while another still fails leaves it.
func TestPublishHealthClearsWhenEveryLaneGotThrough(t *testing.T) {
	var reason string
	h := &publishHealth{set: func(r string, _ error) { reason = r }, clear: func() { reason = "" }}
	gone := fmt.Errorf("publish: %w", bus.ErrUnknownTopic)
	h.failed(gone, true) // lane 1
	if reason != ReasonTopicMissing {
		t.Fatalf("reason %q after an unknown topic, want %s", reason, ReasonTopicMissing)
	}
	h.failed(errors.New("broker down"), true) // lane 2
	if reason != ReasonPublishFailing {
		t.Fatalf("reason %q after another error, want %s", reason, ReasonPublishFailing)
	}
	h.done() // lane 1 got through
	if reason == "" {
		t.Fatal("cleared while lane 2 still fails")
	}
	h.done() // lane 2 too
	if reason != "" {
		t.Fatalf("reason %q once every lane got through, want none", reason)
	}
	var nilHealth *publishHealth // a publisher without a status
	nilHealth.failed(gone, true)
	nilHealth.done()
}

// TestTopicRecreatedOnceForLanesThatFailedTogether: lanes whose writes found the topic
// missing before it was created again do not create it again each.
func TestTopicRecreatedOnceForLanesThatFailedTogether(t *testing.T) {
	n := 0
	r := &topicRecreator{create: func(context.Context, string, error) error { n++; return nil }}
	tried := time.Now()
	for range 3 {
		if err := r.recreate(context.Background(), "t", tried, bus.ErrUnknownTopic); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("created %d times for three lanes that failed together, want 1", n)
	}
	time.Sleep(time.Millisecond)
	if err := r.recreate(context.Background(), "t", time.Now(), bus.ErrUnknownTopic); err != nil || n != 2 {
		t.Fatalf("a write after the recreate found it missing again: created %d times (%v), want 2", n, err)
	}
	if topic, ok := missingTopic(&topicError{topic: "u", err: bus.ErrUnknownTopic}, nil); !ok || topic != "u" {
		t.Errorf("missingTopic of a partition lookup = %q, %v", topic, ok)
	}
	two := []bus.Message{{Topic: "a"}, {Topic: "b"}}
	if _, ok := missingTopic(bus.ErrUnknownTopic, two); ok {
		t.Error("missingTopic named a topic for a write to two")
	}
}
