package bus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
)

// memoryTopic is topic "t" on an in-process bus, with a publisher and a subscriber of
// group "g", all closed when the test ends.
func memoryTopic(ctx context.Context, t *testing.T) (bus.Publisher, bus.Subscriber) {
	t.Helper()
	b, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return pub, sub
}

// TestSubscribeWithRetry checks that a failing handler does not end the loop: the error
// is reported with a doubling, capped wait, the uncommitted message is delivered again,
// and the loop returns once ctx ends.
func TestSubscribeWithRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, sub := memoryTopic(ctx, t)
	if err := pub.Publish(ctx, bus.Message{Topic: "t", Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}

	const failures = 3
	errBoom := errors.New("boom")
	var (
		mu         sync.Mutex
		deliveries int
		waits      []time.Duration
		reported   []error
	)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.SubscribeWithRetry(runCtx, sub, func(_ context.Context, m bus.Message) error {
			mu.Lock()
			defer mu.Unlock()
			deliveries++
			if deliveries <= failures {
				return errBoom
			}
			stop() // the message is handled: the test has seen what it needs
			return nil
		}, bus.RetryOptions{
			MinBackoff: time.Millisecond,
			MaxBackoff: 3 * time.Millisecond,
			OnError: func(err error, wait time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				reported = append(reported, err)
				waits = append(waits, wait)
			},
		})
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("SubscribeWithRetry did not return after its context ended")
	}

	mu.Lock()
	defer mu.Unlock()
	if deliveries != failures+1 {
		t.Errorf("deliveries = %d, want %d (each failure redelivers the message)", deliveries, failures+1)
	}
	if len(reported) != failures {
		t.Fatalf("OnError called %d times, want %d", len(reported), failures)
	}
	for i, err := range reported {
		if !errors.Is(err, errBoom) {
			t.Errorf("reported error %d = %v, want %v", i, err, errBoom)
		}
	}
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	for i := range want {
		if !nearly(waits[i], want[i]) {
			t.Errorf("wait %d = %v, want %v ± %.0f%%", i, waits[i], want[i], backoff.Jitter*100)
		}
	}
}

// TestSubscribeWithRetryResetsAfterSuccess: an attempt that handled a message starts the
// backoff again from its minimum (issue 18: a consumer that worked for hours and then hit
// a rebalance error must not wait out the last outage's longest backoff).
func TestSubscribeWithRetryResetsAfterSuccess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, sub := memoryTopic(ctx, t)
	for _, v := range []string{"1", "2"} {
		if err := pub.Publish(ctx, bus.Message{Topic: "t", Key: []byte("k"), Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	// Deliveries: 1 fails, 1 fails, 1 is handled, 2 fails, 2 is handled.
	fail := map[int]bool{1: true, 2: true, 4: true}
	var (
		mu         sync.Mutex
		deliveries int
		waits      []time.Duration
	)
	runCtx, stop := context.WithCancel(ctx)
	bus.SubscribeWithRetry(runCtx, sub, func(context.Context, bus.Message) error {
		mu.Lock()
		defer mu.Unlock()
		deliveries++
		if fail[deliveries] {
			return errors.New("boom")
		}
		if deliveries == 5 {
			stop()
		}
		return nil
	}, bus.RetryOptions{MinBackoff: time.Millisecond, MaxBackoff: 8 * time.Millisecond,
		OnError: func(_ error, wait time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, wait)
		}})
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, time.Millisecond}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if !nearly(waits[i], want[i]) {
			t.Errorf("waits %v, want %v ± %.0f%% (the attempt that handled message 1 resets the backoff)", waits, want, backoff.Jitter*100)
			break
		}
	}
}

// nearly reports whether a wait is want within the back-off's jitter.
func nearly(got, want time.Duration) bool {
	return float64(got) >= float64(want)*(1-backoff.Jitter)-1 && float64(got) <= float64(want)*(1+backoff.Jitter)+1
}

// TestSubscribeWithRetryClosedSubscriber checks that a subscriber that can never work
// again (closed) keeps being reported, not silently spun on, until ctx ends.
func TestSubscribeWithRetryClosedSubscriber(t *testing.T) {
	b, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(context.Background(), bus.TopicSpec{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: "t", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []error
	bus.SubscribeWithRetry(ctx, sub, func(context.Context, bus.Message) error { return nil }, bus.RetryOptions{
		MinBackoff: time.Millisecond,
		OnError: func(err error, _ time.Duration) {
			got = append(got, err)
			if len(got) == 2 {
				cancel()
			}
		},
	})
	if len(got) != 2 {
		t.Fatalf("OnError called %d times, want 2", len(got))
	}
	for _, err := range got {
		if !errors.Is(err, bus.ErrClosed) {
			t.Errorf("reported %v, want %v", err, bus.ErrClosed)
		}
	}
}
