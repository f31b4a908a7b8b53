package alarm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/coord"
)

// Delivery per channel, and through an outage of the notification log.

// twoChannels is basePolicy paging the channels mail and hook.
var twoChannels = strings.Replace(basePolicy, "channels: [c]", "channels: [mail, hook]", 1) + "    repeat_interval: 1h\n"

// channelOutbox records what the engine sends, per channel; take reports each message
// delivered unless its channel is down (failed: every attempt failed) or held (in flight:
// no outcome yet, as when the process dies during the retries).
type channelOutbox struct {
	mu   sync.Mutex
	e    *Engine
	msgs []notify.Message
	down map[string]bool
	held map[string]bool
	// heldMsgs are the messages held, for deliverHeld.
	heldMsgs []notify.Message
}

// deliverHeld reports the held messages delivered.
func (o *channelOutbox) deliverHeld() { o.finishHeld(nil) }

// finishHeld reports the held messages' outcome: delivered (nil), or given up (err).
func (o *channelOutbox) finishHeld(err error) {
	o.mu.Lock()
	ms := o.heldMsgs
	o.heldMsgs = nil
	o.mu.Unlock()
	for _, m := range ms {
		o.e.Delivered(m, err)
	}
	o.e.Sync()
}

func (o *channelOutbox) send(m notify.Message) {
	o.mu.Lock()
	o.msgs = append(o.msgs, m)
	o.mu.Unlock()
}

// take returns "channel: status node" for each alert sent since the last call.
func (o *channelOutbox) take() []string {
	o.e.Sync()
	o.mu.Lock()
	ms := o.msgs
	o.msgs = nil
	down, held := o.down, o.held
	o.mu.Unlock()
	var out []string
	for _, m := range ms {
		for _, a := range m.Alerts {
			out = append(out, m.Receiver+": "+a.Status+" "+a.Labels["node"])
		}
		switch {
		case held[m.Receiver]:
			o.mu.Lock()
			o.heldMsgs = append(o.heldMsgs, m)
			o.mu.Unlock()
		case down[m.Receiver]:
			o.e.Delivered(m, errors.New("connection refused"))
		default:
			o.e.Delivered(m, nil)
		}
	}
	o.e.Sync()
	return out
}

// requireTombstone checks that e's log holds the one alert's entry as a tombstone: every
// channel owed the resolution had it.
func requireTombstone(t *testing.T, e *Engine) {
	t.Helper()
	entries, err := e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.True(t, entries[0].ResolveSent, "a tombstone once every channel had the resolution")
}

// channelRigOn is channelRig for another process on the same coordinator c (the log's
// other reader while the first one lives).
func channelRigOn(t *testing.T, c coord.Coordinator, clk *clock) (*rig, *channelOutbox) {
	t.Helper()
	out := &channelOutbox{down: map[string]bool{}, held: map[string]bool{}}
	r := newRigOn(t, c, clk, twoChannels, func(o *EngineOptions) { o.Send = out.send })
	out.e = r.e
	return r, out
}

// settle is what r sends (takeEpisodes) now and over n more ticks 10 s apart: a
// message's group waits, and a resolution after its page goes in the next message.
func (o *channelOutbox) settle(clk *clock, r *rig, n int) []string {
	got := o.takeEpisodes()
	for range n {
		clk.Add(10 * time.Second)
		r.e.Tick()
		got = append(got, o.takeEpisodes()...)
	}
	return got
}

// onChannel is the notices of got ("channel: …") sent to ch.
func onChannel(got []string, ch string) []string {
	var out []string
	for _, s := range got {
		if strings.HasPrefix(s, ch+": ") {
			out = append(out, s)
		}
	}
	return out
}

// hookInFlight is process name, alone in its group on the log of dir, having paged
// wave-1 on both channels: mail delivered it, hook's page is still in flight.
func hookInFlight(t *testing.T, dir string, clk *clock, name string) (*rig, *channelOutbox) {
	t.Helper()
	r, out := channelRig(t, dir, clk, twoChannels, nil, []string{"hook"})
	r.e.SetMembers(name, []string{name})
	r.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out.take())
	return r, out
}

// channelRig is an engine on the log of dir (coord/single), sending to a channelOutbox.
func channelRig(t *testing.T, dir string, clk *clock, pol string, down, held []string) (*rig, *channelOutbox) {
	t.Helper()
	c := openCoord(t, dir)
	t.Cleanup(func() { c.Close() })
	out := &channelOutbox{down: map[string]bool{}, held: map[string]bool{}}
	for _, ch := range down {
		out.down[ch] = true
	}
	for _, ch := range held {
		out.held[ch] = true
	}
	r := newRigOn(t, c, clk, pol, func(o *EngineOptions) { o.Send = out.send })
	out.e = r.e
	return r, out
}

// A channel down when the others delivered a page gets it from the next process after
// a stop (its claim handed back), and only it; every channel then gets the resolution.
// Before, the first channel's delivery counted the page as sent: the next process
// adopted it, and the channel that missed the page got only its resolution.
func TestPageOwedToAChannelSurvivesAStop(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := channelRig(t, dir, clk, twoChannels, []string{"hook"}, nil)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
	// The stop: the channels drained (hook gave up), what is undelivered is handed back.
	pages, _ := r1.e.releaseInflight(context.Background())
	require.Equal(t, 1, pages, "the page hook is owed is handed back")
	require.NoError(t, r1.c.Close())

	clk.Add(10 * time.Second)
	r2, out2 := channelRig(t, dir, clk, twoChannels, nil, nil)
	r2.observe("wave-1", 95)
	require.Equal(t, []string{"hook: firing wave-1"}, out2.take(), "the channel that missed the page gets it, the other not again")
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 95)
	require.Empty(t, out2.take())
	require.Equal(t, 1, r2.e.Alerts()[0].Notifications, "the rest of a page is not another notification")
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out2.take())
	requireTombstone(t, r2.e)
}

// After a crash while a channel was retrying the page (kill -9: no hand-back), the next
// process sends that channel the page once the claim is known dead (its lease ran out,
// or the group stopped listing its process), and not the channels that had it.
func TestPageOwedToAChannelSurvivesACrash(t *testing.T) {
	for _, how := range []string{"lease", "group"} {
		t.Run(how, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r1, _ := hookInFlight(t, dir, clk, "alarm-1")
			require.NoError(t, r1.c.Close()) // the crash, hook's page still in its retries

			r2, out2 := channelRig(t, dir, clk, twoChannels, nil, nil)
			var sent []string
			for range 20 {
				clk.Add(10 * time.Second)
				if how == "group" {
					r2.e.SetMembers("alarm-2", []string{"alarm-2"}) // the group noticed the crash
				}
				r2.observe("wave-1", 95)
				got := out2.take()
				if len(got) > 0 && how == "group" {
					require.Equal(t, 10*time.Second, clk.Now().Sub(t0), "a dead claimer's page is taken over at once")
				}
				sent = append(sent, got...)
			}
			require.Equal(t, []string{"hook: firing wave-1"}, sent)
			clk.Add(10 * time.Second)
			r2.observe("wave-1", 10)
			require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out2.take())
		})
	}
}

// A receiver never gets a resolution for a page it did not get: an episode that ends
// before a channel got its page (the process died during its retries, or stopped and
// handed it back) is paged on that channel, then resolved on every channel, as a
// backlog's episode is (it resolved on the channels that had the page only, and the
// other never heard of it; and a resolution alone went where another process's claim,
// its process killed inside group_wait, was taken for a page on its way).
func TestResolutionOnlyWhereThePageWent(t *testing.T) {
	for _, how := range []string{"crash", "stop"} {
		t.Run(how, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			var r1 *rig
			var out1 *channelOutbox
			if how == "crash" {
				r1, out1 = channelRig(t, dir, clk, twoChannels, nil, []string{"hook"})
			} else {
				r1, out1 = channelRig(t, dir, clk, twoChannels, []string{"hook"}, nil)
			}
			r1.e.SetMembers("alarm-1", []string{"alarm-1"})
			r1.observe("wave-1", 95)
			require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
			if how == "stop" {
				r1.e.releaseInflight(context.Background())
			}
			require.NoError(t, r1.c.Close())

			clk.Add(10 * time.Second)
			r2, out2 := channelRig(t, dir, clk, twoChannels, nil, nil)
			r2.e.SetMembers("alarm-2", []string{"alarm-2"})
			r2.observe("wave-1", 10) // the episode ends before hook was sent its page again
			require.Equal(t, []string{"hook: firing wave-1", "mail: resolved wave-1", "hook: resolved wave-1"}, out2.take())
		})
	}
}

// A page still on its way from the process that claimed it (a), live in the group (a
// rebalance moved the partition) or draining (a graceful stop), when the alert resolves
// at the partition's new owner (b), however long past the claim's lease (a slow
// receiver's backlog): b resolves it at once where the page went, and holds hook's
// resolution back until a's page settles: it then follows a's page, or, where that page
// was given up (and handed back), b's own page. Before, b paged hook again first (outside
// trials: 4 s answers, a SIGTERM or a rebalance, the page twice, the second after the
// resolution).
func TestResolutionAwaitsAnotherProcesssPage(t *testing.T) {
	for _, how := range []string{"draining", "in the group"} {
		for _, outcome := range []string{"delivered", "given up"} {
			t.Run(how+"/"+outcome, func(t *testing.T) {
				dir, clk := t.TempDir(), &clock{t: t0}
				r1, out1 := hookInFlight(t, dir, clk, "alarm-a")
				r1.e.Release([]string{"wave-1"}) // its partition moved to b

				r2, out2 := channelRigOn(t, r1.c, clk)
				clk.Add(5 * time.Second)
				r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"}) // the group's answer, with those draining
				r2.observe("wave-1", 95)
				require.Empty(t, out2.take(), "a is delivering the page")
				clk.Add(5 * time.Minute) // far past the claim's lease
				r2.observe("wave-1", 95)
				require.Empty(t, out2.take(), "a is still delivering the page")
				clk.Add(10 * time.Second)
				r2.observe("wave-1", 10)
				require.Equal(t, []string{"mail: resolved wave-1"}, out2.take(), "hook's resolution waits for a's page")
				clk.Add(10 * time.Second)
				r2.e.Tick()
				require.Empty(t, out2.take(), "still waiting while a's page is on its way")

				var err error
				want := []string{"hook: resolved wave-1"}
				if outcome == "given up" {
					err = errors.New("connection refused")
					want = []string{"hook: firing wave-1", "hook: resolved wave-1"}
				}
				out1.finishHeld(err)
				if how == "draining" {
					require.Zero(t, func() int { p, _ := r1.e.releaseInflight(context.Background()); return p }(), "nothing left to hand back")
					r2.e.SetMembers("alarm-b", []string{"alarm-b"}) // the drain ended
				}
				r2.e.Tick()
				require.Equal(t, want, out2.take())
				r2.e.Tick()
				require.Empty(t, out2.take(), "once")
				requireTombstone(t, r2.e)
			})
		}
	}
}

// While a channel retries the page, a resolution decided here follows it on that
// channel's queue, so it goes to every channel (the receiver gets both, in order).
func TestResolutionFollowsAPageInFlight(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r, out := channelRig(t, dir, clk, twoChannels, nil, []string{"hook"})
	r.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out.take())
	clk.Add(10 * time.Second)
	r.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out.take())

	// The page arrives after its episode resolved here: it is recorded in the log as any
	// page's, so when the resolution behind it fails on that channel and is sent again
	// after its lease, the channel gets the resolution alone, not the page a second time.
	out.mu.Lock()
	held := out.heldMsgs
	out.heldMsgs, out.held = nil, map[string]bool{}
	out.mu.Unlock()
	require.Len(t, held, 2)
	r.e.Delivered(held[0], nil)                              // the page arrives
	r.e.Delivered(held[1], errors.New("connection refused")) // its resolution does not
	r.e.Sync()
	clk.Add(3 * time.Minute)
	_, err := r.e.Restore(context.Background())
	require.NoError(t, err)
	r.e.Sync()
	r.e.Tick()
	require.Equal(t, []string{"hook: resolved wave-1"}, out.take())
}

// flakyLog is a notification log that can be cut off, as a ZooKeeper partition does:
// every operation then fails as a timed-out one.
type flakyLog struct {
	NotificationLog
	down atomic.Bool
	ops  atomic.Int64 // operations tried while down
}

func (l *flakyLog) fail(op string) error {
	if !l.down.Load() {
		return nil
	}
	l.ops.Add(1)
	return fmt.Errorf("notification log: %s: %w", op, context.DeadlineExceeded)
}

func (l *flakyLog) Load(ctx context.Context) ([]LogEntry, error) {
	if err := l.fail("list"); err != nil {
		return nil, err
	}
	return l.NotificationLog.Load(ctx)
}

func (l *flakyLog) Save(ctx context.Context, e LogEntry) error {
	if err := l.fail("save"); err != nil {
		return err
	}
	return l.NotificationLog.Save(ctx, e)
}

func (l *flakyLog) Remove(ctx context.Context, fp string, version int64) error {
	if err := l.fail("remove"); err != nil {
		return err
	}
	return l.NotificationLog.Remove(ctx, fp, version)
}

func (l *flakyLog) Get(ctx context.Context, fp string) (LogEntry, int64, error) {
	if err := l.fail("get"); err != nil {
		return LogEntry{}, 0, err
	}
	return l.NotificationLog.Get(ctx, fp)
}

func (l *flakyLog) Put(ctx context.Context, e LogEntry, version int64) error {
	if err := l.fail("put"); err != nil {
		return err
	}
	return l.NotificationLog.Put(ctx, e, version)
}

// flakyRig is a rig whose notification log can be cut off.
func flakyRig(t *testing.T, dir string, clk *clock, pol string) (*rig, *flakyLog) {
	t.Helper()
	c := openCoord(t, dir)
	t.Cleanup(func() { c.Close() })
	fl := &flakyLog{NotificationLog: &CoordLog{C: c}}
	r := newRigOn(t, c, clk, pol, func(o *EngineOptions) { o.Log = fl })
	return r, fl
}

// A page sent while the notification log cannot be reached is recorded once it can, and
// its resolution follows. Before, the failed writes were dropped: the log kept the
// previous episode's tombstone, and the resolution, finding the episode resolved in the
// log, was never sent (issue: t19, a ZooKeeper partition).
func TestPageDuringALogOutageIsResolved(t *testing.T) {
	for _, when := range []string{"after the outage", "during the outage"} {
		t.Run(when, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			pol := basePolicy + "    repeat_interval: 1h\n"
			r, fl := flakyRig(t, dir, clk, pol)
			// An earlier episode, paged and resolved: the log keeps its tombstone.
			r.observe("wave-1", 95)
			clk.Add(10 * time.Second)
			r.observe("wave-1", 10)
			require.Equal(t, []string{F, R}, r.out.take())

			fl.down.Store(true)
			clk.Add(10 * time.Second)
			r.observe("wave-1", 95)
			require.Equal(t, []string{F}, r.out.take(), "without the log's answer it pages")
			clk.Add(10 * time.Second)
			if when == "during the outage" {
				r.observe("wave-1", 10)
				require.Equal(t, []string{R}, r.out.take(), "a page sent here gets its resolution")
				clk.Add(10 * time.Second)
			}
			fl.down.Store(false)
			r.e.Tick() // the writes that waited are tried again
			r.e.Sync()
			entries, err := r.e.o.Log.Load(context.Background())
			require.NoError(t, err)
			require.Len(t, entries, 1)
			le := entries[0]
			require.Equal(t, t0.Add(20*time.Second), le.FiringSince, "the log knows the episode paged in the outage")
			require.Equal(t, 1, le.Sent)
			if when == "during the outage" {
				require.True(t, le.ResolveSent, "and that its resolution was told: %+v", le)
				clk.Add(10 * time.Second)
				r.observe("wave-1", 10)
				require.Empty(t, r.out.take())
				return
			}
			require.True(t, le.firing())
			r.observe("wave-1", 10)
			require.Equal(t, []string{R}, r.out.take(), "the resolution follows once the log answers")

			// The next process finds nothing to resend.
			require.NoError(t, r.c.Close())
			r2 := restartOn(t, dir, clk, pol, nil)
			clk.Add(10 * time.Second)
			r2.observe("wave-1", 10)
			require.Empty(t, r2.out.take())
		})
	}
}

// A decision about an alert whose writes wait for the log is taken after them: the
// resolution of a page sent in the outage waits for the claim's record even when it comes
// before the retry's round (the writer tries the alert's writes first).
func TestResolutionWaitsForTheClaimsRecord(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	pol := basePolicy + "    repeat_interval: 1h\n"
	r, fl := flakyRig(t, dir, clk, pol)
	r.observe("wave-1", 95)
	clk.Add(10 * time.Second)
	r.observe("wave-1", 10)
	require.Equal(t, []string{F, R}, r.out.take())

	fl.down.Store(true)
	clk.Add(10 * time.Second)
	r.observe("wave-1", 95)
	require.Equal(t, []string{F}, r.out.take())
	fl.down.Store(false)
	// No tick in between: the resolution's evaluation is the first to reach the writer
	// once the retry is due.
	clk.Add(2 * time.Second)
	r.e.Observe(batch("wave-1", clk.Now(), cpu(10)))
	r.e.Sync()
	require.Equal(t, []string{R}, r.out.take())
}

// The writes that waited are retried with a back-off while the log stays down, not at
// every tick (each attempt may wait out a ZooKeeper timeout, holding the writer).
func TestLogRetriesBackOff(t *testing.T) {
	clk := &clock{t: t0}
	r, fl := flakyRig(t, t.TempDir(), clk, basePolicy+"    repeat_interval: 1h\n")
	fl.down.Store(true)
	r.observe("wave-1", 95)
	require.Equal(t, []string{F}, r.out.take())
	fl.ops.Store(0)
	for range 60 {
		clk.Add(time.Second)
		r.e.Tick()
		r.e.Sync()
	}
	require.Less(t, fl.ops.Load(), int64(12), "tries in a minute")
	require.Greater(t, fl.ops.Load(), int64(2))
}

// Once the log failed, the decisions until the next retry do not try it (each try waits
// out a timeout on the writer, holding every other page and resolution behind it): they
// go out at once, their writes wait with the others.
func TestLogDownDecisionsDoNotWait(t *testing.T) {
	clk := &clock{t: t0}
	pol := basePolicy + "    repeat_interval: 1h\n"
	r, fl := flakyRig(t, t.TempDir(), clk, pol)
	fl.down.Store(true)
	r.observe("wave-1", 95)
	require.Equal(t, []string{F}, r.out.take())
	tried := fl.ops.Load()
	r.e.Observe(batch("wave-2", clk.Now(), cpu(95)))
	r.e.Observe(batch("wave-1", clk.Now().Add(time.Millisecond), cpu(10)))
	r.e.Sync()
	require.ElementsMatch(t, []string{"firing wave-2", R}, r.out.take())
	require.Equal(t, tried, fl.ops.Load(), "the log was not tried again before its retry")
	fl.down.Store(false)
	clk.Add(time.Second)
	r.e.Tick()
	r.e.Sync()
	entries, err := r.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 2, "both alerts recorded")
	for _, le := range entries {
		if le.Labels["node"] == "wave-1" {
			require.True(t, le.ResolveSent, "%+v", le)
		} else {
			require.True(t, le.firing())
			require.Equal(t, 1, le.Sent)
		}
	}
}

// The pages a process keeps in memory per alert (to know where a resolution goes) are
// forgotten with the alert when its node moves away: at once when delivered everywhere,
// else once they are.
func TestReleasedAlertsForgetTheirPages(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r, out := channelRig(t, dir, clk, twoChannels, nil, []string{"hook"})
	r.observe("wave-1", 95)
	out.take() // mail delivers; hook holds it
	out.mu.Lock()
	out.held = nil
	out.mu.Unlock()
	r.observe("wave-2", 95)
	out.take() // delivered everywhere
	pages := func() int { r.e.infMu.Lock(); defer r.e.infMu.Unlock(); return len(r.e.paging) }
	require.Equal(t, 2, pages())
	r.e.Release([]string{"wave-1", "wave-2"})
	require.Equal(t, 1, pages(), "wave-2's page is forgotten, wave-1's is on its way to hook")
	out.deliverHeld()
	require.Equal(t, 0, pages())
}

// A page every attempt of which failed (the receiver down for the whole retry schedule)
// is sent again after its claim's lease, also under max_notifications: it was no
// notification, so it does not use up the cap. Before, the failed page counted towards
// max_notifications: 1 and the alert never paged at all.
func TestFailedPageIsNotCountedTowardsMaxNotifications(t *testing.T) {
	for _, cap := range []string{"", "    max_notifications: 1\n"} {
		t.Run("cap="+strings.TrimSpace(cap), func(t *testing.T) {
			pol := strings.Replace(basePolicy, "channels: [c]", "channels: [hook]", 1) + "    repeat_interval: 1h\n" + cap
			dir, clk := t.TempDir(), &clock{t: t0}
			r, out := channelRig(t, dir, clk, pol, []string{"hook"}, nil)
			r.observe("wave-1", 95)
			require.Equal(t, []string{"hook: firing wave-1"}, out.take(), "every attempt fails")
			out.mu.Lock()
			out.down = map[string]bool{}
			out.mu.Unlock()
			var sent []string
			for range 20 {
				clk.Add(10 * time.Second)
				r.observe("wave-1", 95)
				sent = append(sent, out.take()...)
			}
			require.Equal(t, []string{"hook: firing wave-1"}, sent, "the failed page is sent again once")
			require.Equal(t, 1, r.e.Alerts()[0].Notifications, "one page delivered")
			clk.Add(10 * time.Second)
			r.observe("wave-1", 10)
			require.Equal(t, []string{"hook: resolved wave-1"}, out.take())
		})
	}
}

// Under max_notifications: 1, a page whose process crashed before every channel had it
// (kill -9 during the retries; the next process adopts the claim while its lease runs)
// is still sent by the next process, to the channels that missed it: the cap counts
// delivered pages, and that page is the first. Before, the adopted claim counted as the
// one notification allowed and the page was never sent.
func TestCrashedPageIsResentUnderMaxNotifications(t *testing.T) {
	pol := twoChannels + "    max_notifications: 1\n"
	for _, tc := range []struct {
		name string
		held []string
		want []string
	}{
		{"no channel had it", []string{"mail", "hook"}, []string{"mail: firing wave-1", "hook: firing wave-1"}},
		{"one channel had it", []string{"hook"}, []string{"hook: firing wave-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r1, out1 := channelRig(t, dir, clk, pol, nil, tc.held)
			r1.observe("wave-1", 95)
			require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
			require.NoError(t, r1.c.Close()) // the crash, the held channels still retrying

			r2, out2 := channelRig(t, dir, clk, pol, nil, nil)
			var sent []string
			for range 20 {
				clk.Add(10 * time.Second)
				r2.observe("wave-1", 95)
				sent = append(sent, out2.take()...)
			}
			require.Equal(t, tc.want, sent)
			require.Equal(t, 1, r2.e.Alerts()[0].Notifications)
		})
	}
}

// TestCappedAlertKeepsLastNotifiedAfterRestart: an alert at its max_notifications, loaded
// again after a restart, shows when it was last notified (it showed null: the next
// process never claims it, and only a claim set it).
func TestCappedAlertKeepsLastNotifiedAfterRestart(t *testing.T) {
	pol := twoChannels + "    max_notifications: 1\n"
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := channelRig(t, dir, clk, pol, nil, nil)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
	paged := r1.e.Alerts()[0].LastNotified
	require.NotNil(t, paged)
	require.NoError(t, r1.c.Close())

	r2, out2 := channelRig(t, dir, clk, pol, nil, nil)
	for range 3 {
		clk.Add(10 * time.Second)
		r2.observe("wave-1", 95)
	}
	require.Empty(t, out2.take(), "at its max_notifications: no page")
	v := r2.e.Alerts()[0]
	require.Equal(t, 1, v.Notifications)
	require.NotNil(t, v.LastNotified, "lastNotified after the restart")
	require.True(t, v.LastNotified.Equal(*paged), "lastNotified %v, want the page's %v", v.LastNotified, paged)
}

// A page every channel gave up (a receiver answering 500 through every attempt) is
// claimed again by this process 10 s later, not after its 2-minute lease, so an episode
// longer than the outage is paged once the receiver is back, then resolved. One that
// ends before that gets no resolution either: it goes only where a page went. Before,
// the log's claim counted as a page on its way, and every channel got the resolution
// of a page it never had (found from outside: 0 pages, 100 resolutions).
func TestFailedPageIsClaimedAgainSoon(t *testing.T) {
	for _, ends := range []time.Duration{25 * time.Second, 5 * time.Second} {
		t.Run(fmt.Sprintf("ends after %s", ends), func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r, out := channelRig(t, dir, clk, twoChannels, []string{"mail", "hook"}, nil)
			r.e.SetMembers("alarm-1", []string{"alarm-1"})
			r.observe("wave-1", 95)
			require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out.take()) // both give up
			out.mu.Lock()
			out.down = map[string]bool{} // the receivers are back
			out.mu.Unlock()
			var got []string
			for at := 5 * time.Second; at < ends; at += 5 * time.Second {
				clk.Add(5 * time.Second)
				r.observe("wave-1", 95)
				got = append(got, out.take()...)
			}
			clk.Add(5 * time.Second)
			r.observe("wave-1", 10)
			got = append(got, out.take()...)
			clk.Add(3 * time.Minute)
			r.observe("wave-1", 10)
			got = append(got, out.take()...)
			want := []string{"mail: firing wave-1", "hook: firing wave-1", "mail: resolved wave-1", "hook: resolved wave-1"}
			if ends < failedPageRetry {
				want = nil
			}
			require.Equal(t, want, got)
		})
	}
}

// A page waiting in its group when the process is paused past its session (SIGSTOP, a
// frozen VM) is checked against the log before it goes out late: another process that
// took the alert over and paged and resolved it holds the entry, and the stale page is
// dropped with the resolution queued behind it (before, it was delivered after the
// other's resolution, and the receiver kept the alert firing). One that resolved it with
// nothing to tell (no page delivered) leaves the page to go out, followed by its
// resolution, as a backlog's episode (an outside trial's 7 s episode got nothing). A
// page whose claim the log still holds goes out, late.
func TestLatePageAfterATakeoverIsNotSent(t *testing.T) {
	pol := strings.Replace(twoChannels, "    repeat_interval: 1h\n", "    repeat_interval: 1h\n    group_wait: 10s\n", 1)
	for _, taken := range []string{"paged and resolved", "resolved unpaged", ""} {
		t.Run(fmt.Sprintf("taken over: %q", taken), func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r, out := channelRig(t, dir, clk, pol, nil, nil)
			r.e.SetMembers("alarm-1", []string{"alarm-1"})
			r.observe("wave-1", 95)
			require.Empty(t, out.take(), "the page waits its group_wait")
			if taken != "" {
				fp := r.e.Alerts()[0].Fingerprint
				ctx := context.Background()
				le, ver, err := r.e.o.Log.Get(ctx, fp)
				require.NoError(t, err)
				end := clk.Now().Add(20 * time.Second)
				le.ResolvedAt, le.ResolvedTS, le.ResolveSent = end, end, true
				if taken == "paged and resolved" {
					// Another process's claim, paged and resolved while this one was paused.
					le.QueuedAt, le.ClaimedBy, le.Owed, le.Untold = clk.Now().Add(15*time.Second), "alarm-2", nil, nil
					le.LastSent, le.Sent, le.ResolveQueuedAt = clk.Now().Add(16*time.Second), 1, end
				} // else: resolved by another with nothing to tell (this claim's process was gone)
				require.NoError(t, r.e.o.Log.Put(ctx, le, ver))
			}
			clk.Add(40 * time.Second) // the pause: the group's wait ended 30 s ago
			r.e.Tick()
			r.e.Sync()
			got := out.take()
			clk.Add(time.Minute)
			r.e.Tick()
			r.e.Sync()
			got = append(got, out.take()...)
			switch taken {
			case "paged and resolved":
				require.Empty(t, got)
			case "resolved unpaged":
				require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1", "mail: resolved wave-1", "hook: resolved wave-1"}, got)
			default:
				require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, got)
			}
		})
	}
}

// A member killed (or paused) inside its page's group wait, still listed by the group
// when another member resolves the alert: the resolver holds the resolution while the
// group lists the claimer (a live one delivers its page: paged again first, a slow
// receiver had it twice), and once the group no longer lists it, pages the channels the
// claim owed, then resolves, instead of sending the resolution alone (an outside trial:
// 32 of 100 alerts got a resolution and no page, a member killed 1 s after firing).
func TestResolutionOfAClaimStillListedPagesFirst(t *testing.T) {
	pol := strings.Replace(twoChannels, "    repeat_interval: 1h\n", "    repeat_interval: 1h\n    group_wait: 10s\n", 1)
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := channelRig(t, dir, clk, pol, nil, nil)
	r1.e.SetMembers("alarm-1", []string{"alarm-1", "alarm-2"})
	r1.observe("wave-1", 95)
	require.Empty(t, out1.take(), "the page waits its group_wait")
	require.NoError(t, r1.c.Close()) // killed: its group never goes out

	clk.Add(3 * time.Second)
	r2, out2 := channelRig(t, dir, clk, pol, nil, nil)
	r2.e.SetMembers("alarm-2", []string{"alarm-1", "alarm-2"}) // alarm-1 not yet seen gone
	r2.observe("wave-1", 10)
	for range 3 {
		clk.Add(5 * time.Second)
		r2.e.Tick()
		r2.e.Sync()
		require.Empty(t, out2.take(), "alarm-1 is listed: its page may be on its way")
	}
	r2.e.SetMembers("alarm-2", []string{"alarm-2"}) // the group noticed the kill
	var got []string
	for range 3 { // the page's message, then the resolution's, group_wait apart
		clk.Add(15 * time.Second)
		r2.e.Tick()
		r2.e.Sync()
		got = append(got, out2.take()...)
	}
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1", "mail: resolved wave-1", "hook: resolved wave-1"}, got)
}

// Just after a pause (the timer ran late), a resolution the log cannot be asked about
// waits for the log instead of going out unlogged: another process may have taken the
// alert over during the pause and resolved it already, and the receiver got a second
// resolution with this process's later end (found from outside: 35 of them after a
// 30 s SIGSTOP). Once the log answers it is sent only if the log still holds the
// episode firing. Without a pause, it goes out at once, as before.
func TestResolutionAfterAPauseWaitsForTheLog(t *testing.T) {
	for _, tc := range []struct {
		name           string
		paused, other  bool // the process was paused; another resolved the alert meanwhile
		during, answer []string
	}{
		{"paused, resolved by another", true, true, nil, nil},
		{"paused, still firing in the log", true, false, nil, []string{R}},
		{"not paused", false, true, []string{R}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r, fl := flakyRig(t, dir, clk, basePolicy+"    repeat_interval: 1h\n")
			r.observe("wave-1", 95)
			require.Equal(t, []string{F}, r.out.take())
			if tc.other {
				ctx := context.Background()
				le, ver, err := fl.NotificationLog.Get(ctx, r.e.Alerts()[0].Fingerprint)
				require.NoError(t, err)
				le.ResolvedAt, le.ResolvedTS, le.ResolveQueuedAt, le.ResolveSent = clk.Now().Add(5*time.Second), clk.Now().Add(5*time.Second), clk.Now().Add(5*time.Second), true
				le.ClaimedBy = "alarm-2"
				require.NoError(t, fl.NotificationLog.Put(ctx, le, ver))
			}
			clk.Add(30 * time.Second)
			if tc.paused {
				r.e.Resumed()
			}
			fl.down.Store(true) // the session lost in the pause, not yet replaced
			r.observe("wave-1", 10)
			require.Equal(t, tc.during, r.out.take(), "while the log does not answer")
			fl.down.Store(false)
			clk.Add(2 * time.Second)
			r.e.Tick() // the writes that waited are tried again
			r.e.Sync()
			require.Equal(t, tc.answer, r.out.take(), "once the log answers")
		})
	}
}

// A resolved notice that every attempt failed (the receiver down), followed by the
// alert firing again before any sweep took the notice up (its lease): the notice goes
// out before the new episode's page. The new episode's claim took the notice's place as
// if it still waited in its group, and the episode the receiver was paged for never
// ended there (an outside trial: five pages, a P0 among them, never resolved).
func TestFailedResolutionGoesBeforeTheNextEpisode(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r, out := channelRig(t, dir, clk, twoChannels, nil, nil)
	r.e.SetMembers("alarm-1", []string{"alarm-1"})
	r.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out.take())
	out.mu.Lock()
	out.down = map[string]bool{"mail": true, "hook": true} // the receivers go down
	out.mu.Unlock()
	clk.Add(5 * time.Second)
	r.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out.take()) // both give up
	out.mu.Lock()
	out.down = map[string]bool{} // back
	out.mu.Unlock()
	clk.Add(20 * time.Second)
	r.observe("wave-1", 95)
	got := out.take()
	for _, ch := range []string{"mail", "hook"} {
		var of []string
		for _, g := range got {
			if strings.HasPrefix(g, ch+": ") {
				of = append(of, g)
			}
		}
		require.Equal(t, []string{ch + ": resolved wave-1", ch + ": firing wave-1"}, of, "on %s the first episode ends before the second is paged", ch)
	}
	// Delivered, nothing of the first episode is sent again.
	clk.Add(5 * time.Minute)
	r.observe("wave-1", 95)
	require.Empty(t, out.take())
}

// recorder is a channel that records each message's alerts as "status node" and fails
// while down; gate, when set, holds the next attempt until it is closed.
type recorder struct {
	mu   sync.Mutex
	got  []string
	down atomic.Bool
	gate chan struct{}
}

func (c *recorder) Notify(ctx context.Context, m notify.Message) error {
	c.mu.Lock()
	gate := c.gate
	c.gate = nil
	for _, a := range m.Alerts {
		c.got = append(c.got, a.Status+" "+a.Labels["node"])
	}
	c.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if c.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

func (c *recorder) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.got
	c.got = nil
	return got
}

// A resolution queued behind its page on a channel that then gives the page up is
// withheld there when its turn comes: the receiver would get the end of an incident it
// never heard of. It stays owed, and whoever sends it again pages that channel first.
func TestResolutionIsWithheldWhereItsPageWasGivenUp(t *testing.T) {
	mail, hook := &recorder{}, &recorder{gate: make(chan struct{})}
	hook.down.Store(true)
	var d *notify.Dispatcher
	r := newRig(t, twoChannels, func(o *EngineOptions) { o.Send = func(m notify.Message) { d.Enqueue(m) } })
	dispatch := func() *notify.Dispatcher {
		d, err := notify.NewDispatcher(map[string]notify.Notifier{"mail": mail, "hook": hook}, notify.DispatcherOptions{
			Attempts: 1, Logger: quiet,
			Done:    func(m notify.Message, err error) { r.e.Delivered(m, err) },
			Prepare: r.e.Prepare})
		require.NoError(t, err)
		d.Start()
		return d
	}
	d = dispatch()
	gate := hook.gate
	r.observe("wave-1", 95)
	require.Eventually(t, func() bool { return len(mail.take()) == 1 }, 5*time.Second, time.Millisecond)
	r.clk.Add(10 * time.Second)
	r.observe("wave-1", 10) // resolved while hook's page is on its way
	close(gate)             // hook gives the page up; its resolution's turn comes
	d.Close(10 * time.Second)
	r.e.Sync()
	require.Equal(t, []string{"resolved wave-1"}, mail.take())
	require.Equal(t, []string{"firing wave-1"}, hook.take(), "no resolution where the page never arrived")

	hook.down.Store(false) // the receiver is back; the lease of the resolution runs out
	d = dispatch()
	r.clk.Add(3 * time.Minute)
	_, err := r.e.Restore(context.Background()) // the log's reload sweeps it
	require.NoError(t, err)
	r.e.Sync()
	r.e.Tick()
	d.Close(10 * time.Second)
	r.e.Sync()
	require.Equal(t, []string{"firing wave-1", "resolved wave-1"}, hook.take(), "the page, then its end")
	require.Empty(t, mail.take(), "mail had both")
	requireTombstone(t, r.e)
}

// A page delivered late (a slow receiver's queue) after its episode ended and the next
// one was claimed is recorded as its own episode's, not the next one's: the log held the
// next page delivered when it was still queued, and after a crash the next process sent
// that episode's resolution alone (an outside trial).
func TestLatePageIsRecordedForItsOwnEpisode(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := hookInFlight(t, dir, clk, "alarm-1")
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take())
	clk.Add(3 * time.Minute) // past the resolution's lease: the next episode is paged at once
	r1.observe("wave-1", 95) // the next episode, while hook's queue holds the first
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
	out1.mu.Lock()
	held := out1.heldMsgs
	out1.heldMsgs = nil
	out1.mu.Unlock()
	require.Len(t, held, 3)
	r1.e.Delivered(held[0], nil) // the first episode's page and resolution arrive
	r1.e.Delivered(held[1], nil)
	r1.e.Sync()
	require.NoError(t, r1.c.Close()) // killed with the next page still queued

	r2, out2 := channelRig(t, dir, clk, twoChannels, nil, nil)
	clk.Add(5 * time.Second)
	r2.e.SetMembers("alarm-2", []string{"alarm-2"})
	r2.observe("wave-1", 95)
	require.Equal(t, []string{"hook: firing wave-1"}, out2.take(), "the page hook never had, once")
}

// An episode whose page is held behind the last episode's resolved notice, still on its
// way from the process that had the partition (a slow receiver's queue), and that ends
// before that notice is delivered, is paged and resolved then: it went untold (an outside
// trial: 21 of 289 episodes around restarts). The last resolution stays its live
// sender's, kept as the entry's Prior until delivered (taken over too, it reached the
// receiver twice: a later trial); a gone sender's is taken over and goes first.
func TestHeldEpisodeThatEndsIsPagedAndResolved(t *testing.T) {
	for _, sender := range []string{"alive", "gone"} {
		t.Run(sender, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r1, out1 := hookInFlight(t, dir, clk, "alarm-a")
			out1.deliverHeld()
			clk.Add(30 * time.Second)
			r1.observe("wave-1", 10)
			require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take(), "hook's resolution stays in its queue")
			r1.e.Release([]string{"wave-1"}) // the partition moves to b

			r2, out2 := channelRigOn(t, r1.c, clk)
			r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"})
			clk.Add(30 * time.Second)
			r2.observe("wave-1", 95) // the next episode
			require.Empty(t, out2.takeEpisodes(), "its page waits for a's resolution of the last")
			if sender == "gone" {
				r2.e.SetMembers("alarm-b", []string{"alarm-b"})
			}
			clk.Add(20 * time.Second)
			r2.observe("wave-1", 10) // and ends
			got := out2.settle(clk, r2, 3)
			hook := onChannel(got, "hook")
			want := []string{"hook: firing +60", "hook: resolved +60"}
			if sender == "gone" {
				want = append([]string{"hook: resolved +0"}, want...)
			}
			require.Equal(t, want, hook)
			require.ElementsMatch(t, []string{"mail: firing +60", "mail: resolved +60"},
				slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "hook: ") }))
			entries, err := r2.e.o.Log.Load(context.Background())
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.True(t, entries[0].FiringSince.Equal(t0.Add(time.Minute)), "the entry is this episode's: %v", entries[0].FiringSince)
			if sender == "alive" {
				require.NotNil(t, entries[0].Prior, "a's resolution, still owed to hook")
				out1.deliverHeld() // a's queue delivers it
				entries, err = r2.e.o.Log.Load(context.Background())
				require.NoError(t, err)
				require.Nil(t, entries[0].Prior, "delivered by its sender")
			}
			requireTombstone(t, r2.e)
		})
	}
}

// takeEpisodes is take with each notice's episode: "channel: status +N" (its start, N
// seconds after t0).
func (o *channelOutbox) takeEpisodes() []string {
	o.e.Sync()
	o.mu.Lock()
	ms := o.msgs
	o.msgs = nil
	o.mu.Unlock()
	var out []string
	for _, m := range ms {
		for _, a := range m.Alerts {
			out = append(out, fmt.Sprintf("%s: %s +%.0f", m.Receiver, a.Status, a.StartsAt.Sub(t0).Seconds()))
		}
		o.e.Delivered(m, nil)
	}
	o.e.Sync()
	return out
}

// A process's resolved notice still in its queue (a slow receiver) when the next
// episode is claimed stays in the log as the entry's Prior: the stop cuts it off, and
// the next owner sends it before it pages the next episode, after its own page to a
// channel that never had that (its queue cut off with the page still in it). It was
// forgotten with the entry, and the receiver's first incident never ended (an outside
// trial: 16 of 202 episodes through graceful restarts).
func TestPriorResolutionSurvivesAStop(t *testing.T) {
	for _, firstPage := range []string{"delivered", "cut off"} {
		t.Run(firstPage, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r1, out1 := hookInFlight(t, dir, clk, "alarm-a")
			if firstPage == "delivered" {
				out1.deliverHeld()
			}
			clk.Add(30 * time.Second)
			r1.observe("wave-1", 10) // hook's resolution stays in its queue
			require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take())
			clk.Add(30 * time.Second)
			r1.observe("wave-1", 95) // the next episode: its page follows on hook's queue
			require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
			entries, err := r1.e.o.Log.Load(context.Background())
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.NotNil(t, entries[0].Prior, "the first resolution, still owed to hook")
			require.Equal(t, []string{"hook"}, entries[0].Prior.Owed)
			atTakeover := []string{"hook: resolved +0", "hook: firing +60"}
			if firstPage == "cut off" {
				require.Equal(t, []string{"hook"}, entries[0].Prior.Unpaged, "hook never had the first page")
				atTakeover = append([]string{"hook: firing +0"}, atTakeover...)
			}
			r2, got := cutOffAndTakenOver(t, r1, out1, dir, clk, atTakeover...)
			require.Equal(t, []string{"hook: resolved +60"}, onChannel(got, "hook"), "hook: the second episode's end")
			require.Equal(t, []string{"mail: resolved +60"}, onChannel(got, "mail"))
			requireTombstone(t, r2.e)
			entries, err = r2.e.o.Log.Load(context.Background())
			require.NoError(t, err)
			require.Nil(t, entries[0].Prior, "delivered: no longer owed")
		})
	}
}

// cutOffAndTakenOver stops r1 with hook's queue cut off at the deadline, and starts the
// next process on its log, which sees the alert firing (and sends hook what it missed,
// missed: the earlier episodes' ends, then the page) then ending; it returns that
// process and what it sent at the end.
func cutOffAndTakenOver(t *testing.T, r1 *rig, out1 *channelOutbox, dir string, clk *clock, missed ...string) (*rig, []string) {
	t.Helper()
	out1.finishHeld(context.Canceled)
	_, _ = r1.e.releaseInflight(context.Background())
	require.NoError(t, r1.c.Close())

	r2, out2 := channelRig(t, dir, clk, twoChannels, nil, nil)
	r2.e.SetMembers("alarm-b", []string{"alarm-b"})
	clk.Add(5 * time.Second)
	r2.observe("wave-1", 95)
	require.Equal(t, missed, out2.takeEpisodes(), "what hook missed, oldest first")
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 10)
	return r2, out2.settle(clk, r2, 2)
}

// A Prior delivered from the queue that held it leaves the log: it is not sent again at
// the next episode's resolution.
func TestPriorDeliveredIsNotSentAgain(t *testing.T) {
	_, clk, r1, out1 := resolutionInHooksQueue(t)
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())
	out1.deliverHeld() // hook's queue delivers the first resolution, then the second page
	entries, err := r1.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Nil(t, entries[0].Prior, "delivered everywhere")
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take(), "the second episode's end alone")
}

// An earlier episode's resolution owed in the entry (Prior) goes when the next episode
// resolves, even when that resolution itself waits for another process's page on every
// channel: it was dropped with it (an outside trial: 10 such resolutions never sent). It
// does not go while the process that has it on its way lives (sent again, the receiver
// had it twice: a later trial); that process hands it back if a channel gives it up.
func TestPriorGoesWhileTheResolutionWaits(t *testing.T) {
	for _, sender := range []string{"handed back", "alive"} {
		t.Run(sender, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			r, out := channelRig(t, dir, clk, twoChannels, nil, nil)
			r.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b", "alarm-p"})
			r.observe("wave-1", 95)
			fp := r.e.Alerts()[0].Fingerprint
			out.take()
			// The log as alarm-a left it: the second episode's page claimed by a, on its
			// way to both channels, and the first episode's resolution still owed to both.
			le, _, err := r.e.o.Log.Get(context.Background(), fp)
			require.NoError(t, err)
			le.FiringSince, le.ClaimedBy, le.QueuedAt = t0.Add(60*time.Second), "alarm-a", clk.Now().Add(time.Second)
			le.Owed, le.Untold, le.LastSent, le.Sent = []string{"mail", "hook"}, []string{"mail", "hook"}, time.Time{}, 0
			le.Prior = &PriorResolution{FiringSince: t0, ResolvedAt: t0.Add(30 * time.Second), Owed: []string{"mail", "hook"}}
			if sender == "alive" {
				le.Prior.By = "alarm-p"
			}
			require.NoError(t, r.e.o.Log.Save(context.Background(), le))
			_, err = r.e.Restore(context.Background())
			require.NoError(t, err)
			clk.Add(10 * time.Second)
			r.observe("wave-1", 10)
			if sender == "alive" {
				require.Empty(t, out.takeEpisodes(), "alarm-p delivers it")
				return
			}
			le, _, err = r.e.o.Log.Get(context.Background(), fp)
			require.NoError(t, err)
			require.NotNil(t, le.Prior)
			require.Equal(t, "alarm-b", le.Prior.By, "on its way from b: no other live process sends it again")
			require.Equal(t, []string{"mail: resolved +0", "hook: resolved +0"}, out.takeEpisodes(), "the first episode's end, at once")
		})
	}
}

// The last episode's page delivered after the next episode's claim (a slow receiver's
// queue) is recorded in the entry's Prior: sent again, the Prior does not page it twice.
func TestLatePageOfThePriorIsRecorded(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := hookInFlight(t, dir, clk, "alarm-a")
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 10)
	out1.take()
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 95)
	out1.take()
	entries, err := r1.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"hook"}, entries[0].Prior.Unpaged)
	out1.mu.Lock()
	first := out1.heldMsgs[0] // the first episode's page to hook
	out1.mu.Unlock()
	r1.e.Delivered(first, nil)
	r1.e.Sync()
	entries, err = r1.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Empty(t, entries[0].Prior.Unpaged, "hook had the first page")
}

// A resolution handed back by a stopping process (b) while the episode's page is still
// on its way from a live one (a) is taken over by the next sweeper (c), which waits for
// a's page on the channels it owes instead of paging them again first (an outside trial:
// the page twice).
func TestTakenOverResolutionAwaitsALivePage(t *testing.T) {
	_, clk, r1, r2, out1, _ := resolvedAwaitingA(t, "alarm-a", "alarm-b")
	_, resolutions := r2.e.releaseInflight(context.Background()) // b stops
	require.Equal(t, 1, resolutions)

	r3, out3 := channelRigOn(t, r1.c, clk)
	r3.e.SetMembers("alarm-c", []string{"alarm-a", "alarm-c"})
	clk.Add(5 * time.Second)
	_, err := r3.e.Restore(context.Background()) // its sweep takes b's resolution over
	require.NoError(t, err)
	r3.e.Tick()
	require.Empty(t, out3.take(), "hook waits for a's page")
	out1.deliverHeld()
	clk.Add(5 * time.Second)
	r3.e.Tick()
	require.Equal(t, []string{"hook: resolved wave-1"}, out3.take(), "after a's page, the resolution alone")
	requireTombstone(t, r3.e)
}

// A process that saw an alert firing through the resolution another process wrote (it
// took the episode over from the log and never saw the gap the other resolved on) pages
// what the log holds as a new episode, starting where the last one ended. It paged with
// the last episode's start, after that episode's resolution: a second page of an ended
// incident, and the new one untold (an outside trial, after its page was held behind
// the other's resolved notice).
func TestEpisodeSeenThroughAnotherResolutionStartsAfterIt(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := hookInFlight(t, dir, clk, "alarm-a")
	r1.e.SetMembers("alarm-a", []string{"alarm-a", "alarm-b"})

	r2, out2 := channelRigOn(t, r1.c, clk) // takes the firing episode over from the log
	r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"})
	clk.Add(30 * time.Second)
	r2.observe("wave-1", 95)
	require.Empty(t, out2.takeEpisodes(), "a's page is on its way: adopted")
	r1.observe("wave-1", 10) // a still evaluates it (a rebalance's overlap) and resolves it
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take())

	var got []string
	for range 30 {
		clk.Add(10 * time.Second)
		r2.observe("wave-1", 95) // b never saw the gap
		got = append(got, out2.takeEpisodes()...)
	}
	require.Empty(t, got, "b's page waits while a's resolution is on its way on hook")
	out1.deliverHeld() // a's queue delivers the page and the resolution
	got = out2.settle(clk, r2, 2)
	// b first claimed at +120, once a's page's lease ran out: its evidence then is the
	// new episode's start (the last one ended at +30).
	require.ElementsMatch(t, []string{"mail: firing +120", "hook: firing +120"}, got, "a new episode, after the last one's end")
	entries, err := r2.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.True(t, entries[0].firing(), "the new episode")
	require.True(t, entries[0].FiringSince.Equal(t0.Add(120*time.Second)), "starts after the last one's end: %v", entries[0].FiringSince)
	for _, a := range r2.e.Alerts() {
		require.Equal(t, t0.Add(120*time.Second), a.FiringSince.UTC(), "b's alert follows the log's episode")
	}
}

// A process that adopted an episode another process paged (delivered: its next page is
// due at the repeat interval) and that keeps seeing it firing while the other resolves
// it pages the new episode at its next reload of the log, not an hour later: the
// receivers had the incident ended (an outside trial: an episode never told).
func TestEpisodeFiringThroughAnotherResolutionIsPagedAtTheReload(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := channelRig(t, dir, clk, twoChannels, nil, nil)
	r1.e.SetMembers("alarm-a", []string{"alarm-a", "alarm-b"})
	r1.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take())

	r2, out2 := channelRigOn(t, r1.c, clk)
	r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"})
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 95)
	require.Empty(t, out2.takeEpisodes(), "a paged it: adopted, next page at the repeat interval")
	clk.Add(10 * time.Second)
	r1.observe("wave-1", 10) // a resolves it on a point b never reads
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take())
	for range 3 {
		clk.Add(10 * time.Second)
		r2.observe("wave-1", 95)
	}
	require.Empty(t, out2.takeEpisodes(), "b has not read the log since")
	_, err := r2.e.Restore(context.Background()) // the alarm's periodic reload
	require.NoError(t, err)
	r2.e.Tick()
	got := out2.settle(clk, r2, 1)
	require.ElementsMatch(t, []string{"mail: firing +50", "hook: firing +50"}, got,
		"a new episode, from b's last point after the end at +20")
}

// Two episodes' resolved notices cut off in one process's queue (a slow receiver) both
// reach the receiver from the next process: the entry keeps each Prior still owed when a
// later episode's claim takes it over. It kept one: a third episode's claim replaced the
// first's, and the receiver's first incident never ended (an outside trial: a missing
// resolution through graceful restarts).
func TestEveryPriorStillOwedSurvivesAStop(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := hookInFlight(t, dir, clk, "alarm-a")
	for i := range 2 { // two more episodes while hook's queue holds everything
		clk.Add(30 * time.Second)
		r1.observe("wave-1", 10)
		require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take(), "episode %d's end", i)
		clk.Add(30 * time.Second)
		r1.observe("wave-1", 95)
		require.Equal(t, []string{"mail: firing wave-1", "hook: firing wave-1"}, out1.take(), "episode %d's page", i+1)
	}
	entries, err := r1.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	var owed []time.Time
	for _, p := range entries[0].priors() {
		owed = append(owed, p.ResolvedAt)
	}
	require.Equal(t, []time.Time{t0.Add(30 * time.Second), t0.Add(90 * time.Second)}, owed, "both resolutions still owed to hook, oldest first")
	r2, got := cutOffAndTakenOver(t, r1, out1, dir, clk,
		"hook: firing +0", "hook: resolved +0", "hook: firing +60", "hook: resolved +60", "hook: firing +120")
	require.Equal(t, []string{"hook: resolved +120"}, onChannel(got, "hook"), "hook: the last episode's end")
	require.Equal(t, []string{"mail: resolved +120"}, onChannel(got, "mail"))
	requireTombstone(t, r2.e)
	entries, err = r2.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Empty(t, entries[0].priors(), "delivered: no longer owed")
}

// An episode whose page waits behind the last episode's resolved notice (another live
// process's, on its way) is in the log while it waits: the process that takes the
// alert over next (a rebalance, a stop) continues it from its start and holds its page
// the same way. Held in memory alone, the next owner started it at its own first point
// (an outside trial: 10 of 272 episodes with a later start).
func TestHeldEpisodeIsLoggedForTheNextOwner(t *testing.T) {
	_, clk, r1, out1 := resolutionInHooksQueue(t)
	r1.e.Release([]string{"wave-1"})

	members := []string{"alarm-a", "alarm-b", "alarm-c"}
	r2, out2 := channelRigOn(t, r1.c, clk)
	r2.e.SetMembers("alarm-b", members)
	clk.Add(30 * time.Second)
	r2.observe("wave-1", 95) // the next episode, from +60
	require.Empty(t, out2.takeEpisodes(), "its page waits for a's resolution of the last")
	entries, err := r2.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.True(t, entries[0].firing(), "the held episode is logged")
	require.True(t, entries[0].FiringSince.Equal(t0.Add(60*time.Second)), "from its start: %v", entries[0].FiringSince)
	require.True(t, entries[0].QueuedAt.IsZero(), "unclaimed")
	require.NotNil(t, entries[0].Prior, "a's resolution, still owed to hook")
	require.Equal(t, "alarm-a", entries[0].Prior.By)
	r2.e.Release([]string{"wave-1"}) // the partition moves on to c

	clk.Add(10 * time.Second)
	r3, out3 := channelRigOn(t, r1.c, clk)
	r3.e.SetMembers("alarm-c", members)
	r3.observe("wave-1", 95)
	require.Empty(t, out3.takeEpisodes(), "c holds the page too while a delivers its resolution")
	out1.deliverHeld() // a's queue delivers it
	got := out3.settle(clk, r3, 2)
	require.ElementsMatch(t, []string{"mail: firing +60", "hook: firing +60"}, got, "the episode from its start")
	clk.Add(10 * time.Second)
	r3.observe("wave-1", 10)
	got = out3.settle(clk, r3, 2)
	require.ElementsMatch(t, []string{"mail: resolved +60", "hook: resolved +60"}, got)
	requireTombstone(t, r3.e)
}

// A resolved notice that its channel gave up while the next episode's page waits for it
// (held, another process) is handed back by its live sender: the waiting process sends
// it, then the page. The page waited for as long as that sender lived.
func TestHeldPageGoesOnceTheResolutionIsGivenUp(t *testing.T) {
	_, clk, r1, out1 := resolutionInHooksQueue(t)
	r1.e.Release([]string{"wave-1"})

	r2, out2 := channelRigOn(t, r1.c, clk)
	r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"})
	clk.Add(30 * time.Second)
	r2.observe("wave-1", 95)
	require.Empty(t, out2.takeEpisodes(), "held behind a's resolution")
	out1.finishHeld(errors.New("webhook: 500 after 4 attempts")) // a's hook gives it up; a lives on
	got := out2.settle(clk, r2, 2)
	require.Equal(t, []string{"hook: resolved +0", "hook: firing +60"}, onChannel(got, "hook"), "the last end, then the page")
	require.Equal(t, []string{"mail: firing +60"}, onChannel(got, "mail"))
}

// A resolution waiting for another process's page (awaitpage.go) that the next episode's
// held claim made the entry's Prior still goes once that page arrives, and the held page
// follows it. It was left alone as no longer resolving, and the next page waited for as
// long as its sender lived.
func TestAwaitedResolutionOfAHeldEpisodesPrior(t *testing.T) {
	members := []string{"alarm-a", "alarm-b", "alarm-c"}
	_, clk, r1, r2, out1, out2 := resolvedAwaitingA(t, members...)
	r2.e.Release([]string{"wave-1"})

	r3, out3 := channelRigOn(t, r1.c, clk)
	r3.e.SetMembers("alarm-c", members)
	clk.Add(30 * time.Second)
	r3.observe("wave-1", 95) // the next episode, held behind b's resolution
	require.Empty(t, out3.takeEpisodes())

	out1.deliverHeld() // a's page reaches hook
	r2.e.Tick()
	require.Equal(t, []string{"hook: resolved wave-1"}, out2.take(), "b's resolution follows a's page")
	got := out3.settle(clk, r3, 2)
	require.ElementsMatch(t, []string{"mail: firing +50", "hook: firing +50"}, got, "then the held page")
	entries, err := r3.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Empty(t, entries[0].priors(), "b's resolution delivered")
}

// A page a process sends for another's handed-back claim, just before the episode's
// resolved notice, is recorded when delivered: the process that sends the resolution
// again after it (killed before that answered) does not page the channel again, after
// the resolution it had had (an outside trial: 5 episodes through a kill -9).
func TestPageSentBeforeAResolutionIsRecorded(t *testing.T) {
	_, clk, r1, r2, out1, out2 := resolvedAwaitingA(t, "alarm-a", "alarm-b")
	out1.finishHeld(errors.New("webhook: 500 after 4 attempts")) // a gives the page up and hands it back
	out2.mu.Lock()
	out2.held["hook"] = true
	out2.mu.Unlock()
	r2.e.Tick()
	require.Equal(t, []string{"hook: firing wave-1", "hook: resolved wave-1"}, out2.take(), "b pages hook, then resolves it")
	out2.mu.Lock()
	var page notify.Message
	for _, m := range out2.heldMsgs {
		if m.Alerts[0].Status == notify.StatusFiring {
			page = m
		}
	}
	out2.mu.Unlock()
	require.Len(t, page.Alerts, 1, "the page in a message of its own")
	r2.e.Delivered(page, nil) // the page arrives; b is killed before the resolution's answer
	r2.e.Sync()

	clk.Add(5 * time.Minute) // past the resolution's lease
	r3, out3 := channelRigOn(t, r1.c, clk)
	r3.e.SetMembers("alarm-c", []string{"alarm-c"})
	_, err := r3.e.Restore(context.Background()) // its sweep takes the resolution over
	require.NoError(t, err)
	require.Equal(t, []string{"hook: resolved wave-1"}, out3.take(), "the resolution again (at least once), not the page")
	requireTombstone(t, r3.e)
}

// A resolution handed back to the process whose page of the episode is still on its way
// (a slow receiver) goes behind that page, before the next episode's: the page is not
// queued again (an outside trial: the receiver had it twice).
func TestHandedBackResolutionFollowsTheOwnPageInFlight(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r1, out1 := hookInFlight(t, dir, clk, "alarm-a") // a's page on its way to hook
	r1.e.SetMembers("alarm-a", []string{"alarm-a", "alarm-b"})
	r2, out2 := channelRigOn(t, r1.c, clk)
	r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"})
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 95)
	clk.Add(20 * time.Second)
	r2.observe("wave-1", 10) // b resolves it: mail at once, hook after a's page
	require.Equal(t, []string{"mail: resolved wave-1"}, out2.take())
	_, handed := r2.e.releaseInflight(context.Background()) // b stops
	require.Equal(t, 1, handed)
	r1.e.SetMembers("alarm-a", []string{"alarm-a"})

	r1.observe("wave-1", 10)
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 95) // the next episode
	require.Equal(t, []string{"mail: firing +60", "hook: resolved +0", "hook: firing +60"}, out1.takeEpisodes(),
		"hook: the last episode's end behind its page still on its way, then the next page")
}

// resolvedAwaitingA is a's page of wave-1 on its way to hook (hookInFlight), the
// partition moved on to b, in a group of members (none: a group that has not answered
// yet), which took the alert over and resolved it: mail has the resolution, hook's waits
// for a's page.
func resolvedAwaitingA(t *testing.T, members ...string) (dir string, clk *clock, r1, r2 *rig, out1, out2 *channelOutbox) {
	t.Helper()
	dir, clk = t.TempDir(), &clock{t: t0}
	r1, out1 = hookInFlight(t, dir, clk, "alarm-a")
	r1.e.Release([]string{"wave-1"})
	r2, out2 = channelRigOn(t, r1.c, clk)
	if len(members) > 0 {
		r2.e.SetMembers("alarm-b", members)
	} else {
		r2.e.ExpectMembers()
	}
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 95)
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1"}, out2.take(), "hook's resolution waits for a's page")
	return dir, clk, r1, r2, out1, out2
}

// resolutionInHooksQueue is process a (hookInFlight) having paged wave-1 everywhere and
// resolved it 30 s later: mail has the resolution, hook's is still in its queue.
func resolutionInHooksQueue(t *testing.T) (dir string, clk *clock, r1 *rig, out1 *channelOutbox) {
	t.Helper()
	dir, clk = t.TempDir(), &clock{t: t0}
	r1, out1 = hookInFlight(t, dir, clk, "alarm-a")
	out1.deliverHeld()
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 10)
	require.Equal(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out1.take(), "hook's resolution stays in its queue")
	return dir, clk, r1, out1
}

// A process whose resolution is still in its queue (a slow receiver) when another
// process's held claim made it the entry's Prior, and that gets the alert back, does not
// send that resolution again before its page: it is on its way from here (an outside
// trial: 4 resolutions twice after a partition came back).
func TestOwnResolutionInFlightIsNotSentAgainAsAPrior(t *testing.T) {
	_, clk, r1, out1 := resolutionInHooksQueue(t)
	r1.e.SetMembers("alarm-a", []string{"alarm-a", "alarm-c"})
	r1.e.Release([]string{"wave-1"})

	r2, out2 := channelRigOn(t, r1.c, clk)
	r2.e.SetMembers("alarm-c", []string{"alarm-a", "alarm-c"})
	clk.Add(30 * time.Second)
	r2.observe("wave-1", 95) // the next episode, held behind a's resolution
	require.Empty(t, out2.takeEpisodes())
	r2.e.Release([]string{"wave-1"})

	clk.Add(10 * time.Second)
	_, err := r1.e.Restore(context.Background()) // the partition comes back to a
	require.NoError(t, err)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{"mail: firing +60", "hook: firing +60"}, out1.takeEpisodes(),
		"the page, behind a's own resolution still in hook's queue")
}

// A process just started in its group resolves an alert whose page another process has
// on its way, before the group's first answer: the page is left to that process, the
// resolution waits for it. Taken for gone, the page went twice (an outside trial: a
// restarted process's first evaluation).
func TestResolutionBeforeTheGroupAnswersAwaitsTheClaimersPage(t *testing.T) {
	_, clk, _, r2, out1, out2 := resolvedAwaitingA(t) // b in a group that has not answered yet
	clk.Add(10 * time.Second)
	r2.e.Tick()
	require.Empty(t, out2.take(), "still unheard: a may be delivering it")
	r2.e.SetMembers("alarm-b", []string{"alarm-a", "alarm-b"})
	r2.e.Tick()
	require.Empty(t, out2.take(), "a is alive and delivering it")
	out1.deliverHeld()
	r2.e.Tick()
	require.Equal(t, []string{"hook: resolved wave-1"}, out2.take(), "after a's page, the resolution alone")
}
