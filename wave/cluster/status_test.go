package cluster

import (
	"encoding/json"
	"testing"
	"time"
)

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
