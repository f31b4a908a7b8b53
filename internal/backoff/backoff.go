// Package backoff is the suite's one retry schedule, used by every retry loop (the
// wave's reconnects and publishes, the agent's sends, the bus's resubscribes, the
// judge's store writes, the alarm's notifications): cenkalti/backoff's exponential
// back-off, doubling from a first wait up to a limit, with ±Jitter so that processes
// that failed together do not retry in step.
package backoff

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Jitter is the random share of each wait, either way.
const Jitter = 0.2

// Backoff is a retry schedule: NextBackOff is the wait before the next attempt, Reset
// starts again from the first wait (after a success). Not safe for concurrent use.
type Backoff = backoff.ExponentialBackOff

// New returns a schedule that waits about first, then twice as long each time, up to
// limit (a first wait of 0 or less means a millisecond; a limit below first, first).
func New(first, limit time.Duration) *Backoff {
	first = max(first, time.Millisecond)
	b := &backoff.ExponentialBackOff{InitialInterval: first, RandomizationFactor: Jitter,
		Multiplier: 2, MaxInterval: max(limit, first)}
	b.Reset()
	return b
}

// Schedule is New's wait before attempt n (1-based) as a function of n, for APIs that
// ask for one (go-elasticsearch's RetryBackoff) or loops that count attempts.
func Schedule(first, limit time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		b := New(first, limit)
		for range max(attempt-1, 0) {
			b.NextBackOff()
		}
		return b.NextBackOff()
	}
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
