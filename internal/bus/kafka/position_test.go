package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// member is one Subscribe call of a group, running until the test ends; its handler
// waits for gate when one is set.
type member struct {
	sub  bus.Subscriber
	pos  bus.Positioner
	gate chan struct{}
	got  chan bus.Message
	stop func()
}

func join(t *testing.T, ctx context.Context, b *kafka.Bus, topic, group string, gate chan struct{}) *member {
	t.Helper()
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: group})
	if err != nil {
		t.Fatal(err)
	}
	pos, ok := sub.(bus.Positioner)
	if !ok {
		t.Fatalf("the kafka subscriber %T is no bus.Positioner", sub)
	}
	m := &member{sub: sub, pos: pos, gate: gate, got: make(chan bus.Message, 100)}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- sub.Subscribe(sctx, func(ctx context.Context, msg bus.Message) error {
			if m.gate != nil {
				select {
				case <-m.gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			m.got <- msg
			return nil
		})
	}()
	m.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("subscribe: %v", err)
		}
		sub.Close()
	}
	t.Cleanup(func() {
		if sctx.Err() == nil {
			m.stop()
		}
	})
	return m
}

// waitPosition asks the member every 100 ms until ok accepts the answer, failing after
// 60 s with the last one.
func (m *member) waitPosition(t *testing.T, ctx context.Context, what string, ok func(bus.Position) bool) bus.Position {
	t.Helper()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := m.pos.Position(ctx)
		if err == nil && ok(p) {
			return p
		}
		select {
		case <-deadline:
			t.Fatalf("%s: last answer %+v, err %v", what, p, err)
		case <-tick.C:
		}
	}
}

// TestPositionIntegration: on the real Kafka, a member's Position names the partitions
// the group coordinator assigned it (all of them alone; a disjoint share once a second
// member joined; all again once that one left) and says whether it handled and
// committed what its partitions held at the previous call.
func TestPositionIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), ClientID: "binlake-position", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("binlake-position-%d", time.Now().UnixNano())
	group := topic + "-group"
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2}

	gate := make(chan struct{})
	a := join(t, ctx, b, topic, group, gate)
	first := a.waitPosition(t, ctx, "A alone holds every partition", func(p bus.Position) bool { return p.Known })
	if !slices.Equal(first.Partitions, all) || first.CaughtUp {
		t.Fatalf("first known answer %+v: want every partition, not yet caught up (newly assigned)", first)
	}
	if first.Process == "" || !slices.Equal(first.Processes, []string{first.Process}) {
		t.Fatalf("A alone: process %q, processes %q; want A's own, alone", first.Process, first.Processes)
	}
	if p := a.waitPosition(t, ctx, "A caught up on the empty topic", func(p bus.Position) bool { return p.CaughtUp }); !slices.Equal(p.Partitions, all) {
		t.Fatalf("A holds %v, want %v", p.Partitions, all)
	}

	// Messages on every partition; A's handler waits at the gate, so A commits nothing.
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	const n = 30
	msgs := make([]bus.Message, n)
	for i := range msgs {
		msgs[i] = bus.Message{Topic: topic, Key: fmt.Appendf(nil, "node-%d", i), Value: []byte("x")}
	}
	if err := pub.Publish(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pos.Position(ctx); err != nil { // sees the new ends
		t.Fatal(err)
	}
	for range 2 {
		p, err := a.pos.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Known || p.CaughtUp {
			t.Fatalf("A with %d messages unhandled: %+v, want known and behind", n, p)
		}
	}
	close(gate)
	for range n {
		select {
		case <-a.got:
		case <-ctx.Done():
			t.Fatal("A did not handle the messages")
		}
	}
	a.waitPosition(t, ctx, "A caught up after handling everything", func(p bus.Position) bool { return p.CaughtUp })

	// B joins: the coordinator splits the partitions between A and B.
	bm := join(t, ctx, b, topic, group, nil)
	split := func(p bus.Position) bool { return p.Known && len(p.Partitions) > 0 && len(p.Partitions) < len(all) }
	pa := a.waitPosition(t, ctx, "A holds a share after B joined", split)
	pb := bm.waitPosition(t, ctx, "B holds a share", split)
	pa = a.waitPosition(t, ctx, "A's share, same generation as B's", func(p bus.Position) bool {
		return split(p) && len(p.Partitions)+len(pb.Partitions) == len(all)
	})
	union := slices.Sorted(slices.Values(append(slices.Clone(pa.Partitions), pb.Partitions...)))
	if !slices.Equal(union, all) {
		t.Fatalf("A holds %v and B %v: want a disjoint split of %v", pa.Partitions, pb.Partitions, all)
	}
	t.Logf("after B joined: A holds %v, B holds %v", pa.Partitions, pb.Partitions)
	both := slices.Sorted(slices.Values([]string{pa.Process, pb.Process}))
	if pa.Process == pb.Process || !slices.Equal(pa.Processes, both) {
		t.Fatalf("A (%q) sees processes %q, B is %q: want both, distinct", pa.Process, pa.Processes, pb.Process)
	}
	bm.waitPosition(t, ctx, "B caught up on its share (A committed it before)", func(p bus.Position) bool { return p.CaughtUp })

	// B leaves: A holds everything again.
	bm.stop()
	if p, err := bm.pos.Position(ctx); err != nil || p.Known {
		t.Fatalf("a member that left: %+v, %v; want unknown", p, err)
	}
	alone := a.waitPosition(t, ctx, "A holds every partition again", func(p bus.Position) bool {
		return p.Known && slices.Equal(p.Partitions, all)
	})
	if !slices.Equal(alone.Processes, []string{pa.Process}) {
		t.Fatalf("after B left, A sees processes %q, want only its own %q", alone.Processes, pa.Process)
	}
}

// TestRejoinAfterBrokerCrashIntegration: a subscriber whose broker crashed (kill -9) gets
// its partitions back soon after the broker serves again, although the member its ended
// call left behind could not leave: the next call removes it. Without that, the
// coordinator holds the new join until the old member's session times out, a minute
// here (SessionTimeout), so the wait below is structural, not a speed figure.
func TestRejoinAfterBrokerCrashIntegration(t *testing.T) {
	t.Parallel() // waits on a broker of its own
	broker := testenv.StartKafkaBroker(t)
	ctx := testenv.Context(t)
	const session = time.Minute
	b, err := kafka.New(kafka.Options{Brokers: []string{broker.Addr()}, ClientID: "binlake-rejoin", Logger: testLogger(t),
		SessionTimeout: session, RebalanceTimeout: session})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	topic := fmt.Sprintf("binlake-rejoin-%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + "-group"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	pos := sub.(bus.Positioner)
	sctx, stop := context.WithCancel(ctx)
	subscribed := make(chan struct{})
	go func() {
		defer close(subscribed)
		bus.SubscribeWithRetry(sctx, sub, func(context.Context, bus.Message) error { return nil },
			bus.RetryOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	}()
	t.Cleanup(func() { stop(); <-subscribed }) // runs before the Closes registered above
	known := func(limit time.Duration) bool {
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			if p, err := pos.Position(ctx); err == nil && p.Known && len(p.Partitions) == 2 {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	if !known(time.Minute) {
		t.Fatal("the subscriber never held the topic's partitions")
	}
	broker.Stop(t, syscall.SIGKILL)
	broker.Start(t)
	if !known(session / 2) {
		t.Fatalf("the subscriber did not hold its partitions again within %s of the broker serving: "+
			"its earlier member (session timeout %s) was not removed", session/2, session)
	}
}
