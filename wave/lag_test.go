package wave

import (
	"log/slog"
	"testing"
	"time"

	"github.com/binlake/binlake/wave/cluster"
)

// TestLagTracker: caught up only while nothing was read after the last heartbeat
// acknowledged; otherwise now minus the time of the last batch acknowledged that had
// one.
func TestLagTracker(t *testing.T) {
	now := time.Unix(1_800_000_100, 0)
	l := &lagTracker{}
	if s := l.state(); s.Known() {
		t.Fatalf("a new term's state %+v is known before anything was acknowledged", s)
	}
	l.saw()                   // the connection
	l.saw()                   // a transaction's event
	l.acked(1_800_000_000, 0) // a transaction 100 s old
	if got := cluster.Lag(l.state(), now); got != 100 {
		t.Errorf("after a 100 s old transaction: lag %g, want 100", got)
	}
	hb := l.saw()
	l.acked(1_800_000_099, hb)
	if s := l.state(); !s.CaughtUp || cluster.Lag(s, now) != 0 {
		t.Errorf("after a heartbeat with nothing read since: %+v, lag %g, want caught up, 0", s, cluster.Lag(s, now))
	}
	l.saw() // an event read after the heartbeat, not yet acknowledged
	if s := l.state(); s.CaughtUp || cluster.Lag(s, now) != 1 {
		t.Errorf("an event read after the heartbeat: %+v, lag %g, want 1 s behind (since the heartbeat)", s, cluster.Lag(s, now))
	}
	// A heartbeat acknowledged after something else was read is not caught up.
	l2 := &lagTracker{}
	hb2 := l2.saw()
	l2.saw()
	l2.acked(0, hb2)
	if l2.state().CaughtUp {
		t.Error("a heartbeat followed by an event read: caught up, want not")
	}
}

// TestLagRecordStale: the status record is rewritten when the lag computed from it
// strays lagRecordSlack from the wave's own, not at every change.
func TestLagRecordStale(t *testing.T) {
	now := time.Unix(1_800_000_100, 0)
	l := &lagTracker{}
	if l.stale(now) {
		t.Error("nothing known: stale, want not (nothing to write)")
	}
	l.acked(1_800_000_070, 0)
	if !l.stale(now) {
		t.Error("known and never written: not stale")
	}
	l.wrote(l.state())
	l.acked(1_800_000_071, 0)
	if l.stale(now) {
		t.Error("1 s from the record: stale, want not")
	}
	l.acked(1_800_000_072, 0)
	if !l.stale(now) {
		t.Error("2 s from the record: not stale")
	}
	l.wrote(l.state())
	hb := l.saw()
	l.acked(0, hb)
	if !l.stale(now) {
		t.Error("caught up (28 s from the record's lag): not stale")
	}
}

// TestSnapshotChunkLeavesLag: a snapshot chunk moves no binlog position, so the lag
// after it is what it was before; not now minus the time of the last transaction, which
// on a source idle for an hour would say an hour until the next heartbeat.
func TestSnapshotChunkLeavesLag(t *testing.T) {
	out := make(chan item, 1)
	hourAgo := time.Now().Add(-time.Hour).Unix()
	c := &capture{captureOptions: captureOptions{log: slog.New(slog.DiscardHandler), out: out},
		resume: cluster.Position{File: "bin.000001", Pos: 4, TS: hourAgo}, snap: &snapshotRun{}}
	l := &lagTracker{}
	l.acked(hourAgo, 0) // the last transaction, an hour ago
	hb := l.saw()
	beat := time.Now().Unix()
	l.acked(beat, hb) // the source's heartbeat since
	l.saw()           // then an event that is no transaction (a rotate)
	before := cluster.Lag(l.state(), time.Now())
	if err := c.snapCommit(t.Context(), nil, &cluster.SnapshotProgress{Request: "r", Done: true}); err != nil {
		t.Fatal(err)
	}
	it := <-out
	l.acked(it.ts, it.heartbeat)
	if after := cluster.Lag(l.state(), time.Now()); after > before+1 {
		t.Errorf("lag %g s after a snapshot chunk, %g s before it: the chunk set it back to the last transaction's time", after, before)
	}
}
