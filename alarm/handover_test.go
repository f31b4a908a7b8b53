package alarm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/testenv"
)

// The hand-over of alerts between alarm processes (restarts, rebalances, deploys), each
// case a window of issue 34 in which a page was sent twice, a resolution lost or sent
// falsely, or a nodata page never sent. A "process" here is an engine on a notification
// log that a later engine opens again (coord/single on the same file), which is what a
// restart or a partition's new owner sees.

// restartOn opens the log of dir again, as the next process would.
func restartOn(t *testing.T, dir string, clk *clock, pol string, mod func(*EngineOptions)) *rig {
	t.Helper()
	c := openCoord(t, dir)
	t.Cleanup(func() { c.Close() })
	return newRigOn(t, c, clk, pol, mod)
}

// A process that takes a series over with fewer points than its condition needs keeps
// the alert the log holds firing until the series can tell: no resolution from "not
// enough data", no second page (issue 34: each moved violating node got a false resolve
// and a second page).
func TestTakeoverKeepsStateUntilDecidable(t *testing.T) {
	cases := []struct {
		name, cond string
		fire       []float64 // what makes the first process page
		undecided  []float64 // what the next one sees before the condition can tell
		decide     []float64 // then: still violating (no page), or ending it (one resolution)
		want       []string
	}{
		{"all", "all(#3) > 90", []float64{95, 95, 95}, []float64{95, 95}, []float64{95, 10}, []string{R}},
		{"avg", "avg(#3) > 90", []float64{95, 95, 95}, []float64{95, 95}, []float64{95, 10}, []string{R}},
		{"diff", "diff(#1) > 50", []float64{10, 95}, []float64{95}, []float64{95}, []string{R}},
		{"lookup", "lookup(#2,3) > 90", []float64{95, 95, 95}, []float64{95, 95}, []float64{95, 10, 10}, []string{R}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			pol := strings.Replace(basePolicy, "last > 90", tc.cond, 1) + "    repeat_interval: 1h\n"
			c1 := openCoord(t, dir)
			r1 := newRigOn(t, c1, clk, pol, nil)
			for _, v := range tc.fire {
				r1.observe("wave-1", v)
				clk.Add(10 * time.Second)
			}
			require.Equal(t, []string{F}, r1.out.take())
			require.NoError(t, c1.Close())

			r2 := restartOn(t, dir, clk, pol, nil)
			for i, v := range tc.undecided {
				r2.observe("wave-1", v)
				require.Equal(t, "firing", r2.state("wave-1"), "point %d: not enough data keeps it firing", i)
				require.Empty(t, r2.out.take(), "point %d: no resolution, no page", i)
				clk.Add(10 * time.Second)
			}
			var sent []string
			for _, v := range tc.decide {
				r2.observe("wave-1", v)
				sent = append(sent, r2.out.take()...)
				clk.Add(10 * time.Second)
			}
			require.Equal(t, tc.want, sent)
		})
	}
}

// A page delivered after its node's partition moved away is still recorded as sent, so
// the new owner does not page again once the claim's lease ran out (issue 34, item 1).
func TestDeliveryAfterReleaseIsRecorded(t *testing.T) {
	pol := basePolicy + "    repeat_interval: 1h\n"
	r := newRig(t, pol, nil)
	r.e.Observe(batch("wave-1", r.clk.Now(), cpu(95)))
	r.e.Sync()
	r.out.mu.Lock()
	queued := r.out.msgs
	r.out.msgs = nil
	r.out.mu.Unlock()
	require.Len(t, queued, 1)
	r.e.Release([]string{"wave-1"}) // the rebalance, between the claim and the delivery
	r.out.deliver(queued)

	entries, err := r.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, 1, entries[0].Sent, "the delivery is in the log")
	require.False(t, entries[0].pending())

	next := newRigOn(t, r.c, r.clk, pol, nil) // the partition's new owner
	r.clk.Add(5 * time.Minute)                // past the lease of an undelivered claim
	next.observe("wave-1", 95)
	require.Equal(t, "firing", next.state("wave-1"))
	require.Empty(t, next.out.take(), "paged once, within the repeat interval")
}

// A resolution decided just before a crash, still waiting in its group, is sent by the
// next process once its lease ran out: the log remembered it as resolving (issue 34,
// item 2).
func TestResolutionSurvivesACrash(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	pol := basePolicy + "    repeat_interval: 1h\n"
	wait := func(o *EngineOptions) { o.GroupWait = 30 * time.Second }
	c1 := openCoord(t, dir)
	r1 := newRigOn(t, c1, clk, pol, wait)
	r1.observe("wave-1", 95)
	clk.Add(30 * time.Second)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{F}, r1.out.take())
	clk.Add(10 * time.Second)
	r1.observe("wave-1", 10) // resolved; its notice waits out group_wait…
	require.Empty(t, r1.out.take())
	require.NoError(t, c1.Close()) // …and the process is gone with it

	r2 := restartOn(t, dir, clk, pol, wait)
	r2.observe("wave-1", 10)
	require.Empty(t, r2.out.take(), "within the lease the first process may still deliver it")
	clk.Add(3 * time.Minute)
	_, err := r2.e.Restore(context.Background()) // the periodic reload of the log sweeps it
	require.NoError(t, err)
	r2.e.Sync()
	clk.Add(30 * time.Second)
	r2.e.Tick()
	require.Equal(t, []string{R}, r2.out.take())
	for range 3 {
		clk.Add(3 * time.Minute)
		_, err := r2.e.Restore(context.Background())
		require.NoError(t, err)
		r2.observe("wave-1", 10)
	}
	require.Empty(t, r2.out.take(), "sent once")
}

// Two processes evaluate one node for a while (the overlap of a rebalance, or a process
// continuing a copy of the log it loaded earlier): the heal is resolved once, by
// whichever records it in the log first (issue 34: "a heal followed by a stop of its
// owner was resolved twice").
func TestOverlapResolvesOnce(t *testing.T) {
	pol := basePolicy + "    repeat_interval: 1h\n"
	r1 := newRig(t, pol, nil)
	r2 := newRigOn(t, r1.c, r1.clk, pol, nil)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{F}, r1.out.take())
	_, err := r2.e.Restore(context.Background()) // r2's copy of the log: firing
	require.NoError(t, err)
	r1.clk.Add(10 * time.Second)
	r1.observe("wave-1", 10)
	require.Equal(t, []string{R}, r1.out.take())
	r2.observe("wave-1", 10)
	require.Equal(t, "resolved", r2.state("wave-1"))
	require.Empty(t, r2.out.take(), "the log knows it resolved: no second resolution")
}

// A copy of the log that is stale the other way: the episode it holds resolved, and the
// node violates again. The process continuing the copy pages the new episode at once
// instead of taking it for the old one, paged already.
func TestStaleCopyPagesTheNewEpisode(t *testing.T) {
	pol := basePolicy + "    repeat_interval: 1h\n"
	r1 := newRig(t, pol, nil)
	r2 := newRigOn(t, r1.c, r1.clk, pol, nil)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{F}, r1.out.take())
	_, err := r2.e.Restore(context.Background())
	require.NoError(t, err)
	r1.clk.Add(10 * time.Second)
	r1.observe("wave-1", 10)
	require.Equal(t, []string{R}, r1.out.take())
	r1.clk.Add(10 * time.Second)
	r2.observe("wave-1", 95) // the partition moved to r2, which violates again
	require.Equal(t, []string{F}, r2.out.take())
	require.Empty(t, r1.out.take())
}

// Batches replayed after a restart (the bus commits positions once a second) carry
// their own times. A replayed point from before the alert fired does not resolve the
// alert the log holds firing (issue 34, item 4) …
func TestReplayBeforeFiringKeepsIt(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	pol := strings.Replace(basePolicy, "last > 90", "all(#2) > 90", 1) + "    repeat_interval: 1h\n"
	c1 := openCoord(t, dir)
	r1 := newRigOn(t, c1, clk, pol, nil)
	ts := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(20 * time.Second)}
	for i, v := range []float64{10, 95, 95} {
		clk.t = ts[i]
		r1.observe("wave-1", v)
	}
	require.Equal(t, []string{F}, r1.out.take())
	require.NoError(t, c1.Close())

	clk.Add(2 * time.Second)
	r2 := restartOn(t, dir, clk, pol, nil)
	for i, v := range []float64{10, 95, 95} { // the replay
		r2.e.Observe(batch("wave-1", ts[i], cpu(v)))
		r2.e.Tick()
		require.Equal(t, "firing", r2.state("wave-1"), "replayed point %d", i)
	}
	require.Empty(t, r2.out.take())
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 95)
	require.Empty(t, r2.out.take(), "the episode goes on: no page within the repeat interval")
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 10)
	require.Equal(t, []string{R}, r2.out.take())
}

// … and a replayed point from before a resolution does not fire the episode again: the
// log keeps the resolution as a tombstone for a while, with the point it rested on.
func TestReplayBeforeResolutionDoesNotPage(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	pol := basePolicy + "    repeat_interval: 1h\n"
	c1 := openCoord(t, dir)
	r1 := newRigOn(t, c1, clk, pol, nil)
	r1.observe("wave-1", 95)
	clk.Add(10 * time.Second)
	r1.observe("wave-1", 10)
	require.Equal(t, []string{F, R}, r1.out.take())
	require.NoError(t, c1.Close())

	clk.Add(time.Second)
	r2 := restartOn(t, dir, clk, pol, nil)
	r2.e.Observe(batch("wave-1", t0, cpu(95))) // replayed
	r2.e.Tick()
	r2.e.Observe(batch("wave-1", t0.Add(10*time.Second), cpu(10)))
	r2.e.Tick()
	require.Empty(t, r2.out.take())
	clk.Add(10 * time.Second)
	r2.observe("wave-1", 95) // a real new violation still pages
	require.Equal(t, []string{F}, r2.out.take())
}

// The tombstones go after ResolvedRetention.
func TestTombstonesAreCollected(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	r.observe("wave-1", 95)
	r.clk.Add(10 * time.Second)
	r.observe("wave-1", 10)
	require.Equal(t, []string{F, R}, r.out.take())
	entries, err := r.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.True(t, entries[0].ResolveSent)
	r.clk.Add(16 * time.Minute)
	_, err = r.e.Restore(context.Background())
	require.NoError(t, err)
	entries, err = r.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Empty(t, entries)
}

// A resolved notice whose delivery failed stays in the log as resolving and is sent
// again by the sweep once its lease ran out.
func TestFailedResolutionIsResent(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	r.observe("wave-1", 95)
	require.Equal(t, []string{F}, r.out.take())
	r.clk.Add(10 * time.Second)
	r.e.Observe(batch("wave-1", r.clk.Now(), cpu(10)))
	r.e.Tick()
	r.e.Sync()
	r.out.mu.Lock()
	failed := r.out.msgs
	r.out.msgs = nil
	r.out.mu.Unlock()
	require.Len(t, failed, 1)
	for _, m := range failed {
		r.e.Delivered(m, context.DeadlineExceeded)
	}
	r.clk.Add(3 * time.Minute)
	_, err := r.e.Restore(context.Background())
	require.NoError(t, err)
	r.e.Sync()
	r.e.Tick()
	require.Equal(t, []string{R}, r.out.take())
}

// A page or a resolved notice claimed by a process that crashed before delivering it (its
// claim waits in its group when it dies) is taken over by the next owner at once when the
// consumer group no longer lists that process, instead of after the claim's lease
// (minutes): a kill -9 between claim and delivery must not hold a nodata page back. While
// the group still lists the claimer, or was last heard before the claim, the lease
// stands: the claimer may yet deliver.
func TestClaimOfAGoneProcessIsTakenOver(t *testing.T) {
	pol := basePolicy + "    repeat_interval: 1h\n"
	wait := func(o *EngineOptions) { o.GroupWait = 30 * time.Second }
	cases := []struct {
		name      string
		live      []string // the group's processes as the next owner heard them
		heardLate bool     // heard after the claim (else at the claim's moment)
		want      []string
	}{
		{"claimer gone", []string{"b"}, true, []string{F}},
		{"claimer still in the group", []string{"a", "b"}, true, nil},
		{"membership older than the claim", []string{"b"}, false, nil},
	}
	for _, tc := range cases {
		t.Run("page/"+tc.name, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			require.Empty(t, claimThenCrash(t, dir, clk, pol, wait, 95), "the page waits out group_wait when the process dies")
			r2 := restartOn(t, dir, clk, pol, nil)
			if tc.heardLate {
				clk.Add(5 * time.Second)
			}
			r2.e.SetMembers("b", tc.live)
			r2.observe("wave-1", 95)
			require.Equal(t, tc.want, r2.out.take())
		})
		if tc.name == "claimer still in the group" {
			t.Run("page/claimer leaves after the adoption", func(t *testing.T) {
				dir, clk := t.TempDir(), &clock{t: t0}
				claimThenCrash(t, dir, clk, pol, wait, 95)
				r2 := restartOn(t, dir, clk, pol, nil)
				clk.Add(5 * time.Second)
				r2.e.SetMembers("b", tc.live)
				r2.observe("wave-1", 95)
				require.Empty(t, r2.out.take(), "adopted: the claimer may deliver")
				clk.Add(10 * time.Second) // the group notices the crash
				r2.e.SetMembers("b", []string{"b"})
				r2.observe("wave-1", 95)
				require.Equal(t, []string{F}, r2.out.take(), "the hold ends with its claimer")
			})
		}
		t.Run("resolution/"+tc.name, func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			// Paged once group_wait passed, then resolved: the notice waits out
			// group_wait when the process dies.
			require.Equal(t, []string{F}, claimThenCrash(t, dir, clk, pol, wait, 95, 95, 10))
			r2 := restartOn(t, dir, clk, pol, nil)
			if tc.heardLate {
				clk.Add(5 * time.Second)
			}
			r2.e.SetMembers("b", tc.live)
			_, err := r2.e.Restore(context.Background()) // a gain of partitions reloads the log
			require.NoError(t, err)
			r2.e.Sync()
			r2.e.Tick()
			r2.e.Sync()
			want := []string(nil)
			if tc.want != nil {
				want = []string{R}
			}
			require.Equal(t, want, r2.out.take())
		})
	}
}

// claimThenCrash runs process "a" (the only member of its group) on the log in dir: it
// observes wave-1's values 30 s apart after the first and 10 s after the second, then
// dies without stopping (its coordinator closed). It returns what a sent meanwhile.
func claimThenCrash(t *testing.T, dir string, clk *clock, pol string, mod func(*EngineOptions), values ...float64) []string {
	t.Helper()
	c := openCoord(t, dir)
	r := newRigOn(t, c, clk, pol, mod)
	r.e.SetMembers("a", []string{"a"})
	var sent []string
	for i, v := range values {
		switch i {
		case 0:
		case 1:
			clk.Add(30 * time.Second)
		default:
			clk.Add(10 * time.Second)
		}
		r.observe("wave-1", v)
		sent = append(sent, r.out.take()...)
	}
	require.NoError(t, c.Close())
	return sent
}

// A page claimed by a process that left the consumer group to stop, and still delivers
// it (it stands in DrainingGroup), is not taken over: it was paged twice at every
// graceful stop beside a slow or retrying channel (outside trial: a 3 s webhook and a
// SIGTERM 1 s after the page), however long past the claim's lease (a receiver 45 s
// behind). Once its drain ends (the mark gone), the claim is taken over as a crashed
// process's is.
func TestClaimOfADrainingProcessIsNotTakenOver(t *testing.T) {
	pol := basePolicy + "    repeat_interval: 1h\n"
	wait := func(o *EngineOptions) { o.GroupWait = 30 * time.Second }
	dir, clk := t.TempDir(), &clock{t: t0}
	require.Empty(t, claimThenCrash(t, dir, clk, pol, wait, 95))
	r2 := restartOn(t, dir, clk, pol, nil)
	clk.Add(5 * time.Second)
	draining := []string{"a"}
	o := &ownership{eng: r2.e, log: quiet, parts: map[string]int{},
		pos:      &fakePositioner{p: bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true, Process: "b", Processes: []string{"b"}}},
		draining: func(context.Context) ([]string, error) { return draining, nil }}
	o.poll(context.Background())
	require.True(t, r2.e.claimerAlive("a"), "the poll lists those draining among the live")
	r2.observe("wave-1", 95)
	require.Empty(t, r2.out.take(), "a is delivering its claim: no second page")
	clk.Add(10 * time.Minute) // far past the claim's lease: a slow receiver's backlog
	o.poll(context.Background())
	r2.observe("wave-1", 95)
	require.Empty(t, r2.out.take(), "a still drains: its claim is still on its way")

	draining = nil // a's drain ended (delivered, or handed back, or it died)
	clk.Add(5 * time.Second)
	o.poll(context.Background())
	require.False(t, r2.e.claimerAlive("a"))
	r2.observe("wave-1", 95)
	require.Equal(t, []string{F}, r2.out.take(), "the claim of a process neither in the group nor draining is taken over")
}

// A policy removed (or renamed) while its alert fires: the restarted process has no
// policy to evaluate it by, and the log held the alert firing for good, the receiver's
// incident open, and nothing said so (an outside trial). The entry records the channels
// it paged, so the process reading its node resolves it there, once, saying why; an
// entry written before channels were recorded is said, once, with what to do.
func TestFiringAlertOfARemovedPolicyIsResolved(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "channels recorded", true: "logged before channels were recorded"}[legacy], func(t *testing.T) {
			dir, clk := t.TempDir(), &clock{t: t0}
			c1 := openCoord(t, dir)
			r1 := newRigOn(t, c1, clk, basePolicy, nil)
			r1.observe("wave-1", 95)
			require.Equal(t, []string{F}, r1.out.take())
			if legacy {
				log := &CoordLog{C: c1}
				entries, err := log.Load(context.Background())
				require.NoError(t, err)
				require.Len(t, entries, 1)
				le, ver, err := log.Get(context.Background(), entries[0].Fingerprint)
				require.NoError(t, err)
				require.Equal(t, []string{"c"}, le.Channels)
				le.Channels = nil
				require.NoError(t, log.Put(context.Background(), le, ver))
			}
			require.NoError(t, c1.Close())

			var logs testenv.SyncBuffer
			renamed := strings.Replace(basePolicy, "name: cpu", "name: cpu-high", 1)
			r2 := restartOn(t, dir, clk, renamed, func(o *EngineOptions) {
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			require.Equal(t, 1, r2.e.Orphans())
			var resolved []string
			for range 3 {
				clk.Add(time.Minute)
				r2.observe("wave-1", 10)
				for _, m := range r2.out.messages() {
					for _, a := range m.Alerts {
						resolved = append(resolved, a.Status+" "+a.Labels["alertname"]+": "+a.Annotations["summary"])
					}
				}
				_, err := r2.e.Restore(context.Background()) // the periodic reload says it no more
				require.NoError(t, err)
			}
			require.Equal(t, 1, strings.Count(logs.String(), "firing under a policy this alarm does not have"), logs.String())
			require.Contains(t, logs.String(), "policy=cpu ")
			if legacy {
				require.Contains(t, logs.String(), "put the policy back under its name")
				require.Empty(t, resolved, "no channels to tell")
				require.Equal(t, 1, r2.e.Orphans())
				return
			}
			require.Contains(t, logs.String(), "it is resolved, to the channels it paged, when its node next reports")
			require.Equal(t, []string{"resolved cpu: wave-1: resolved without evaluation: policy cpu is no longer in the alarm's policies (removed or renamed while it fired)"}, resolved)
			require.Zero(t, r2.e.Orphans(), "resolved: no longer firing in the log")

			// The policy back under its name: the episode ended; a new one pages anew.
			require.NoError(t, r2.c.Close())
			r3 := restartOn(t, dir, clk, basePolicy, nil)
			r3.observe("wave-1", 10)
			require.Empty(t, r3.out.take())
			clk.Add(time.Minute)
			r3.observe("wave-1", 95)
			require.Equal(t, []string{F}, r3.out.take())
		})
	}
}

// TestRemovedPolicysResolutionKeepsItsGrouping: the stand-in of a gone policy groups
// its resolution as the page was grouped: it went out under the default grouping, with
// another group key than the page's (`cpu-hot/P2` for `cpu-high/P2:{…node="n01"}`), and
// several nodes' resolutions bundled in one message (an outside trial).
func TestRemovedPolicysResolutionKeepsItsGrouping(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	grouped := basePolicy + "    group_by: [\"...\"]\n"
	c1 := openCoord(t, dir)
	r1 := newRigOn(t, c1, clk, grouped, nil)
	r1.observe("wave-1", 95)
	r1.observe("wave-2", 95)
	pages := map[string]string{} // node → group key
	for _, m := range r1.out.messages() {
		require.Len(t, m.Alerts, 1, "one alert a message when grouped by every label")
		pages[m.Alerts[0].Labels["node"]] = m.GroupKey
	}
	require.Len(t, pages, 2)
	require.NoError(t, c1.Close())

	r2 := restartOn(t, dir, clk, strings.Replace(grouped, "name: cpu", "name: cpu-hot", 1), nil)
	clk.Add(time.Minute)
	r2.observe("wave-1", 10)
	r2.observe("wave-2", 10)
	resolved := map[string]string{}
	for _, m := range r2.out.messages() {
		require.Len(t, m.Alerts, 1, "one alert a message, as its page: %+v", m)
		require.Equal(t, "resolved", m.Alerts[0].Status)
		resolved[m.Alerts[0].Labels["node"]] = m.GroupKey
	}
	require.Equal(t, pages, resolved, "each resolution under its page's group key")
}

// TestRemovedPolicysGoneChannelIsNotOwed: a policy and one of its channels removed
// together while its alert fires: the stand-in tells the channel that is left, and the
// entry closes (a tombstone). The resolution owed to the gone channel was queued nowhere,
// and the entry owed it for good, never removed (an outside trial).
func TestRemovedPolicysGoneChannelIsNotOwed(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	twoChannels := strings.Replace(basePolicy, "channels: [c]", "channels: [c, gone]", 1)
	c1 := openCoord(t, dir)
	r1 := newRigOn(t, c1, clk, twoChannels, nil)
	r1.observe("wave-1", 95)
	sent := map[string]bool{}
	for _, m := range r1.out.messages() {
		sent[m.Receiver] = true
	}
	require.Equal(t, map[string]bool{"c": true, "gone": true}, sent)
	require.NoError(t, c1.Close())

	renamed := strings.Replace(basePolicy, "name: cpu", "name: cpu-high", 1)
	r2 := restartOn(t, dir, clk, renamed, func(o *EngineOptions) { o.Channels = []string{"c"} })
	clk.Add(time.Minute)
	r2.observe("wave-1", 10)
	var to []string
	for _, m := range r2.out.messages() {
		for _, a := range m.Alerts {
			to = append(to, m.Receiver+" "+a.Status)
		}
	}
	require.Equal(t, []string{"c resolved"}, to)
	entries, err := (&CoordLog{C: r2.c}).Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.True(t, entries[0].ResolveSent, "the entry closed: %+v", entries[0])
	require.Empty(t, entries[0].ResolveOwed)
}

// A process that evaluated a series' point before it read the log again (the first batch
// of a partition it just took over comes before the ownership's answer, and so before
// Restore) decides the restored alert on that point at Restore: the resolution ends where
// the point ended it, not a batch later (an outside trial: an endsAt one sample late).
func TestRestoreDecidesOnThePointAlreadyEvaluated(t *testing.T) {
	dir, clk := t.TempDir(), &clock{t: t0}
	r2 := restartOn(t, dir, clk, basePolicy, nil) // the next owner, started before the page
	r1 := newRigOn(t, r2.c, clk, basePolicy, nil)
	r1.observe("wave-1", 95)
	require.Equal(t, []string{F}, r1.out.take())

	clk.Add(10 * time.Second)
	r2.observe("wave-1", 10) // its first point of the node: no alert here yet
	require.Empty(t, r2.out.take())
	_, err := r2.e.Restore(context.Background()) // the log read again once the partition is its own
	require.NoError(t, err)
	r2.e.Tick()
	r2.e.Sync()
	require.Equal(t, []string{R}, r2.out.take(), "resolved at once")
	for _, a := range r2.e.Alerts() {
		require.Equal(t, t0.Add(10*time.Second), a.ResolvedAt.UTC(), "where its point ended it")
	}
}

// A channel added to a firing alert's policy (a restart with the new file) gets the
// page at once, alone: the channels that had it do not get it again. It got it only at
// the repeat interval (Alertmanager at its next refresh), and its resolution went to
// the channels paged before (an outside trial).
func TestChannelAddedToAFiringAlertIsPaged(t *testing.T) {
	for _, capped := range []bool{false, true} {
		t.Run(map[bool]string{false: "repeat", true: "max_notifications"}[capped], func(t *testing.T) {
			pol := twoChannels
			if capped {
				pol += "    max_notifications: 1\n"
			}
			dir, clk := t.TempDir(), &clock{t: t0}
			r1, out1 := channelRig(t, dir, clk, strings.Replace(pol, "channels: [mail, hook]", "channels: [mail]", 1), nil, nil)
			r1.observe("wave-1", 95)
			require.Equal(t, []string{"mail: firing wave-1"}, out1.take())
			require.NoError(t, r1.c.Close())

			r2, out2 := channelRig(t, dir, clk, pol, nil, nil) // restarted with hook added
			clk.Add(10 * time.Second)
			r2.observe("wave-1", 95)
			require.Equal(t, []string{"hook: firing wave-1"}, out2.take(), "the new channel, at once")
			clk.Add(10 * time.Second)
			r2.observe("wave-1", 95)
			require.Empty(t, out2.take(), "once")
			clk.Add(10 * time.Second)
			r2.observe("wave-1", 10)
			require.ElementsMatch(t, []string{"mail: resolved wave-1", "hook: resolved wave-1"}, out2.take())
		})
	}
}
