package wave

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// losingPublisher acknowledges every Publish and, as call number loseOn returns, ends the
// leadership: the loss lands between a publish and the commit of its batch.
type losingPublisher struct {
	loseOn int
	lose   func()

	mu    sync.Mutex
	calls int
}

func (p *losingPublisher) Publish(_ context.Context, _ ...bus.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.calls == p.loseOn {
		p.lose()
	}
	return nil
}

func (p *losingPublisher) Close() error { return nil }

// TestPublisherStopsOnLostLeadership: once the leadership is lost, the publisher hands no
// boundary to the committer, whether the loss came before a chunk was published (that
// chunk's rows were never sent) or after the batch's last chunk, and it ends with errLost
// rather than a quiet nil.
func TestPublisherStopsOnLostLeadership(t *testing.T) {
	msg := func(k string) bus.Message { return bus.Message{Topic: "t", Key: []byte(k), Value: []byte("v")} }
	for _, tc := range []struct {
		name      string
		loseOn    int // the Publish call as which the leadership ends
		wantCalls int // Publish calls made: none after the loss
	}{
		{"loss after the first of two chunks", 1, 1},
		{"loss after the last chunk", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost := make(chan struct{})
			fake := &losingPublisher{loseOn: tc.loseOn, lose: func() { close(lost) }}
			in := make(chan capture.Item, 2)
			// One batch of two rows in one transaction, published as two chunks of one
			// message: the boundary after the second row must not reach the committer.
			in <- capture.Item{Msgs: []bus.Message{msg("a")}}
			in <- capture.Item{Msgs: []bus.Message{msg("b")}, Commit: &cluster.Position{File: "bin.000001", Pos: 900}}
			cm := &committer{kick: make(chan struct{}, 1)}
			p := &publisher{id: "lost", pub: fake, lost: lost, in: in, maxRows: 10,
				backoffMin: time.Millisecond, backoffMax: time.Millisecond, m: newMetrics(), log: slog.New(slog.DiscardHandler),
				commit: cm, chunkMsgs: 1}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- p.run(ctx) }()
			select {
			case <-cm.kick:
				cm.mu.Lock()
				acked := cm.acked
				cm.mu.Unlock()
				t.Fatalf("position %s handed to the committer after the leadership was lost", acked.String())
			case err := <-errc:
				if !errors.Is(err, errLost) {
					t.Fatalf("run = %v, want errLost", err)
				}
			}
			if fake.calls != tc.wantCalls {
				t.Errorf("Publish called %d times, want %d (no attempt after the loss)", fake.calls, tc.wantCalls)
			}
		})
	}
}

// TestCommitterStopsOnLostLeadership: a boundary acknowledged before the loss is not
// written after it; a late write could move the offset under the successor.
func TestCommitterStopsOnLostLeadership(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	key := cluster.OffsetKey("lost")
	v, err := c.Put(ctx, key, []byte(`{"file":"bin.000001","pos":4}`), coord.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan struct{})
	cm := &committer{c: c, lost: lost, key: key, id: "lost", m: newMetrics(), log: slog.New(slog.DiscardHandler),
		now: time.Now, version: v, committed: cluster.Position{File: "bin.000001", Pos: 4}, kick: make(chan struct{}, 1)}
	cm.ack(cluster.Position{File: "bin.000001", Pos: 900})
	close(lost)
	if err := cm.flush(ctx); !errors.Is(err, errLost) {
		t.Errorf("flush after the loss = %v, want errLost", err)
	}
	got, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != v {
		t.Errorf("offset written after the leadership was lost: %s (version %d, was %d)", got.Data, got.Version, v)
	}
}
