package alarm

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/testenv"
)

// fakePositioner gives the answer the test set.
type fakePositioner struct{ p bus.Position }

func (f *fakePositioner) Position(context.Context) (bus.Position, error) { return f.p, nil }

// A partition moved here by a rebalance is fetched before the bus's next answer says so;
// after a crash of its previous owner it starts with a backlog as old as the session
// timeout. Those old points must neither page nodata for live nodes nor resolve firing
// alerts as stale: the engine holds both from the first such message until the bus says
// the process caught up (issue 18, item 9: kill -9 of one of two alarms).
func TestStrayPartitionHoldsNodataAndStaleness(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	pos := &fakePositioner{p: bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}}
	o := &ownership{pos: pos, eng: r.e, log: quiet, parts: map[string]int{}}
	ctx := context.Background()
	handle := func(node string, part int, at time.Time, v float64) {
		o.seen(node, part)
		r.e.Observe(batch(node, at, cpu(v)))
	}
	o.poll(ctx)
	handle("wave-1", 0, r.clk.Now(), 10)
	r.e.Tick()

	// Partition 1 arrives with a minute of backlog: wave-2 healthy, wave-3 violating.
	backlog := r.clk.Now().Add(-time.Minute)
	handle("wave-2", 1, backlog, 10)
	handle("wave-3", 1, backlog, 95)
	r.e.Tick()
	require.Equal(t, []string{"firing wave-3"}, r.out.take(), "no nodata for wave-2, no stale resolution of wave-3")

	// The bus's answer now has partition 1, newly assigned: not caught up yet.
	pos.p = bus.Position{Known: true, Partitions: []int{0, 1}}
	o.poll(ctx)
	for at := backlog.Add(10 * time.Second); !at.After(r.clk.Now()); at = at.Add(10 * time.Second) {
		handle("wave-2", 1, at, 10)
		handle("wave-3", 1, at, 95)
	}
	// Caught up, says the bus, and partition 2 is here too; while the gain reloads the
	// notification log, partition 3's first message (a stale answer's miss) is handled:
	// newer than the answer, it keeps the engine held.
	pos.p = bus.Position{Known: true, Partitions: []int{0, 1, 2}, CaughtUp: true}
	o.onGain = func(context.Context, []int) { handle("wave-9", 3, r.clk.Now().Add(-time.Minute), 10) }
	o.poll(ctx)
	o.onGain = nil
	r.clk.Add(11 * time.Second) // past the grace of one interval after catching up
	r.e.Tick()
	require.Empty(t, r.out.take(), "wave-9's old point is held until the next answer")
	o.poll(ctx) // releases wave-9, caught up
	for range 4 {
		r.clk.Add(10 * time.Second)
		handle("wave-1", 0, r.clk.Now(), 10)
		handle("wave-3", 1, r.clk.Now(), 95)
		r.e.Tick()
	}
	require.Equal(t, []string{"firing wave-2"}, r.out.take(),
		"once caught up, only wave-2, silent for 40 s of its own time, pages nodata; wave-9 is not ours")
	require.Equal(t, "firing", r.state("wave-3"))
}

// hangingPositioner answers at once until hang is set; then each call waits for an
// answer sent on answers (a broker that stopped answering, then came back).
type hangingPositioner struct {
	p       bus.Position
	hang    atomic.Bool
	answers chan bus.Position
}

func (h *hangingPositioner) Position(ctx context.Context) (bus.Position, error) {
	if !h.hang.Load() {
		return h.p, nil
	}
	select {
	case p := <-h.answers:
		return p, nil
	case <-ctx.Done():
		return bus.Position{}, ctx.Err()
	}
}

// A broker that stops answering stalls the stream at once, but fails the bus's position
// question only at its timeout: with batches every second, the nodata windows (3 s) and
// staleness (5 s) ran out first, every node paged agent-dead and the firing cpu alert
// resolved as stale (t13: "holding nodata" came 10 s into the pause). The stream's stall
// holds them as soon as no message came for a second while the position is unknown, until
// an answer asked after that says the process caught up.
func TestBusStallHoldsNodataAtOnce(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	pos := &hangingPositioner{p: bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}, answers: make(chan bus.Position)}
	o := &ownership{pos: pos, eng: r.e, log: quiet, parts: map[string]int{}, now: r.clk.Now}
	ctx := context.Background()
	handle := secondly(r, o)
	o.poll(ctx)
	second := func(at time.Time) {
		handle("wave-1", at, 95)
		handle("wave-2", at, 10)
	}
	liveSeconds(r, 5, second)
	require.Equal(t, []string{"firing wave-1"}, r.out.take())

	// The broker stops: no more messages, and the position question hangs.
	pos.hang.Store(true)
	stopped := r.clk.Now()
	polled := make(chan struct{})
	go func() { o.poll(ctx); close(polled) }()
	require.Eventually(t, func() bool { o.mu.Lock(); defer o.mu.Unlock(); return !o.pollStart.IsZero() }, time.Second, time.Millisecond)
	for range 40 {
		r.clk.Add(250 * time.Millisecond)
		o.watch(time.Second)
		r.e.Tick()
	}
	require.Empty(t, r.out.take(), "no nodata page, no stale resolution during the stall")
	require.Equal(t, "firing", r.state("wave-1"))

	// The question asked before the stall was seen gets its answer: still held.
	pos.answers <- bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}
	<-polled
	r.clk.Add(2 * time.Second)
	r.e.Tick()
	require.Empty(t, r.out.take())
	// The broker is back: its backlog, with the points' own times, then an answer asked now.
	for at := stopped; at.Before(r.clk.Now()); at = at.Add(time.Second) {
		second(at)
	}
	pos.hang.Store(false)
	o.poll(ctx)
	for range 5 {
		second(r.clk.Now())
		r.e.Tick()
		r.clk.Add(time.Second)
	}
	require.Empty(t, r.out.take())
	// And a node that truly falls silent still pages.
	for range 6 {
		handle("wave-1", r.clk.Now(), 95)
		o.watch(time.Second)
		r.e.Tick()
		r.clk.Add(time.Second)
	}
	require.Equal(t, []string{"firing wave-2"}, r.out.take())
}

// A process whose membership lapsed (paused or cut off past the group's session timeout)
// and that rejoins with the same partitions reloads the notification log as for a gain:
// another process held them meanwhile, and what it decided (a page, here) is in the log,
// not in this process's copy. Before, the rejoined process knew nothing of it until the
// log's periodic reload, a minute on: the alert was listed nowhere, and its resolution
// came a minute late (t10).
func TestRejoinWithTheSamePartitionsReloadsTheLog(t *testing.T) {
	for _, how := range []string{"unknown", "error", "pause"} {
		t.Run(how, func(t *testing.T) {
			c := openCoord(t, t.TempDir())
			t.Cleanup(func() { c.Close() })
			clk := &clock{t: t0}
			pol := basePolicy + "    repeat_interval: 1h\n"
			rA, rB := newRigOn(t, c, clk, pol, nil), newRigOn(t, c, clk, pol, nil)
			pos := &fakePositioner{p: bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}}
			errPos := &failingPositioner{}
			oB := &ownership{pos: pos, eng: rB.e, log: quiet, parts: map[string]int{},
				onGain: func(ctx context.Context, _ []int) { _, err := rB.e.Restore(ctx); require.NoError(t, err) }}
			ctx := context.Background()
			oB.poll(ctx)

			// B is away; the group gives partition 0 to A, which pages wave-5.
			switch how {
			case "unknown":
				pos.p = bus.Position{}
				oB.poll(ctx)
			case "error":
				oB.pos = errPos
				oB.poll(ctx)
				oB.pos = pos
			case "pause":
				oB.lapse() // the timer ran late: no answer failed, the process stood still
			}
			rA.observe("wave-5", 95)
			require.Equal(t, []string{"firing wave-5"}, rA.out.take())
			clk.Add(10 * time.Second)

			// B rejoins with partition 0 again (A gave it back, without a resolution).
			pos.p = bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}
			oB.poll(ctx)
			oB.seen("wave-5", 0)
			rB.observe("wave-5", 10)
			require.Equal(t, []string{"resolved wave-5"}, rB.out.take(), "B resolves the alert A paged")
		})
	}
}

// failingPositioner fails every question, as a broker out of reach does.
type failingPositioner struct{}

func (failingPositioner) Position(context.Context) (bus.Position, error) {
	return bus.Position{}, errors.New("describe group: i/o timeout")
}

// A rejoined process that read the node's points before the reload holds the alert
// pending (its for running anew): the log's firing episode, another process's, takes
// its place, and its resolution is sent (t10: the alert pending here, the log's firing
// episode was never resolved until the log's periodic reload).
func TestReloadContinuesAnAlertPendingHere(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	clk := &clock{t: t0}
	pol := basePolicy + "    for: 30s\n    repeat_interval: 1h\n"
	rA, rB := newRigOn(t, c, clk, pol, nil), newRigOn(t, c, clk, pol, nil)
	rA.observe("wave-5", 95)
	clk.Add(30 * time.Second)
	rA.observe("wave-5", 95)
	require.Equal(t, []string{"firing wave-5"}, rA.out.take())

	clk.Add(10 * time.Second)
	rB.observe("wave-5", 95) // read before the reload: pending here
	require.Equal(t, "pending", rB.state("wave-5"))
	_, err := rB.e.Restore(context.Background())
	require.NoError(t, err)
	clk.Add(10 * time.Second)
	rB.observe("wave-5", 95)
	require.Equal(t, "firing", rB.state("wave-5"))
	require.Empty(t, rB.out.take(), "A's page is not repeated")
	clk.Add(10 * time.Second)
	rB.observe("wave-5", 10)
	require.Equal(t, []string{"resolved wave-5"}, rB.out.take())
}

// A new process's first answers fail or do not know until it joins the group: that is
// no lapse, and its log does not say "after a lapse" when the first known answer comes
// (an outside trial read it on a brand-new alarm's first start). A lapse after that is
// said.
func TestFirstAnswerIsNoLapse(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	var logs testenv.SyncBuffer
	pos := &fakePositioner{}
	o := &ownership{pos: pos, eng: r.e, log: slog.New(slog.NewTextHandler(&logs, nil)), parts: map[string]int{}}
	ctx := context.Background()
	o.poll(ctx) // not in the group yet
	o.pos = failingPositioner{}
	o.poll(ctx)
	o.pos = pos
	pos.p = bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}
	o.poll(ctx)
	require.NotContains(t, logs.String(), "after a lapse")

	pos.p = bus.Position{}
	o.poll(ctx)
	pos.p = bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}
	o.poll(ctx)
	require.Contains(t, logs.String(), "the bus answers after a lapse")
}

// /healthz's taking_over: true from the start until the partitions of the bus's first
// answer were taken over (their alerts restored), and only then are the nodes of its
// partitions its own (owns: the restored alerts GET /v1/alerts lists); an alarm without
// a positioning bus holds everything at once.
func TestTakingOverUntilTheFirstAnswerIsApplied(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	pos := &fakePositioner{}
	gains := 0
	var o *ownership
	o = &ownership{pos: pos, eng: r.e, log: quiet, parts: map[string]int{}, onGain: func(context.Context, []int) {
		gains++
		require.False(t, o.tookOverOnce(), "while the gained partitions are restored")
	}}
	o.learn(map[string]int{"n1": 1, "n3": 3}) // the node book's
	require.False(t, o.tookOverOnce(), "before any answer")
	require.False(t, o.owns("n1"), "before any answer: GET /v1/alerts lists none of n1's restored alerts yet")
	o.poll(context.Background()) // not in the group yet
	require.False(t, o.tookOverOnce(), "after an answer that does not know")
	pos.p = bus.Position{Known: true, Partitions: []int{0, 1}, CaughtUp: true}
	o.poll(context.Background())
	require.Equal(t, 1, gains)
	require.True(t, o.tookOverOnce(), "once the first partitions were taken over")
	require.True(t, o.owns("n1"), "on partition 1, held")
	require.False(t, o.owns("n3"), "on partition 3, another process's")
	require.False(t, o.owns("n9"), "a node of no known partition")
	require.True(t, (&ownership{}).tookOverOnce(), "no positioning bus")
	require.True(t, (&ownership{}).owns("n9"), "no positioning bus: every node")
}

// TestIdleMemberHoldsQuietly: a process whose partitions all went to others expects no
// message, so the quiet of the group's next rebalance (the position question slow, no
// message for a while) holds nodata without the warning that a stalled bus gets (an idle
// member warned "the bus delivers nothing" at every rebalance); one owning a partition
// still warns, and says when the bus answers again.
func TestIdleMemberHoldsQuietly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owned []int
		warn  bool
	}{
		{"owning a partition", []int{0}, true},
		{"owning none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, basePolicy, nil)
			var logged bytes.Buffer
			pos := &hangingPositioner{p: bus.Position{Known: true, Partitions: tc.owned, CaughtUp: true}, answers: make(chan bus.Position)}
			o := &ownership{pos: pos, eng: r.e, log: slog.New(slog.NewTextHandler(&logged, nil)), parts: map[string]int{}, now: r.clk.Now}
			ctx := context.Background()
			o.seen("wave-1", 0) // a message from before the partitions moved
			o.poll(ctx)
			pos.hang.Store(true)
			polled := make(chan struct{})
			go func() { o.poll(ctx); close(polled) }()
			require.Eventually(t, func() bool { o.mu.Lock(); defer o.mu.Unlock(); return !o.pollStart.IsZero() }, time.Second, time.Millisecond)
			for range 12 {
				r.clk.Add(250 * time.Millisecond)
				o.watch(time.Second)
			}
			o.mu.Lock()
			held := o.held
			o.mu.Unlock()
			require.True(t, held, "nodata held while the position is unknown")
			pos.answers <- bus.Position{Known: true, Partitions: tc.owned, CaughtUp: true}
			<-polled
			pos.hang.Store(false)
			r.clk.Add(time.Second)
			o.poll(ctx)
			require.Equal(t, tc.warn, strings.Contains(logged.String(), "level=WARN msg=\"the bus delivers nothing"), "the hold's warning:\n%s", logged.String())
			require.Equal(t, tc.warn, strings.Contains(logged.String(), "the bus answers again"), "the end of the hold said:\n%s", logged.String())
		})
	}
}

// A paused process (its timer ran late) resumes with its partitions' backlog unread, and
// the bus's first answer after the pause can say it caught up: it compares the group's
// commits with the partitions' ends at the question before, asked before the pause. A
// CI run's reader came back through an i/o timeout and read nothing for seven seconds
// while that answer held, and seven live nodes paged nodata. The engine now stays held
// until an answer asked after that one says the process caught up.
func TestPauseHoldsNodataUntilASecondAnswer(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	pos := &fakePositioner{p: bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true}}
	o := &ownership{pos: pos, eng: r.e, log: quiet, parts: map[string]int{}, now: r.clk.Now}
	ctx := context.Background()
	handle := secondly(r, o)
	second := func(at time.Time) {
		handle("wave-1", at, 10)
		handle("wave-2", at, 10)
	}
	o.poll(ctx)
	liveSeconds(r, 5, second)
	require.Empty(t, r.out.take())

	// Paused for six seconds; the timer runs late, then the bus's first answer.
	paused := r.clk.Now()
	r.clk.Add(6 * time.Second)
	r.e.Resumed()
	o.lapse()
	o.poll(ctx)
	for range 5 { // the reader reconnects: nothing read yet
		r.e.Tick()
		r.clk.Add(time.Second)
	}
	require.Empty(t, r.out.take(), "no nodata while the pause's backlog waits unread")

	// The backlog is read, then an answer asked after the first says caught up.
	for at := paused; at.Before(r.clk.Now()); at = at.Add(time.Second) {
		second(at)
	}
	o.poll(ctx)
	liveSeconds(r, 5, second)
	require.Empty(t, r.out.take())
	// A node that truly falls silent still pages.
	liveSeconds(r, 6, func(at time.Time) { handle("wave-1", at, 10) })
	require.Equal(t, []string{"firing wave-2"}, r.out.take())
}

// secondly is a handler of one node's point at a time on partition 0, in batches of a
// second, through o and r's engine.
func secondly(r *rig, o *ownership) func(node string, at time.Time, v float64) {
	return func(node string, at time.Time, v float64) {
		o.seen(node, 0)
		b := batch(node, at, cpu(v))
		b.IntervalS = 1
		r.e.Observe(b)
	}
}

// liveSeconds runs n seconds of r's clock, each with every's points at its start and a
// tick of the engine.
func liveSeconds(r *rig, n int, every func(at time.Time)) {
	for range n {
		every(r.clk.Now())
		r.e.Tick()
		r.clk.Add(time.Second)
	}
}
