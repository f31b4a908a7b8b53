package wave

import (
	"testing"
	"time"

	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// TestLagRecordStale: the status record is rewritten when the lag computed from it
// strays lagRecordSlack from the wave's own, not at every change.
func TestLagRecordStale(t *testing.T) {
	now := time.Unix(1_800_000_100, 0)
	l := &capture.LagTracker{}
	if l.Stale(now) {
		t.Error("nothing known: stale, want not (nothing to write)")
	}
	l.Acked(1_800_000_070, 0)
	if !l.Stale(now) {
		t.Error("known and never written: not stale")
	}
	l.Wrote(l.State())
	l.Acked(1_800_000_071, 0)
	if l.Stale(now) {
		t.Error("1 s from the record: stale, want not")
	}
	l.Acked(1_800_000_072, 0)
	if !l.Stale(now) {
		t.Error("2 s from the record: not stale")
	}
	l.Wrote(l.State())
	hb := l.Saw()
	l.Acked(0, hb)
	if !l.Stale(now) {
		t.Error("caught up (28 s from the record's lag): not stale")
	}
}

// TestLagSeed: a term starts from its last term's lag until its own first
// acknowledgement: a TS as recorded, a caught-up term from when this one began (its lag
// grows from there); nothing once the term has its own, and nothing from a record that
// knew none.
func TestLagSeed(t *testing.T) {
	now := time.Unix(1_800_000_100, 0)
	for _, tc := range []struct {
		name  string
		prev  cluster.LagState
		acked bool
		want  cluster.LagState
	}{
		{"behind", cluster.LagState{TS: 1_800_000_000}, false, cluster.LagState{TS: 1_800_000_000}},
		{"caught up", cluster.LagState{TS: 1_700_000_000, CaughtUp: true}, false, cluster.LagState{TS: 1_800_000_100}},
		{"ahead of the clock", cluster.LagState{TS: 1_900_000_000}, false, cluster.LagState{TS: 1_800_000_100}},
		{"none known", cluster.LagState{}, false, cluster.LagState{}},
		{"the term's own first", cluster.LagState{TS: 1_800_000_000}, true, cluster.LagState{TS: 1_800_000_090}},
	} {
		l := &capture.LagTracker{}
		if tc.acked {
			l.Acked(1_800_000_090, 0)
		}
		l.Seed(tc.prev, now)
		if got := l.State(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
