// Package bustest is the conformance suite that every bus.Bus implementation passes,
// so that business code can rely on the same delivery semantics from the in-process
// bus (embedded shape) and from Kafka (distributed shape).
//
// Every subtest uses its own topics and groups (a unique suffix per run) because the
// Kafka broker is shared by every test in the tree and keeps its state between runs.
// Subtests run in parallel: against Kafka they spend most of their time waiting for
// consumer-group rebalances, not on CPU.
package bustest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// Timeout bounds each wait of the suite. It is generous because a Kafka consumer group
// may need several seconds to rebalance on a loaded 2-core machine; a healthy bus
// finishes far earlier, and the suite polls rather than sleeps.
var Timeout = 60 * time.Second

// Run runs the conformance suite. newBus returns a fresh, open bus; the suite closes it.
func Run(t *testing.T, newBus func(t *testing.T) bus.Bus) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b bus.Bus)
	}{
		{"CreateTopicIdempotent", testCreateTopicIdempotent},
		{"CreateTopicInvalid", testCreateTopicInvalid},
		{"UnknownTopic", testUnknownTopic},
		{"PerKeyOrder", testPerKeyOrder},
		{"EveryGroupGetsEveryMessage", testEveryGroup},
		{"GroupMembersShare", testGroupMembersShare},
		{"AtLeastOnce", testAtLeastOnce},
		{"StartPosition", testStartPosition},
		{"MessageTooLarge", testMessageTooLarge},
		{"Close", testClose},
		{"ContextCancel", testContextCancel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBus(t)
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, b)
		})
	}
}

// unique returns a topic or group name that no earlier run used: Kafka keeps topics,
// groups and committed offsets between runs.
func unique(t *testing.T, kind string) string {
	var buf [4]byte
	if _, err := rand.Read(buf[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	// Kafka topic names allow [a-zA-Z0-9._-] and 249 characters.
	name := []byte(t.Name())
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			name[i] = '_'
			if c == '/' {
				name[i] = '.'
			}
		}
	}
	if len(name) > 180 {
		name = name[len(name)-180:]
	}
	return fmt.Sprintf("bustest.%s.%s.%s", name, kind, hex.EncodeToString(buf[:]))
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t *testing.T, b bus.Bus, partitions int) string {
	t.Helper()
	topic := unique(t, "topic")
	if err := b.CreateTopic(deadline(t), bus.TopicSpec{Name: topic, Partitions: partitions}); err != nil {
		t.Fatalf("CreateTopic(%s): %v", topic, err)
	}
	return topic
}

func publisher(t *testing.T, b bus.Bus) bus.Publisher {
	t.Helper()
	p, err := b.Publisher()
	if err != nil {
		t.Fatalf("Publisher: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func subscriber(t *testing.T, b bus.Bus, opts bus.SubscribeOptions) bus.Subscriber {
	t.Helper()
	s, err := b.Subscriber(opts)
	if err != nil {
		t.Fatalf("Subscriber(%+v): %v", opts, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func publish(t *testing.T, p bus.Publisher, msgs ...bus.Message) {
	t.Helper()
	if err := p.Publish(deadline(t), msgs...); err != nil {
		t.Fatalf("Publish(%d messages): %v", len(msgs), err)
	}
}

func msg(topic, key, value string) bus.Message {
	return bus.Message{Topic: topic, Key: []byte(key), Value: []byte(value)}
}

// running is one Subscribe call in its own goroutine.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs s.Subscribe(h) until the test ends (or stop is called).
func start(t *testing.T, s bus.Subscriber, h bus.Handler) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Subscribe(ctx, h) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the subscription and returns what Subscribe returned.
func (r *running) stop(t *testing.T) error {
	r.cancel()
	return r.wait(t)
}

func (r *running) wait(t *testing.T) error {
	select {
	case err := <-r.done:
		r.done <- err // later calls see the same result
		return err
	case <-time.After(Timeout):
		t.Errorf("Subscribe did not return within %v", Timeout)
		return nil
	}
}

// collector is a handler that forwards every delivered message to a channel.
type collector struct {
	ch chan bus.Message
}

func newCollector() *collector { return &collector{ch: make(chan bus.Message, 100000)} }

func (c *collector) handle(ctx context.Context, m bus.Message) error {
	select {
	case c.ch <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next returns the next delivered message or fails the test at the deadline.
func (c *collector) next(t *testing.T, ctx context.Context, what string) bus.Message {
	t.Helper()
	select {
	case m := <-c.ch:
		return m
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
		return bus.Message{}
	}
}

func testCreateTopicIdempotent(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	topic := unique(t, "topic")
	spec := bus.TopicSpec{Name: topic, Partitions: 3}
	for i := range 3 {
		if err := b.CreateTopic(ctx, spec); err != nil {
			t.Fatalf("CreateTopic #%d: %v", i+1, err)
		}
	}
	// The topic is usable after repeated creation: a message goes through.
	p := publisher(t, b)
	publish(t, p, msg(topic, "k", "v"))
	c := newCollector()
	start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "group")}), c.handle)
	if m := c.next(t, ctx, "the message"); string(m.Value) != "v" || m.Topic != topic {
		t.Fatalf("got %q on %q, want %q on %q", m.Value, m.Topic, "v", topic)
	}
}

func testCreateTopicInvalid(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	for _, tc := range []struct {
		name string
		spec bus.TopicSpec
	}{
		{"empty name", bus.TopicSpec{}},
		{"negative partitions", bus.TopicSpec{Name: unique(t, "topic"), Partitions: -1}},
		{"negative replication", bus.TopicSpec{Name: unique(t, "topic"), Replication: -1}},
		{"negative max message bytes", bus.TopicSpec{Name: unique(t, "topic"), MaxMessageBytes: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := b.CreateTopic(ctx, tc.spec); err == nil {
				t.Fatalf("CreateTopic(%+v) succeeded, want an error", tc.spec)
			}
		})
	}
}

func testUnknownTopic(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	topic := unique(t, "missing")
	p := publisher(t, b)
	err := p.Publish(ctx, msg(topic, "k", "v"))
	if !errors.Is(err, bus.ErrUnknownTopic) {
		t.Fatalf("Publish to %s = %v, want ErrUnknownTopic", topic, err)
	}
	if !strings.Contains(err.Error(), topic) {
		t.Errorf("error %q does not name the topic %s", err, topic)
	}
	// Subscribing to an unknown topic fails too, either when the subscriber is made
	// or when it subscribes (a network bus may only find out then).
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: unique(t, "group")})
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
		err = s.Subscribe(ctx, func(context.Context, bus.Message) error {
			return errors.New("delivered a message from a topic that does not exist")
		})
	}
	if !errors.Is(err, bus.ErrUnknownTopic) {
		t.Fatalf("subscribing to %s = %v, want ErrUnknownTopic", topic, err)
	}
}

// testPerKeyOrder publishes interleaved keys in batches of uneven size to a topic with
// several partitions and checks that each key's messages arrive in publish order.
func testPerKeyOrder(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	const keys, perKey, batch = 12, 50, 37
	topic := createTopic(t, b, 4)
	p := publisher(t, b)

	var all []bus.Message
	for seq := range perKey {
		for k := range keys {
			all = append(all, msg(topic, "key-"+strconv.Itoa(k), strconv.Itoa(seq)))
		}
	}
	for len(all) > 0 {
		n := min(batch, len(all))
		publish(t, p, all[:n]...)
		all = all[n:]
	}

	c := newCollector()
	start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "group")}), c.handle)
	nextSeq := map[string]int{}
	partitionOf := map[string]int{}
	lastOffset := map[int]int64{}
	for range keys * perKey {
		m := c.next(t, ctx, "all messages")
		key := string(m.Key)
		if want := strconv.Itoa(nextSeq[key]); string(m.Value) != want {
			t.Fatalf("key %s: got message %s, want %s (per-key order broken)", key, m.Value, want)
		}
		nextSeq[key]++
		if p, ok := partitionOf[key]; ok && p != m.Partition {
			t.Fatalf("key %s delivered from partitions %d and %d", key, p, m.Partition)
		}
		partitionOf[key] = m.Partition
		if last, ok := lastOffset[m.Partition]; ok && m.Offset <= last {
			t.Fatalf("partition %d: offset %d after %d", m.Partition, m.Offset, last)
		}
		lastOffset[m.Partition] = m.Offset
	}
	if len(lastOffset) < 2 {
		t.Errorf("%d keys all landed in %d partition(s) of 4: keys are not spread", keys, len(lastOffset))
	}
}

func testEveryGroup(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	const n = 100
	topic := createTopic(t, b, 2)
	p := publisher(t, b)
	var msgs []bus.Message
	for i := range n {
		msgs = append(msgs, msg(topic, "k"+strconv.Itoa(i%7), strconv.Itoa(i)))
	}
	publish(t, p, msgs...)

	var wg sync.WaitGroup
	for g := range 2 {
		c := newCollector()
		start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "group"+strconv.Itoa(g))}), c.handle)
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]bool{}
			for len(seen) < n {
				select {
				case m := <-c.ch:
					if seen[string(m.Value)] {
						t.Errorf("group %d: message %s delivered twice without a failure", g, m.Value)
					}
					seen[string(m.Value)] = true
				case <-ctx.Done():
					t.Errorf("group %d: got %d of %d messages: %v", g, len(seen), n, ctx.Err())
					return
				}
			}
		}()
	}
	wg.Wait()
}

// testGroupMembersShare runs two members of one group. Probes are published until both
// members have received one, which means both hold partitions in a settled group; then
// the real messages must each reach exactly one member, and both members get some.
func testGroupMembersShare(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	const n, keys = 200, 20
	topic := createTopic(t, b, 4)
	group := unique(t, "group")
	p := publisher(t, b)

	type delivery struct {
		member int
		m      bus.Message
	}
	ch := make(chan delivery, 100000)
	for member := range 2 {
		s := subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: group})
		start(t, s, func(ctx context.Context, m bus.Message) error {
			select {
			case ch <- delivery{member, m}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}

	probed := [2]bool{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !probed[0] || !probed[1] {
		select {
		case d := <-ch:
			if string(d.m.Value) == "probe" {
				probed[d.member] = true
			}
		case <-tick.C:
			// One probe per key spreads them over every partition.
			var probes []bus.Message
			for k := range keys {
				probes = append(probes, msg(topic, "key-"+strconv.Itoa(k), "probe"))
			}
			publish(t, p, probes...)
		case <-ctx.Done():
			t.Fatalf("members never both received a probe (member 0: %v, member 1: %v): %v", probed[0], probed[1], ctx.Err())
		}
	}

	var msgs []bus.Message
	for i := range n {
		msgs = append(msgs, msg(topic, "key-"+strconv.Itoa(i%keys), strconv.Itoa(i)))
	}
	publish(t, p, msgs...)

	got := map[string]int{} // value → member
	perMember := [2]int{}
	for len(got) < n {
		select {
		case d := <-ch:
			v := string(d.m.Value)
			if v == "probe" {
				continue // probes may be redelivered while the group settled
			}
			if prev, ok := got[v]; ok {
				t.Fatalf("message %s delivered to member %d after member %d: members of one group must share, not duplicate", v, d.member, prev)
			}
			got[v] = d.member
			perMember[d.member]++
		case <-ctx.Done():
			t.Fatalf("got %d of %d messages across members: %v", len(got), n, ctx.Err())
		}
	}
	if perMember[0] == 0 || perMember[1] == 0 {
		t.Fatalf("messages per member = %v: one member got everything", perMember)
	}
}

// testAtLeastOnce fails the handler on one message: Subscribe returns that error, and a
// new subscriber of the same group starts exactly at the failed message.
func testAtLeastOnce(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	const n, failAt = 10, 4
	topic := createTopic(t, b, 1)
	group := unique(t, "group")
	p := publisher(t, b)
	var msgs []bus.Message
	for i := range n {
		msgs = append(msgs, msg(topic, "k", strconv.Itoa(i)))
	}
	publish(t, p, msgs...)

	errBoom := errors.New("handler failed on purpose")
	var first []string
	s1 := subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: group})
	err := s1.Subscribe(ctx, func(_ context.Context, m bus.Message) error {
		first = append(first, string(m.Value))
		if string(m.Value) == strconv.Itoa(failAt) {
			return errBoom
		}
		return nil
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Subscribe = %v, want the handler's error", err)
	}
	if want := "0 1 2 3 4"; strings.Join(first, " ") != want {
		t.Fatalf("first subscriber saw %q, want %q", strings.Join(first, " "), want)
	}

	c := newCollector()
	start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: group}), c.handle)
	for i := failAt; i < n; i++ {
		m := c.next(t, ctx, "redelivery")
		if want := strconv.Itoa(i); string(m.Value) != want {
			t.Fatalf("second subscriber got %s, want %s (the failed message first, no committed one again)", m.Value, want)
		}
	}
}

// testStartPosition checks where new groups begin: StartFirst sees the message published
// before it joined; StartLast never does and sees what is published after it joined.
func testStartPosition(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	topic := createTopic(t, b, 1)
	p := publisher(t, b)
	publish(t, p, msg(topic, "k", "old"))

	first := newCollector()
	start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "first"), StartAt: bus.StartFirst}), first.handle)
	if m := first.next(t, ctx, "StartFirst's first message"); string(m.Value) != "old" {
		t.Fatalf("StartFirst group began with %q, want %q", m.Value, "old")
	}

	last := newCollector()
	start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "last"), StartAt: bus.StartLast}), last.handle)
	// The group joins asynchronously: publish until it receives something.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case m := <-last.ch:
			if !strings.HasPrefix(string(m.Value), "new-") {
				t.Fatalf("StartLast group received %q published before it joined", m.Value)
			}
			return
		case <-tick.C:
			publish(t, p, msg(topic, "k", "new-"+strconv.Itoa(i)))
		case <-ctx.Done():
			t.Fatalf("StartLast group received nothing: %v", ctx.Err())
		}
	}
}

func testMessageTooLarge(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	const limit = 64 << 10
	topic := unique(t, "topic")
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1, MaxMessageBytes: limit}); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	p := publisher(t, b)
	big := bus.Message{Topic: topic, Key: []byte("k"), Value: make([]byte, 2*limit)}
	if err := p.Publish(ctx, big); !errors.Is(err, bus.ErrMessageTooLarge) {
		t.Fatalf("Publish(%d bytes) to a topic limited to %d = %v, want ErrMessageTooLarge", len(big.Value), limit, err)
	}
	small := bus.Message{Topic: topic, Key: []byte("k"), Value: make([]byte, 1<<10)}
	small.Value[0] = 's'
	publish(t, p, small)

	c := newCollector()
	start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "group")}), c.handle)
	if m := c.next(t, ctx, "the small message"); len(m.Value) != len(small.Value) || m.Value[0] != 's' {
		t.Fatalf("first delivered message has %d bytes, want the small one (%d bytes): the rejected one was stored", len(m.Value), len(small.Value))
	}
}

func testClose(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	topic := createTopic(t, b, 1)

	// Publisher and Subscriber close on their own, idempotently.
	p := publisher(t, b)
	for i := range 2 {
		if err := p.Close(); err != nil {
			t.Fatalf("Publisher.Close #%d: %v", i+1, err)
		}
	}
	if err := p.Publish(ctx, msg(topic, "k", "v")); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Publish after Publisher.Close = %v, want ErrClosed", err)
	}
	s := subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "group")})
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Subscriber.Close #%d: %v", i+1, err)
		}
	}
	if err := s.Subscribe(ctx, func(context.Context, bus.Message) error { return nil }); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Subscribe after Subscriber.Close = %v, want ErrClosed", err)
	}

	// Closing the bus ends a running subscription and everything it made.
	p2 := publisher(t, b)
	c := newCollector()
	r := start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "group")}), c.handle)
	publish(t, p2, msg(topic, "k", "before close"))
	c.next(t, ctx, "a message before close")
	for i := range 2 {
		if err := b.Close(); err != nil {
			t.Fatalf("Bus.Close #%d: %v", i+1, err)
		}
	}
	if err := r.wait(t); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("running Subscribe after Bus.Close = %v, want ErrClosed", err)
	}
	if err := p2.Publish(ctx, msg(topic, "k", "v")); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Publish after Bus.Close = %v, want ErrClosed", err)
	}
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: unique(t, "topic")}); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("CreateTopic after Bus.Close = %v, want ErrClosed", err)
	}
	if _, err := b.Publisher(); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Publisher after Bus.Close = %v, want ErrClosed", err)
	}
	if _, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: "g"}); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Subscriber after Bus.Close = %v, want ErrClosed", err)
	}
}

// testContextCancel ends subscriptions through their context, both while waiting for
// messages and while a handler is running: Subscribe returns nil.
func testContextCancel(t *testing.T, b bus.Bus) {
	ctx := deadline(t)
	topic := createTopic(t, b, 1)

	idle := start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "idle")}), newCollector().handle)
	if err := idle.stop(t); err != nil {
		t.Fatalf("Subscribe after cancel while idle = %v, want nil", err)
	}

	inHandler := make(chan struct{})
	var once sync.Once
	busy := start(t, subscriber(t, b, bus.SubscribeOptions{Topic: topic, Group: unique(t, "busy")}),
		func(ctx context.Context, m bus.Message) error {
			once.Do(func() { close(inHandler) })
			<-ctx.Done()
			return ctx.Err()
		})
	publish(t, publisher(t, b), msg(topic, "k", "v"))
	select {
	case <-inHandler:
	case <-ctx.Done():
		t.Fatalf("handler never called: %v", ctx.Err())
	}
	if err := busy.stop(t); err != nil {
		t.Fatalf("Subscribe after cancel inside the handler = %v, want nil", err)
	}
}
