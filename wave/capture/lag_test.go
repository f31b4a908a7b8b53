package capture

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
	l := &LagTracker{}
	if s := l.State(); s.Known() {
		t.Fatalf("a new term's state %+v is known before anything was acknowledged", s)
	}
	l.Saw()                   // the connection
	l.Saw()                   // a transaction's event
	l.Acked(1_800_000_000, 0) // a transaction 100 s old
	if got := cluster.Lag(l.State(), now); got != 100 {
		t.Errorf("after a 100 s old transaction: lag %g, want 100", got)
	}
	hb := l.Saw()
	l.Acked(1_800_000_099, hb)
	if s := l.State(); !s.CaughtUp || cluster.Lag(s, now) != 0 {
		t.Errorf("after a heartbeat with nothing read since: %+v, lag %g, want caught up, 0", s, cluster.Lag(s, now))
	}
	l.Saw() // an event read after the heartbeat, not yet acknowledged
	if s := l.State(); s.CaughtUp || cluster.Lag(s, now) != 1 {
		t.Errorf("an event read after the heartbeat: %+v, lag %g, want 1 s behind (since the heartbeat)", s, cluster.Lag(s, now))
	}
	// A heartbeat acknowledged after something else was read is not caught up.
	l2 := &LagTracker{}
	hb2 := l2.Saw()
	l2.Saw()
	l2.Acked(0, hb2)
	if l2.State().CaughtUp {
		t.Error("a heartbeat followed by an event read: caught up, want not")
	}
}

// TestSnapshotChunkLeavesLag: a snapshot chunk moves no binlog position, so the lag
// after it is what it was before; not now minus the time of the last transaction, which
// on a source idle for an hour would say an hour until the next heartbeat.
func TestSnapshotChunkLeavesLag(t *testing.T) {
	out := make(chan Item, 1)
	hourAgo := time.Now().Add(-time.Hour).Unix()
	c := &Capture{Options: Options{Log: slog.New(slog.DiscardHandler), Out: out},
		resume: cluster.Position{File: "bin.000001", Pos: 4, TS: hourAgo}, snap: &snapshotRun{}}
	l := &LagTracker{}
	l.Acked(hourAgo, 0) // the last transaction, an hour ago
	hb := l.Saw()
	beat := time.Now().Unix()
	l.Acked(beat, hb) // the source's heartbeat since
	l.Saw()           // then an event that is no transaction (a rotate)
	before := cluster.Lag(l.State(), time.Now())
	if err := c.snapCommit(t.Context(), Item{}, &cluster.SnapshotProgress{Request: "r", Done: true}); err != nil {
		t.Fatal(err)
	}
	it := <-out
	l.Acked(it.TS, it.Heartbeat)
	if after := cluster.Lag(l.State(), time.Now()); after > before+1 {
		t.Errorf("lag %g s after a snapshot chunk, %g s before it: the chunk set it back to the last transaction's time", after, before)
	}
}
