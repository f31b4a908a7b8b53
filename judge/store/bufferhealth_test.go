package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/store"
)

// TestBufferedHealth: Health says whether the inner store takes writes now. A store
// that is down is failing from its first failed write, with its error, until a write
// succeeds; points wait as long as no write finishes; a full queue and a closed buffer
// say so; a batch the store refuses as invalid is not the store failing.
func TestBufferedHealth(t *testing.T) {
	ctx := context.Background()
	_, o := downSQLite(t)
	o.down.Store(false)
	// One writer: a second one, idle while the first retries its batch, could take the
	// next points from the queue at any moment, between the refused write below and the
	// Health that should say full (1 run in 300 under -race).
	opts := fastOpts(100)
	opts.Writers = 1
	b := store.NewBuffered(o, opts)
	require.Equal(t, store.BufferHealth{}, b.Health(), "a new buffer")

	require.NoError(t, b.Write(ctx, points("w1", 0, 10)))
	flush(t, b)
	require.Equal(t, store.BufferHealth{}, b.Health(), "the store took the points")

	o.down.Store(true)
	before := time.Now()
	require.NoError(t, b.Write(ctx, points("w1", 10, 100)))
	require.Eventually(t, func() bool { return b.Health().Err != nil }, 10*time.Second, time.Millisecond, "failing")
	h := b.Health()
	require.ErrorIs(t, h.Err, errDown)
	require.False(t, h.FailingSince.Before(before), "since the first failure")
	require.False(t, h.Full, "some of them are being written")
	require.Positive(t, h.Waiting)
	for i := 110; ; i++ { // one point at a time: refused when the queue has no room left
		if err := b.Write(ctx, points("w1", i, 1)); err != nil {
			require.ErrorIs(t, err, store.ErrFull)
			break
		}
	}
	require.True(t, b.Health().Full)
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, h.FailingSince, b.Health().FailingSince, "the run of failures began at the first")

	o.down.Store(false)
	flush(t, b)
	require.Equal(t, store.BufferHealth{}, b.Health(), "back: the last write succeeded")

	o.invalid.Store(true)
	require.NoError(t, b.Write(ctx, points("w1", 200, 10)))
	flush(t, b)
	require.Equal(t, store.BufferHealth{}, b.Health(), "a batch refused as invalid: the store answered")

	require.NoError(t, b.Close())
	require.True(t, b.Health().Closed)
}

// TestBufferedHealthHungStore: a store that takes a write and never answers (an engine
// that accepts connections but does not respond) fails nothing before the write's
// timeout, but the points' wait grows, which a readiness check can bound.
func TestBufferedHealthHungStore(t *testing.T) {
	b, _ := hungBuffered(t)
	defer b.Close()
	require.NoError(t, b.Write(context.Background(), points("w1", 0, 10)))
	time.Sleep(50 * time.Millisecond)
	h := b.Health()
	require.NoError(t, h.Err)
	require.GreaterOrEqual(t, h.Waiting, 50*time.Millisecond)
	require.False(t, h.Full)
}
