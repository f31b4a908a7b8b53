package fleetsim

import (
	"context"
	"sync/atomic"
	"time"
)

// clock is the run's time: simulated for an in-process judge (advancing is instant and
// the judge reads the same clock), the wall clock for an external one (advancing sleeps).
type clock interface {
	now() time.Time
	// advance moves the clock to t (never back).
	advance(ctx context.Context, t time.Time) error
}

type simClock struct{ ns atomic.Int64 }

func newSimClock(t time.Time) *simClock {
	c := &simClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *simClock) now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

func (c *simClock) advance(ctx context.Context, t time.Time) error {
	for {
		cur := c.ns.Load()
		if t.UnixNano() <= cur || c.ns.CompareAndSwap(cur, t.UnixNano()) {
			return ctx.Err()
		}
	}
}

type wallClock struct{}

func (wallClock) now() time.Time { return time.Now().UTC() }

func (wallClock) advance(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
