package wave

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// TestPublishBackoffEndsWhenAnotherLaneGetsThrough: lanes backing off after failed
// publishes try again as soon as one publish succeeds, instead of waiting out their own
// backoff (an hour here: without the signal the test times out).
func TestPublishBackoffEndsWhenAnotherLaneGetsThrough(t *testing.T) {
	p, _ := lanesPublisher(nil, nil, 1)
	p.backoffMin, p.backoffMax = time.Hour, time.Hour
	var up atomic.Bool
	var failures atomic.Int32
	send := func(context.Context) error {
		if !up.Load() {
			failures.Add(1)
			return errors.New("broker down")
		}
		return nil
	}
	msgs := []bus.Message{{Topic: "t", Key: []byte("k"), Value: []byte("v")}}
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- p.publishWith(context.Background(), msgs, send) }()
	}
	for failures.Load() < 2 {
		time.Sleep(time.Millisecond) // both lanes have failed once and are backing off
	}
	up.Store(true)
	if err := p.publishWith(context.Background(), msgs, send); err != nil { // a third lane gets through
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a lane kept backing off after another lane's publish got through")
		}
	}
}
