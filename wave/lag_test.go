package wave

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"
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
	if got := Lag(l.state(), now); got != 100 {
		t.Errorf("after a 100 s old transaction: lag %g, want 100", got)
	}
	hb := l.saw()
	l.acked(1_800_000_099, hb)
	if s := l.state(); !s.CaughtUp || Lag(s, now) != 0 {
		t.Errorf("after a heartbeat with nothing read since: %+v, lag %g, want caught up, 0", s, Lag(s, now))
	}
	l.saw() // an event read after the heartbeat, not yet acknowledged
	if s := l.state(); s.CaughtUp || Lag(s, now) != 1 {
		t.Errorf("an event read after the heartbeat: %+v, lag %g, want 1 s behind (since the heartbeat)", s, Lag(s, now))
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

// TestRecordedLag: instance show gives the lag of a status record (as stored: through
// its JSON) only when it is the leading wave's, of a capture running or reconnecting, and known.
func TestRecordedLag(t *testing.T) {
	now := time.Unix(1_800_000_100, 0)
	rec := func(node, state string, ls *LagState) (r RecordedStatus) {
		b, _ := json.Marshal(RecordedStatus{Node: node, State: state, Lag: ls})
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	behind := &LagState{TS: 1_800_000_070}
	for _, tc := range []struct {
		name     string
		rec      RecordedStatus
		leader   string
		want     float64 // -1: none
		caughtUp bool
	}{
		{"behind", rec("w1", StateRunning, behind), "w1", 30, false},
		{"caught up", rec("w1", StateRunning, &LagState{TS: 1_800_000_000, CaughtUp: true}), "w1", 0, true},
		{"another wave's", rec("w2", StateRunning, behind), "w1", -1, false},
		{"no leader", rec("w1", StateRunning, behind), "", -1, false},
		{"in error", rec("w1", StateError, behind), "w1", -1, false},
		{"not known yet", rec("w1", StateRunning, nil), "w1", -1, false},
		{"reconnecting", rec("w1", StateReconnecting, behind), "w1", 30, false},
		{"retrying", rec("w1", StateRetrying, behind), "w1", -1, false},
	} {
		lag, caughtUp := recordedLag(tc.rec, tc.leader, now)
		got := -1.0
		if lag != nil {
			got = *lag
		}
		if got != tc.want || caughtUp != tc.caughtUp {
			t.Errorf("%s: lag %g caught up %v, want %g %v", tc.name, got, caughtUp, tc.want, tc.caughtUp)
		}
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
		resume: Position{File: "bin.000001", Pos: 4, TS: hourAgo}, snap: &snapshotRun{}}
	l := &lagTracker{}
	l.acked(hourAgo, 0) // the last transaction, an hour ago
	hb := l.saw()
	beat := time.Now().Unix()
	l.acked(beat, hb) // the source's heartbeat since
	l.saw()           // then an event that is no transaction (a rotate)
	before := Lag(l.state(), time.Now())
	if err := c.snapCommit(t.Context(), nil, &SnapshotProgress{Request: "r", Done: true}); err != nil {
		t.Fatal(err)
	}
	it := <-out
	l.acked(it.ts, it.heartbeat)
	if after := Lag(l.state(), time.Now()); after > before+1 {
		t.Errorf("lag %g s after a snapshot chunk, %g s before it: the chunk set it back to the last transaction's time", after, before)
	}
}
