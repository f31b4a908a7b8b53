package wave

import (
	"testing"
	"time"

	"github.com/binlake/binlake/wave/capture"
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
