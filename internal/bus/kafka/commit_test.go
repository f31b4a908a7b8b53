package kafka_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
)

// TestUnfinishedNeverCommittedIntegration: a message whose deferred ack was not called
// holds its partition's committed position back through the periodic commits, although
// every later message is done; a subscriber closed in that state leaves it to the next
// one, which gets it and exactly the messages after it again.
func TestUnfinishedNeverCommittedIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tt := newTestTopic(t, ctx, "unfinished", 1, kafka.Options{CommitInterval: 50 * time.Millisecond})
	const n, open = 20, 7
	tt.publishSeq(t, ctx, n, 0)
	group := tt.name + ".group"

	first := tt.subscriber(t, tt.bus, group)
	handled := make(chan struct{})
	running := make(chan error, 1)
	go func() {
		running <- first.Subscribe(ctx, func(hctx context.Context, m bus.Message) error {
			ack := bus.Defer(hctx)
			if s := seq(t, m); s != open {
				ack()
			}
			if seq(t, m) == n-1 {
				close(handled)
			}
			return nil
		})
	}()
	select {
	case <-handled:
	case <-ctx.Done():
		t.Fatal("the first subscriber did not handle every message")
	}
	// The periodic commits move the position up to the open message, never past it.
	var off int64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		off = tt.committed(c, ctx, group)[0]
		assert.GreaterOrEqual(c, off, int64(open), "last committed offset")
	}, time.Minute, 50*time.Millisecond, "the commit of the messages before the open one")
	if off > open {
		t.Fatalf("committed offset %d is past the unfinished message %d", off, open)
	}
	commits := tt.bus.CommitRequests()
	first.Close() // the handler never finishes message 7
	if err := <-running; !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Subscribe after Close = %v, want ErrClosed", err)
	}
	if off := tt.committed(t, ctx, group)[0]; off != open {
		t.Fatalf("committed offset after Close = %d, want %d", off, open)
	}
	if tt.bus.CommitRequests() != commits {
		t.Errorf("Close committed again although nothing more was done")
	}

	var redelivered []int
	next, stop := context.WithCancel(ctx)
	defer stop()
	err := tt.subscriber(t, tt.bus, group).Subscribe(next, func(_ context.Context, m bus.Message) error {
		redelivered = append(redelivered, seq(t, m))
		if seq(t, m) == n-1 {
			stop()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(redelivered) != n-open || redelivered[0] != open {
		t.Fatalf("the next subscriber got %v, want %d..%d", redelivered, open, n-1)
	}
}

// TestCommitsBatchedIntegration: with the default interval (1 s), handling thousands of
// messages costs at most one commit request per elapsed interval plus the last one, and
// that last one, as the subscription ends, covers every message.
func TestCommitsBatchedIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tt := newTestTopic(t, ctx, "batched", 3, kafka.Options{})
	const perPartition = 2000
	tt.publishSeq(t, ctx, perPartition, 100)
	group := tt.name + ".group"

	sctx, stop := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		handled int
	)
	began := time.Now()
	err := tt.subscriber(t, tt.bus, group).SubscribeConcurrent(sctx, func(context.Context, bus.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if handled++; handled == 3*perPartition {
			stop()
		}
		return nil
	})
	elapsed := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	commits := tt.bus.CommitRequests()
	if limit := int64(elapsed/time.Second) + 1; commits < 1 || commits > limit {
		t.Fatalf("%d commit requests for %d messages in %v, want 1 to %d (one per second and the last)",
			commits, 3*perPartition, elapsed, limit)
	}
	for p, off := range tt.committed(t, ctx, group) {
		if off != perPartition {
			t.Errorf("partition %d committed at %d, want %d (every message)", p, off, perPartition)
		}
	}
	t.Logf("%d messages, %d commit requests in %v", 3*perPartition, commits, elapsed)
}

// TestRevocationCommitsIntegration: when a second member joins, the first commits what it
// finished before giving partitions up, although its interval never came: the second
// member gets none of the messages the first handled, only the new ones.
func TestRevocationCommitsIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	never := kafka.Options{CommitInterval: time.Hour}
	tt := newTestTopic(t, ctx, "revocation", 2, never)
	const perPartition = 50
	tt.publishSeq(t, ctx, perPartition, 0)
	group := tt.name + ".group"

	type delivery struct {
		member int
		seq    int
	}
	got := make(chan delivery, 100*perPartition)
	handler := func(member int) bus.Handler {
		return func(ctx context.Context, m bus.Message) error {
			select {
			case got <- delivery{member, seq(t, m)}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	run := func(s bus.Subscriber, member int) {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := s.Subscribe(sctx, handler(member)); err != nil {
				t.Errorf("member %d: %v", member, err)
			}
		}()
		t.Cleanup(func() { stop(); <-done })
	}
	run(tt.subscriber(t, tt.bus, group), 0)
	for range 2 * perPartition {
		select {
		case d := <-got:
			if d.member != 0 {
				t.Fatalf("delivery %+v from a member that is not running", d)
			}
		case <-ctx.Done():
			t.Fatal("the first member did not get every message")
		}
	}
	if c := tt.bus.CommitRequests(); c != 0 {
		t.Fatalf("%d commits before the interval and any rebalance", c)
	}

	second := tt.newBus(t, never)
	s2 := tt.subscriber(t, second, group)
	run(s2, 1)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pos, err := s2.(bus.Positioner).Position(ctx)
		require.NoError(c, err)
		assert.True(c, pos.Known && len(pos.Partitions) == 1, "last position: %+v", pos)
	}, time.Minute, 50*time.Millisecond, "the second member's partition")
	if tt.bus.CommitRequests() == 0 {
		t.Fatal("the first member gave a partition up without committing")
	}

	// Sequence numbers from perPartition on are new: the old ones must not come again.
	var more []bus.Message
	for i := range perPartition {
		for p := range 2 {
			more = append(more, bus.Message{Topic: tt.name, Key: []byte(keyFor(p, 2)), Value: []byte(strconv.Itoa(perPartition + i))})
		}
	}
	if err := tt.pub.Publish(ctx, more...); err != nil {
		t.Fatal(err)
	}
	perMember := [2]int{}
	for range len(more) {
		select {
		case d := <-got:
			if d.seq < perPartition {
				t.Fatalf("member %d got message %d again: the first member's work was not committed on revocation", d.member, d.seq)
			}
			perMember[d.member]++
		case <-ctx.Done():
			t.Fatalf("got %v of %d new messages", perMember, len(more))
		}
	}
	if perMember[1] == 0 {
		t.Errorf("the second member got none of the new messages (per member %v)", perMember)
	}
}
