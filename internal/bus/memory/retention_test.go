package memory_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
)

// timeout bounds each wait; a healthy bus delivers in microseconds, so it only matters
// when something is broken.
const timeout = 30 * time.Second

func newRetainingBus(t *testing.T, opts memory.Options, partitions int) (*memory.Bus, bus.Publisher) {
	t.Helper()
	b, err := memory.New(opts)
	if err != nil {
		t.Fatalf("memory.New(%+v): %v", opts, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.CreateTopic(context.Background(), bus.TopicSpec{Name: "t", Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	return b, p
}

// sized returns a message of exactly size bytes of key and value: key k, value v
// padded with dots.
func sized(key, v string, size int) bus.Message {
	val := []byte(v)
	for len(key)+len(val) < size {
		val = append(val, '.')
	}
	return bus.Message{Topic: "t", Key: []byte(key), Value: val}
}

// drain reads a new StartFirst group until it has n messages, then stops it.
func drain(t *testing.T, b *memory.Bus, group string, n int) []bus.Message {
	t.Helper()
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: group, StartAt: bus.StartFirst})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []bus.Message
	err = s.Subscribe(ctx, func(_ context.Context, m bus.Message) error {
		got = append(got, m)
		if len(got) == n {
			cancel()
		}
		return nil
	})
	if err != nil || len(got) != n {
		t.Fatalf("group %s got %d of %d messages (Subscribe = %v)", group, len(got), n, err)
	}
	return got
}

// TestRetention publishes more than the limits allow and checks which messages a new
// StartFirst group still finds: the newest, at their original offsets, in order.
func TestRetention(t *testing.T) {
	type kv = keyOffset
	for _, tc := range []struct {
		name        string
		opts        memory.Options
		partitions  int
		msgs        []bus.Message // published in one batch each
		want        []kv          // what a new group receives, in order per key
		wantTrimmed int64
	}{
		{
			name: "under both limits keeps everything",
			opts: memory.Options{RetainMessages: 10, RetainBytes: 100},
			msgs: repeat("k", 10, 10),
			want: offsets("k", 0, 10), wantTrimmed: 0,
		},
		{
			name: "count limit",
			opts: memory.Options{RetainMessages: 5, RetainBytes: 1 << 20},
			msgs: repeat("k", 12, 10),
			want: offsets("k", 7, 12), wantTrimmed: 7,
		},
		{
			name: "bytes limit",
			opts: memory.Options{RetainMessages: 1000, RetainBytes: 35},
			msgs: repeat("k", 12, 10),
			want: offsets("k", 9, 12), wantTrimmed: 9,
		},
		{
			name: "bytes limit reached before count limit",
			opts: memory.Options{RetainMessages: 4, RetainBytes: 25},
			msgs: repeat("k", 6, 10),
			want: offsets("k", 4, 6), wantTrimmed: 4,
		},
		{
			name: "count limit reached before bytes limit",
			opts: memory.Options{RetainMessages: 2, RetainBytes: 45},
			msgs: repeat("k", 6, 10),
			want: offsets("k", 4, 6), wantTrimmed: 4,
		},
		{
			name: "the newest message stays even when larger than the bytes limit",
			opts: memory.Options{RetainMessages: 10, RetainBytes: 5},
			msgs: repeat("k", 3, 10),
			want: offsets("k", 2, 3), wantTrimmed: 2,
		},
		{
			// FNV-1a puts "a" in partition 0 and "b" in partition 1 of 2.
			name:       "limits are per partition and keep per-key order",
			opts:       memory.Options{RetainMessages: 3},
			partitions: 2,
			msgs:       interleave(repeat("a", 5, 10), repeat("b", 5, 10)),
			want:       append(offsets("a", 2, 5), offsets("b", 2, 5)...), wantTrimmed: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, p := newRetainingBus(t, tc.opts, max(1, tc.partitions))
			for _, m := range tc.msgs {
				if err := p.Publish(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			if got := b.Stats().Trimmed; got != tc.wantTrimmed {
				t.Errorf("Stats().Trimmed = %d, want %d", got, tc.wantTrimmed)
			}
			got := drain(t, b, "new", len(tc.want))
			// Per key the order is fixed; across partitions it is not.
			next := map[string]int{}
			for _, m := range got {
				key := string(m.Key)
				var wantKey []kv
				for _, w := range tc.want {
					if w.key == key {
						wantKey = append(wantKey, w)
					}
				}
				i := next[key]
				if i >= len(wantKey) || m.Offset != wantKey[i].offset {
					t.Fatalf("key %s: delivery #%d is offset %d, want offsets %v", key, i, m.Offset, wantKey)
				}
				if want := key + strconv.FormatInt(m.Offset, 10); !strings.HasPrefix(string(m.Value), want+".") && string(m.Value) != want {
					t.Fatalf("offset %d holds %q, want the message published as %s", m.Offset, m.Value, want)
				}
				next[key]++
			}
			if s := b.Stats(); s.Resets != 0 || s.Skipped != 0 {
				t.Errorf("a new group counted as fallen behind: %+v", s)
			}
		})
	}
}

// repeat returns n messages of key, each size bytes, valued key+sequence number: the
// sequence number is the offset when key has a partition of its own.
func repeat(key string, n, size int) []bus.Message {
	msgs := make([]bus.Message, n)
	for i := range msgs {
		msgs[i] = sized(key, key+strconv.Itoa(i), size)
	}
	return msgs
}

func interleave(a, b []bus.Message) []bus.Message {
	var out []bus.Message
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

type keyOffset struct {
	key    string
	offset int64
}

// offsets lists key's messages at offsets from..to-1.
func offsets(key string, from, to int64) []keyOffset {
	var out []keyOffset
	for o := from; o < to; o++ {
		out = append(out, keyOffset{key, o})
	}
	return out
}

// TestDefaultRetention checks that Options{} bounds a partition by the default count.
func TestDefaultRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes the default limit of messages")
	}
	b, p := newRetainingBus(t, memory.Options{}, 1)
	const extra = 7
	batch := make([]bus.Message, 1000)
	for i := range batch {
		batch[i] = bus.Message{Topic: "t", Value: []byte{'v'}}
	}
	for range memory.DefaultRetainMessages / len(batch) {
		if err := p.Publish(context.Background(), batch...); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Stats().Trimmed; got != 0 {
		t.Fatalf("Stats().Trimmed = %d at exactly the default limit, want 0", got)
	}
	if err := p.Publish(context.Background(), batch[:extra]...); err != nil {
		t.Fatal(err)
	}
	if got := b.Stats().Trimmed; got != extra {
		t.Fatalf("Stats().Trimmed = %d after %d messages over the default limit, want %d", got, extra, extra)
	}
	if m := drain(t, b, "new", 1)[0]; m.Offset != extra {
		t.Fatalf("a new StartFirst group began at offset %d, want %d", m.Offset, extra)
	}
}

// TestGroupFallsBehindRetention holds a group on its first message while the log is
// trimmed past it; the group then continues from the log start, and this is counted
// and logged at Debug.
func TestGroupFallsBehindRetention(t *testing.T) {
	const retain, published = 5, 21
	errBoom := errors.New("handler failed on purpose")
	for _, tc := range []struct {
		name string
		// fail makes the held handler fail: the group keeps offset 0 uncommitted and
		// a new member of it finds the log start past that.
		fail        bool
		wantSkipped int64
	}{
		{name: "handler commits after the trim", fail: false, wantSkipped: published - retain - 1},
		{name: "handler fails and the group restarts", fail: true, wantSkipped: published - retain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testenv.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			b, p := newRetainingBus(t, memory.Options{RetainMessages: retain, Logger: logger}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := p.Publish(ctx, sized("k", "k0", 10)); err != nil {
				t.Fatal(err)
			}

			held, release := make(chan struct{}), make(chan struct{})
			var got []int64
			var once sync.Once
			s, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: "slow"})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				done <- s.Subscribe(ctx, func(ctx context.Context, m bus.Message) error {
					got = append(got, m.Offset)
					first := false
					once.Do(func() { first = true })
					if first {
						close(held)
						<-release
						if tc.fail {
							return errBoom
						}
					}
					if m.Offset == published-1 {
						cancel()
					}
					return nil
				})
			}()
			<-held
			for i := 1; i < published; i++ {
				if err := p.Publish(ctx, sized("k", "k"+strconv.Itoa(i), 10)); err != nil {
					t.Fatal(err)
				}
			}
			close(release)
			err = <-done
			if tc.fail {
				if !errors.Is(err, errBoom) {
					t.Fatalf("Subscribe = %v, want the handler's error", err)
				}
				if s := b.Stats(); s.Resets != 0 {
					t.Fatalf("a reset was counted before the group read again: %+v", s)
				}
				// The same group again: its uncommitted offset 0 is gone.
				s2, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: "slow"})
				if err != nil {
					t.Fatal(err)
				}
				err = s2.Subscribe(ctx, func(_ context.Context, m bus.Message) error {
					got = append(got, m.Offset)
					if m.Offset == published-1 {
						cancel()
					}
					return nil
				})
				if err != nil {
					t.Fatalf("second Subscribe = %v", err)
				}
			} else if err != nil {
				t.Fatalf("Subscribe = %v", err)
			}

			want := []int64{0}
			for o := int64(published - retain); o < published; o++ {
				want = append(want, o)
			}
			if !equal(got, want) {
				t.Fatalf("group received offsets %v, want %v", got, want)
			}
			if s := b.Stats(); s.Resets != 1 || s.Skipped != tc.wantSkipped || s.Trimmed != published-retain {
				t.Fatalf("Stats() = %+v, want 1 reset, %d skipped, %d trimmed", s, tc.wantSkipped, published-retain)
			}
			line := logs.String()
			for _, want := range []string{"level=DEBUG", "fell behind retention", "group=slow", "skipped=" + strconv.FormatInt(tc.wantSkipped, 10), "start=16"} {
				if !strings.Contains(line, want) {
					t.Fatalf("log %q lacks %q", line, want)
				}
			}
		})
	}
}

// TestNewGroupsAfterTrim checks where new groups begin on a trimmed log: StartFirst at
// the oldest retained message, StartLast after the newest; neither counts as a reset.
func TestNewGroupsAfterTrim(t *testing.T) {
	b, p := newRetainingBus(t, memory.Options{RetainMessages: 4}, 1)
	ctx := context.Background()
	if err := p.Publish(ctx, repeat("k", 10, 10)...); err != nil {
		t.Fatal(err)
	}
	if m := drain(t, b, "first", 1)[0]; m.Offset != 6 || !strings.HasPrefix(string(m.Value), "k6.") {
		t.Fatalf("StartFirst group began with %q at offset %d, want k6 at offset 6", m.Value, m.Offset)
	}

	s, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: "last", StartAt: bus.StartLast})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var first bus.Message
	done := make(chan error, 1)
	go func() {
		done <- s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
			first = m
			cancel()
			return nil
		})
	}()
	// The group joins asynchronously: publish until it receives something.
	for i := 10; ; i++ {
		if err := p.Publish(ctx, sized("k", "k"+strconv.Itoa(i), 10)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if first.Offset < 10 {
				t.Fatalf("StartLast group received offset %d, published before it joined", first.Offset)
			}
			if s := b.Stats(); s.Resets != 0 {
				t.Fatalf("new groups counted as fallen behind: %+v", s)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts memory.Options
		want string
	}{
		{"negative max message bytes", memory.Options{MaxMessageBytes: -1}, "max message bytes"},
		{"negative retain messages", memory.Options{RetainMessages: -1}, "retain messages"},
		{"negative retain bytes", memory.Options{RetainBytes: -1}, "retain bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memory.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%+v) = %v, want an error naming %q", tc.opts, err, tc.want)
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkPublishRetention compares publishing to a log that never trims (the bus
// before retention) with publishing to a full log, where every message trims one.
func BenchmarkPublishRetention(b *testing.B) {
	ctx := context.Background()
	for _, retention := range []struct {
		name string
		opts memory.Options
	}{
		{"unbounded", memory.Options{RetainMessages: math.MaxInt, RetainBytes: math.MaxInt64}},
		{"full", memory.Options{RetainMessages: 1024}},
	} {
		for _, batch := range []int{1, 10, 100, 1000} {
			b.Run(retention.name+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				mb, err := memory.New(retention.opts)
				if err != nil {
					b.Fatal(err)
				}
				defer mb.Close()
				if err := mb.CreateTopic(ctx, bus.TopicSpec{Name: "bench", Partitions: 8}); err != nil {
					b.Fatal(err)
				}
				p, _ := mb.Publisher()
				msgs := make([]bus.Message, batch)
				for i := range msgs {
					msgs[i] = bus.Message{Topic: "bench", Key: []byte("node-" + strconv.Itoa(i%16)), Value: make([]byte, 256)}
				}
				// Correctness before timing: a batch goes through, and a full log is
				// full (8 partitions × 1024, twice over) and trims.
				if err := p.Publish(ctx, msgs...); err != nil {
					b.Fatal(err)
				}
				if retention.name == "full" {
					for mb.Stats().Trimmed < 8*1024 {
						if err := p.Publish(ctx, msgs...); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				b.SetBytes(int64(batch * 256))
				b.ResetTimer()
				for b.Loop() {
					if err := p.Publish(ctx, msgs...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}
