package cluster

import (
	"context"
	"encoding/json"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// RecordedStatus is the value of instances/<id>/status: the latest state its leader
// recorded, with the error's class and when the state began.
type RecordedStatus struct {
	Node   string `json:"node"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	Since  string `json:"since"`
	// Lag is what the instance's lag is computed from (Lag), while the node runs it and
	// once known: the wave (statusrecord.go) keeps it within lagRecordSlack of the node's own.
	Lag *LagState `json:"lag,omitempty"`
}

// LagState is what an instance's lag is computed from (see Lag): what the wave keeps
// while it runs the instance, and writes into the instance's status record for
// `binlake instance show`.
type LagState struct {
	// TS is the time, in Unix seconds, up to which the capture has published everything
	// the source wrote: the binlog timestamp of the last transaction it handled (its
	// rows, if it had subscribed ones, acknowledged by the sink), or the time of a
	// source heartbeat that came after it.
	TS int64 `json:"ts"`
	// CaughtUp: the source's last word was a heartbeat, which it sends when it has
	// nothing newer, and everything read before it is acknowledged.
	CaughtUp bool `json:"caught_up,omitempty"`
}

// Known reports whether s says anything: neither a transaction nor a heartbeat was
// acknowledged yet when it does not.
func (s LagState) Known() bool { return s.CaughtUp || s.TS > 0 }

// Lag is how far a capture is behind what its source has written, in whole seconds:
// the one definition behind binlake_wave_lag_seconds (so the agent's wave.lag_s and the
// default replication-lag policy), the wave's /status and `binlake instance show`.
//
// It is 0 when the capture is caught up: the source's heartbeat says it has nothing
// newer and the sink has everything read before it. Otherwise it is now minus the
// time the capture has published everything up to (s.TS): it grows while the capture
// waits for the sink or the source, and a burst the capture keeps up with stays near
// 0. The readers show nothing for a state that is not Known (Lag says 0).
func Lag(s LagState, now time.Time) float64 {
	if s.CaughtUp || s.TS <= 0 {
		return 0
	}
	return float64(max(0, now.Unix()-s.TS))
}

// LastLag is what instance id's status record says of its lag, as its last leadership
// term recorded it (by whichever wave), when that term had one; ok false otherwise (no
// record, none known, a state without a lag). A new term starts from it (LagTracker.Seed).
func LastLag(ctx context.Context, c coord.Coordinator, id string) (LagState, bool) {
	v, err := c.Get(ctx, StatusKey(id))
	if err != nil {
		return LagState{}, false
	}
	var rec RecordedStatus
	if json.Unmarshal(v.Data, &rec) != nil || rec.Lag == nil || !rec.Lag.Known() || !HasLag(rec.State) {
		return LagState{}, false
	}
	return *rec.Lag, true
}

// recordedLag is the lag that an instance's status record gives at now, and whether it
// says caught up; nil when it gives none that holds: no lag known yet, or the record is
// not of the wave leading the instance (leader) or not of a capture that has one
// (HasLag: not an error, nor a wave that has stopped since).
func recordedLag(rec RecordedStatus, leader string, now time.Time) (lag *float64, caughtUp bool) {
	if rec.Lag == nil || !rec.Lag.Known() || !HasLag(rec.State) || rec.Node == "" || rec.Node != leader {
		return nil, false
	}
	v := Lag(*rec.Lag, now)
	return &v, rec.Lag.CaughtUp
}

// Instance states shown by /status and `binlake instance show`.
const (
	StateStandby = "standby" // campaigning: another wave leads
	StateRunning = "running" // leading and capturing
	// StateStarting: leading, its term begun, its source not yet read from (the first
	// event of the binlog connection makes it running). It said running from the term's
	// start, and an agent's scrape then, before a source that refuses had answered, made
	// the alarm resolve the instance's stopped alert and page it again after a restart (an
	// outside trial).
	StateStarting     = "starting"
	StateReconnecting = "reconnecting" // leading, the source is unreachable (retrying)
	StateRetrying     = "retrying"     // the pipeline failed and restarts after a pause
	StateError        = "error"        // stopped until an operator acts (binlog purged, oversized row)
)

// HasLag reports whether an instance in state has a lag to show: while its wave leads
// and captures it, or reconnects to its source (the lag then grows: the capture has
// published nothing newer). The metric has the same series: the term's tracker.
func HasLag(state string) bool {
	return state == StateRunning || state == StateReconnecting || state == StateStarting
}
