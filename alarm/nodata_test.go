package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
)

// nodataPolicy pages a node silent for 3 of its intervals (the alarm tests' agent-dead).
const nodataPolicy = `  - name: agent-dead
    nodata: 3
    severity: P0
    channels: [c]
`

// A consumption gap (broker restart, rebalance) is not silence of the nodes: nothing
// fires while the bus is behind, a backlog replayed afterwards keeps its own time, and
// only a node that really stopped pages, one interval after the stream caught up
// (issue 18, item 6).
func TestNodataWaitsForTheStream(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	start := r.clk.Now()
	send := func(node string, at time.Time, v float64) { r.e.Observe(batch(node, at, cpu(v))) }
	for i := range 3 { // both nodes healthy, wave-2 violating cpu
		send("wave-1", start.Add(time.Duration(i)*10*time.Second), 10)
		send("wave-2", start.Add(time.Duration(i)*10*time.Second), 95)
		r.clk.Add(10 * time.Second)
		r.e.Tick()
	}
	require.Equal(t, []string{"firing wave-2"}, r.out.take())

	// The consumer falls behind for five minutes; the agents keep publishing.
	r.e.SetCaughtUp(false)
	gapStart := r.clk.Now()
	for range 300 {
		r.clk.Add(time.Second)
		r.e.Tick()
	}
	require.Empty(t, r.out.take(), "no nodata and no stale resolution while the bus is behind")
	require.Equal(t, "firing", r.state("wave-2"))

	// The backlog replays with the points' own times; wave-1 died two minutes into the gap.
	for at := gapStart; !at.After(r.clk.Now()); at = at.Add(10 * time.Second) {
		if at.Before(gapStart.Add(2 * time.Minute)) {
			send("wave-1", at, 10)
		}
		send("wave-2", at, 95)
	}
	r.e.SetCaughtUp(true)
	r.e.Tick()
	require.Empty(t, r.out.take(), "a grace of one interval after catching up")
	r.clk.Add(10 * time.Second)
	send("wave-2", r.clk.Now(), 95)
	r.e.Tick()
	msgs := r.out.messages()
	require.Len(t, msgs, 1, "wave-1, silent for three minutes of its own time, pages; wave-2 does not")
	require.Equal(t, "wave-1", msgs[0].Alerts[0].Labels["node"])
	require.Equal(t, "nodata", msgs[0].Alerts[0].Labels["reason"])
	require.Equal(t, "firing", r.state("wave-2"))
}

// Nodes whose partitions moved to another alarm process are forgotten without a page:
// neither nodata nor a resolution (the other process continues their alerts from the
// log), and the log keeps their entries (issue 18, item 6).
func TestReleaseForgetsMovedNodes(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	r.observe("wave-1", 95)
	r.observe("wave-2", 10)
	require.Equal(t, []string{F}, r.out.take())
	r.e.Release([]string{"wave-1"})
	require.Equal(t, "inactive", r.state("wave-1"))
	for range 12 { // two minutes; only wave-2 is still read here
		r.clk.Add(10 * time.Second)
		r.observe("wave-2", 10)
	}
	require.Empty(t, r.out.take())
	entries, err := r.e.o.Log.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "wave-1", entries[0].Labels["node"])
}

// A paused process (its timer late: stolen VM time, a starved machine) does not page the
// nodes whose points came during the pause and wait to be read: Resumed holds nodata for
// one interval, after which a node that is truly silent pages.
func TestNodataWaitsAfterAPause(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	send := func(node string) { r.e.Observe(batch(node, r.clk.Now(), cpu(10))) }
	for range 3 {
		send("wave-1")
		send("wave-2")
		r.clk.Add(10 * time.Second)
		r.e.Tick()
	}
	require.Empty(t, r.out.take())

	// Paused for a minute: the clock jumps, nothing was read meanwhile.
	r.clk.Add(time.Minute)
	r.e.Resumed()
	r.e.Tick()
	require.Empty(t, r.out.take(), "no nodata on the first tick after a pause")

	// The stream is read: wave-2's points of the pause arrive, wave-1 has none.
	for at := r.clk.Now().Add(-time.Minute); !at.After(r.clk.Now()); at = at.Add(10 * time.Second) {
		r.e.Observe(batch("wave-2", at, cpu(10)))
	}
	r.clk.Add(10 * time.Second)
	send("wave-2")
	r.e.Tick()
	msgs := r.out.messages()
	require.Len(t, msgs, 1, "one interval after the pause, the silent node pages")
	require.Equal(t, "wave-1", msgs[0].Alerts[0].Labels["node"])
	require.Equal(t, "nodata", msgs[0].Alerts[0].Labels["reason"])
}

// A nodata alert continued from the log after its node's first points back were read here
// (a kill -9: the new owner replays the partition's backlog before the bus names the
// partition and the log is reloaded) resolves with how long the node was silent, up to
// its first point back, not up to the point read after the reload (t7: a 10 s silence
// read 21 s).
func TestNodataSilenceAfterATakeover(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	clk := &clock{t: t0}
	pol := basePolicy + nodataPolicy + `    annotations: {summary: "{{ .Node }} sent nothing for {{ .Value }}s"}` + "\n"
	next := newRigOn(t, c, clk, pol, nil) // the partition's next owner, started first
	prev := newRigOn(t, c, clk, pol, nil)
	prev.observe("wave-1", 10)
	clk.Add(40 * time.Second) // silent past its window (3 × 10 s)
	prev.e.Tick()
	msgs := prev.out.messages()
	require.Len(t, msgs, 1)
	require.Equal(t, "wave-1 sent nothing for 40s", msgs[0].Alerts[0].Annotations["summary"])
	// prev is killed; the node is back at +50 s. The next owner reads the backlog (+50,
	// +60) before the bus names the partition, then reloads the log, then reads +70.
	clk.Add(30 * time.Second)
	for _, at := range []time.Duration{50, 60} {
		next.e.Observe(batch("wave-1", t0.Add(at*time.Second), cpu(10)))
	}
	next.e.Tick()
	_, err := next.e.Restore(context.Background())
	require.NoError(t, err)
	next.e.Observe(batch("wave-1", t0.Add(70*time.Second), cpu(10)))
	next.e.Tick()
	msgs = next.out.messages()
	require.Len(t, msgs, 1)
	require.Equal(t, notify.StatusResolved, msgs[0].Alerts[0].Status)
	require.Equal(t, "wave-1 sent nothing for 50s", msgs[0].Alerts[0].Annotations["summary"], "silent from +0 to +50")
}

// A node that comes back for a single batch after a nodata page and falls silent again
// pages again: the new episode's evidence is the node's last point, which is the very
// point that resolved the previous one, and is no replay of it. Each claim of the new
// episode was refused as stale (its eval_ts not after the resolution's) and the alert
// dropped and re-fired at every tick without a page, for as long as the node was down.
func TestNodataPagesAgainAfterASingleBatch(t *testing.T) {
	r := newRig(t, basePolicy+nodataPolicy, nil)
	send := func() { r.e.Observe(batch("wave-1", r.clk.Now(), cpu(10))) }
	for range 3 {
		send()
		r.clk.Add(10 * time.Second)
		r.e.Tick()
	}
	for range 5 {
		r.clk.Add(10 * time.Second)
		r.e.Tick()
	}
	require.Equal(t, []string{"firing wave-1"}, r.out.take())
	send() // one batch back
	r.e.Tick()
	require.Equal(t, []string{"resolved wave-1"}, r.out.take())
	for range 10 { // silent again, for 100 s (nodata: 3 intervals of 10 s)
		r.clk.Add(10 * time.Second)
		r.e.Tick()
	}
	require.Equal(t, []string{"firing wave-1"}, r.out.take(), "the second silence pages")
}
