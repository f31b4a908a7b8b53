package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
)

// blocked is a channel whose receiver never answers: the process crashes with the page queued.
type blocked struct{ release chan struct{} }

func (b blocked) Notify(ctx context.Context, _ notify.Message) error {
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return ctx.Err()
}

// A page queued but not delivered when the process crashes is sent by the next process
// on the same log, not 4 hours later (issue 18, item 7).
func TestCrashBetweenQueueAndDelivery(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	pol := basePolicy + "    repeat_interval: 4h\n"
	c1 := openCoord(t, dir)
	stuck := blocked{release: make(chan struct{})}
	d1, err := notify.NewDispatcher(map[string]notify.Notifier{"c": stuck}, notify.DispatcherOptions{Logger: quiet, Timeout: time.Hour})
	require.NoError(t, err)
	d1.Start()
	r1 := newRigOn(t, c1, clk, pol, func(o *EngineOptions) {
		o.Send = func(m notify.Message) { d1.Enqueue(m) }
		o.GroupWait = 10 * time.Second
	})
	r1.observe("wave-1", 95)
	clk.Add(10 * time.Second)
	r1.observe("wave-1", 95) // group_wait passed: the page is with the channel, undelivered
	// The crash: the process is gone with its queue; only the log file remains.
	require.NoError(t, c1.Close())
	t.Cleanup(func() { close(stuck.release); d1.Close(time.Second) })

	rcv := newReceiver(t)
	var d2 *notify.Dispatcher
	c2 := openCoord(t, dir)
	t.Cleanup(func() { c2.Close() })
	var r2 *rig
	r2 = newRigOn(t, c2, clk, pol, func(o *EngineOptions) {
		o.Send = func(m notify.Message) { d2.Enqueue(m) }
		o.GroupWait = 10 * time.Second
	})
	d2 = mustDispatcherWithDone(t, rcv, r2)
	d2.Start()
	// The restarted process waits out the crashed page's lease (group_wait plus the
	// delivery timeout), then pages once.
	for range 13 {
		clk.Add(10 * time.Second)
		r2.observe("wave-1", 95)
	}
	d2.Close(10 * time.Second)
	r2.e.Sync() // the delivery's record
	p := rcv.payloads()
	require.Len(t, p, 1, "the page lost in the crash is sent once")
	require.Equal(t, "firing", p[0].Status)
	require.Equal(t, "wave-1", p[0].Alerts[0].Labels["node"])
	entries, err := r2.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, 1, entries[0].Sent, "recorded as sent once delivered")
	require.False(t, entries[0].LastSent.IsZero())
}

// mustDispatcherWithDone builds the webhook dispatcher that reports deliveries to r's engine.
func mustDispatcherWithDone(t *testing.T, rcv *receiver, r *rig) *notify.Dispatcher {
	d, err := notify.NewDispatcher(map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
		notify.DispatcherOptions{Logger: quiet, Done: func(m notify.Message, err error) { r.e.Delivered(m, err) }})
	require.NoError(t, err)
	return d
}

// An entry keeps each earlier resolution still owed, newest first in the chain and
// oldest first from priors, and drops the oldest past maxPriors; one dropped by id.
func TestPriorsChain(t *testing.T) {
	var le LogEntry
	var dropped []time.Time
	for i := range maxPriors + 2 {
		p := &PriorResolution{ResolvedAt: t0.Add(time.Duration(i) * time.Minute), Owed: []string{"hook"}}
		var d *PriorResolution
		le.Prior, d = withPrior(p, le.Prior)
		for ; d != nil; d = d.Before {
			dropped = append(dropped, d.ResolvedAt)
		}
	}
	require.Equal(t, []time.Time{t0, t0.Add(time.Minute)}, dropped, "the two oldest, past maxPriors")
	ps := le.priors()
	require.Len(t, ps, maxPriors)
	require.Equal(t, t0.Add(2*time.Minute), ps[0].ResolvedAt, "oldest first")
	require.Equal(t, t0.Add(time.Duration(maxPriors+1)*time.Minute), ps[maxPriors-1].ResolvedAt)

	mid := t0.Add(5 * time.Minute)
	require.NotNil(t, le.prior(mid))
	le.dropPrior(mid)
	require.Nil(t, le.prior(mid))
	require.Len(t, le.priors(), maxPriors-1)
	le.dropPrior(t0.Add(time.Duration(maxPriors+1) * time.Minute)) // the head
	require.Len(t, le.priors(), maxPriors-2)
	require.Equal(t, t0.Add(time.Duration(maxPriors)*time.Minute), le.Prior.ResolvedAt)

	head, d := withPrior(nil, le.Prior)
	require.Same(t, le.Prior, head, "no new Prior owed: the older ones stay")
	require.Nil(t, d)
}
