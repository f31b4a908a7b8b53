package wave

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// partPub is a bus.Partitioner whose partition is a key's first letter ('a' → 0) and
// whose Publish records each call, waits at a partition's gate while it is closed and
// fails a partition's first calls when told to.
type partPub struct {
	partErrs atomic.Int32 // Partition calls still to fail
	mu       sync.Mutex
	gates    map[int]chan struct{}
	fail     map[int]int // partition → calls still to fail
	calls    map[int][][]string
	seen     chan struct{}
}

func newPartPub() *partPub {
	return &partPub{gates: map[int]chan struct{}{}, fail: map[int]int{}, calls: map[int][][]string{}, seen: make(chan struct{}, 100)}
}

func (p *partPub) Partition(_ context.Context, _ string, key []byte) (int, error) {
	if p.partErrs.Load() > 0 {
		p.partErrs.Add(-1)
		return 0, errors.New("metadata: no broker reachable")
	}
	return int(key[0] - 'a'), nil
}

func (p *partPub) Publish(ctx context.Context, msgs ...bus.Message) error {
	part := int(msgs[0].Key[0] - 'a')
	var keys []string
	for _, m := range msgs {
		if int(m.Key[0]-'a') != part {
			return fmt.Errorf("one call carries partitions %d and %d", part, m.Key[0]-'a')
		}
		keys = append(keys, string(m.Key))
	}
	p.mu.Lock()
	gate := p.gates[part]
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[part] = append(p.calls[part], keys)
	p.seen <- struct{}{}
	if p.fail[part] > 0 {
		p.fail[part]--
		return errors.New("broker says no")
	}
	return nil
}

func (p *partPub) Close() error { return nil }

func (p *partPub) keysOf(part int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls[part] {
		out = append(out, c...)
	}
	return out
}

func (p *partPub) waitFor(t *testing.T, part int, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !slices.Equal(p.keysOf(part), want) {
		select {
		case <-p.seen:
		case <-deadline:
			t.Fatalf("partition %d received %v, want %v", part, p.keysOf(part), want)
		}
	}
}

func lanesPublisher(pub bus.Publisher, in chan capture.Item, inFlight int) (*publisher, *committer) {
	cm := &committer{kick: make(chan struct{}, 1)}
	return &publisher{id: "lanes", pub: pub, in: in, maxRows: 3, backoffMin: time.Millisecond, backoffMax: time.Millisecond,
		m: newMetrics(), log: slog.New(slog.DiscardHandler), commit: cm, chunkMsgs: 2, inFlight: inFlight}, cm
}

func rowItem(pos uint32, keys ...string) capture.Item {
	it := capture.Item{Commit: &cluster.Position{File: "bin.000001", Pos: pos}}
	for _, k := range keys {
		it.Msgs = append(it.Msgs, bus.Message{Topic: "t", Key: []byte(k), Value: []byte("v")})
	}
	return it
}

func acked(cm *committer) cluster.Position {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.acked
}

// waitAcked waits until the committer was handed the boundary at pos.
func waitAcked(t *testing.T, cm *committer, pos uint32) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for acked(cm).Pos != pos {
		select {
		case <-cm.kick:
		case <-deadline:
			t.Fatalf("committer holds %s, want bin.000001:%d", acked(cm).String(), pos)
		}
	}
}

// TestLanesOverlapPartitionsAndCommitInOrder: a partition that does not answer holds
// back no other partition, but it holds back every commit from its first pending row on;
// once it answers, the boundaries reach the committer in order, with the row counts.
func TestLanesOverlapPartitionsAndCommitInOrder(t *testing.T) {
	pub := newPartPub()
	pub.gates[1] = make(chan struct{})
	in := make(chan capture.Item, 8)
	p, cm := lanesPublisher(pub, in, 4)
	stop := runLanes(t, p)

	in <- rowItem(100, "a1", "b1", "c1")
	pub.waitFor(t, 0, "a1")
	in <- rowItem(200, "a2", "c2", "a3")
	pub.waitFor(t, 0, "a1", "a2", "a3")
	pub.waitFor(t, 2, "c1", "c2")
	if a := acked(cm); a.Pos != 0 {
		t.Fatalf("boundary %s committed while b1 was not acknowledged", a.String())
	}
	close(pub.gates[1])
	pub.waitFor(t, 1, "b1")
	waitAcked(t, cm, 200)
	if a := acked(cm); a.Rows != 6 {
		t.Errorf("boundary 200 counts %d rows, want 6", a.Rows)
	}
	stop()
}

// TestLanesRetryInOrder: a partition's failed request is repeated before its next one,
// so a key's changes reach the partition in order, duplicates at most.
func TestLanesRetryInOrder(t *testing.T) {
	pub := newPartPub()
	pub.fail[0] = 2
	in := make(chan capture.Item, 8)
	p, cm := lanesPublisher(pub, in, 4)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go p.run(ctx)
	in <- rowItem(100, "a1", "a2", "b1")
	in <- rowItem(200, "a3")
	pub.waitFor(t, 0, "a1", "a2", "a1", "a2", "a1", "a2", "a3")
	waitAcked(t, cm, 200)
}

// TestLanesWindow: with one batch in flight, the next waits for it (stop and wait).
func TestLanesWindow(t *testing.T) {
	pub := newPartPub()
	pub.gates[1] = make(chan struct{})
	in := make(chan capture.Item, 8)
	p, _ := lanesPublisher(pub, in, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go p.run(ctx)
	in <- rowItem(100, "a1", "b1")
	pub.waitFor(t, 0, "a1")
	in <- rowItem(200, "a2")
	// A window in which a wrong second batch would go out: the check looks at what the
	// partition received, not at signals (a1's may still be queued).
	<-time.After(200 * time.Millisecond)
	if got := pub.keysOf(0); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("a second batch went out while the first was in flight: partition 0 got %v", got)
	}
	close(pub.gates[1])
	pub.waitFor(t, 0, "a1", "a2")
}

// TestLanesWaitForPartitions: while the bus cannot say which partition a key goes to,
// the batch waits (retried with backoff) rather than take a lane of its own that could
// overtake the key's older changes; then it goes out in order and its boundary commits.
// A stop meanwhile commits nothing of it.
func TestLanesWaitForPartitions(t *testing.T) {
	pub := newPartPub()
	pub.gates[0] = make(chan struct{})
	in := make(chan capture.Item, 8)
	p, cm := lanesPublisher(pub, in, 4)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go p.run(ctx)
	in <- rowItem(100, "a1")
	pub.partErrs.Store(3)
	in <- rowItem(200, "a2", "b1")
	close(pub.gates[0])
	pub.waitFor(t, 0, "a1", "a2")
	pub.waitFor(t, 1, "b1")
	waitAcked(t, cm, 200)

	// Stopping while the partitions are unknown: the boundary of the waiting batch never
	// reaches the committer.
	pub.partErrs.Store(1 << 20)
	in <- rowItem(300, "a3")
	<-time.After(50 * time.Millisecond)
	cancel()
	<-time.After(50 * time.Millisecond)
	if a := acked(cm); a.Pos != 200 {
		t.Fatalf("committer holds %s after a stop with a3 unpublished, want bin.000001:200", a.String())
	}
}

// TestLanesCountGroupedRows: an item whose messages carry several rows each (a grouping
// format's, capture.Item.ExtraRows) counts its rows in the committed offset and the rows
// series, its messages in the messages series, and fills a batch by rows.
func TestLanesCountGroupedRows(t *testing.T) {
	pub := newPartPub()
	in := make(chan capture.Item, 8)
	p, cm := lanesPublisher(pub, in, 1)
	stop := runLanes(t, p)

	first := rowItem(100, "a1", "b1") // two messages of 5 rows in all
	first.ExtraRows = 3
	in <- first
	waitAcked(t, cm, 100)
	if a := acked(cm); a.Rows != 5 {
		t.Errorf("boundary 100 counts %d rows, want 5", a.Rows)
	}
	in <- rowItem(200, "a2") // one message, one row
	waitAcked(t, cm, 200)
	if a := acked(cm); a.Rows != 6 {
		t.Errorf("boundary 200 counts %d rows, want 6", a.Rows)
	}
	stop()
	rows := testutil.ToFloat64(p.m.rows.WithLabelValues("lanes"))
	msgs := testutil.ToFloat64(p.m.messages.WithLabelValues("lanes"))
	if rows != 6 || msgs != 3 {
		t.Errorf("published %v rows in %v messages, want 6 in 3", rows, msgs)
	}
}

// TestLanesLinger: a flight that is not full waits up to the linger for more rows, so
// rows that arrive apart share one produce request per partition; a flight that fills
// goes at once; without a linger each goes as it comes.
func TestLanesLinger(t *testing.T) {
	calls := func(pub *partPub) [][]string {
		pub.mu.Lock()
		defer pub.mu.Unlock()
		return slices.Clone(pub.calls[0])
	}
	t.Run("a flight fills while it lingers", func(t *testing.T) {
		pub := newPartPub()
		in := make(chan capture.Item, 8)
		p, cm := lanesPublisher(pub, in, 4)
		p.chunkMsgs, p.linger = 10, time.Hour
		stop := runLanes(t, p)
		for i, k := range []string{"a1", "a2", "a3"} { // maxRows 3
			if got := calls(pub); len(got) != 0 {
				t.Fatalf("partition 0 got %v before the flight was full", got)
			}
			in <- rowItem(uint32(100*(i+1)), k)
			<-time.After(20 * time.Millisecond)
		}
		waitAcked(t, cm, 300)
		if got := calls(pub); !slices.EqualFunc(got, [][]string{{"a1", "a2", "a3"}}, slices.Equal) {
			t.Errorf("partition 0 got the requests %v, want one of a1 a2 a3", got)
		}
		stop()
	})
	t.Run("a flight that does not fill goes after the linger", func(t *testing.T) {
		pub := newPartPub()
		in := make(chan capture.Item, 8)
		p, cm := lanesPublisher(pub, in, 4)
		p.chunkMsgs, p.linger = 10, 200*time.Millisecond
		stop := runLanes(t, p)
		start := time.Now()
		in <- rowItem(100, "a1")
		waitAcked(t, cm, 100)
		if waited := time.Since(start); waited < p.linger {
			t.Errorf("a1 went out after %s, before the linger of %s", waited, p.linger)
		}
		stop()
	})
	t.Run("no linger", func(t *testing.T) {
		pub := newPartPub()
		in := make(chan capture.Item, 8)
		p, cm := lanesPublisher(pub, in, 4)
		p.chunkMsgs = 10
		stop := runLanes(t, p)
		for i, k := range []string{"a1", "a2"} {
			in <- rowItem(uint32(100*(i+1)), k)
			waitAcked(t, cm, uint32(100*(i+1)))
		}
		if got := calls(pub); !slices.EqualFunc(got, [][]string{{"a1"}, {"a2"}}, slices.Equal) {
			t.Errorf("partition 0 got the requests %v, want a1, then a2", got)
		}
		stop()
	})
}

// runLanes runs p until the returned stop, which cancels it and checks that it ended
// without an error.
func runLanes(t *testing.T, p *publisher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel) // a test that fails before stop
	errc := make(chan error, 1)
	go func() { errc <- p.run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("run = %v", err)
		}
	}
}
