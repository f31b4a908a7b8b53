package wave

import (
	"math"
	"sync"
	"time"
)

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

// hasLag reports whether an instance in state has a lag to show: while its wave leads
// and captures it, or reconnects to its source (the lag then grows: the capture has
// published nothing newer). The metric has the same series: the term's tracker.
func hasLag(state string) bool { return state == StateRunning || state == StateReconnecting }

// lagTracker follows the lag of one leadership term of an instance: the capture counts
// what it reads, the publisher reports each batch acknowledged in order, and the
// readers (the metric, /status, the status record) take its state. A term's lag is
// unknown until its first transaction or heartbeat is acknowledged: the position it
// resumed from may be an hour old on a source that wrote nothing since (0) or a
// great deal (an hour), which only reading tells. A nil tracker (a test's capture or
// publisher) does nothing.
type lagTracker struct {
	mu sync.Mutex
	// read counts the binlog events read and the connections opened: a heartbeat's
	// number, compared with it, says whether anything was read after the heartbeat.
	read uint64
	// quiet is the number of the last heartbeat acknowledged together with everything
	// before it (0: none).
	quiet uint64
	ts    int64
	// recorded is the state last written into the instance's status record.
	recorded LagState
}

// saw counts a binlog event read, or a connection opened (after which the source's end
// is not known until its first heartbeat), and returns its number.
func (l *lagTracker) saw() uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.read++
	return l.read
}

// acked reports a batch acknowledged, after every batch before it: ts is the time of
// its last item that has one (0: none), heartbeat the number of its last heartbeat (0:
// none). Whatever was read after that heartbeat has a higher number, so the capture is
// caught up only if nothing was.
func (l *lagTracker) acked(ts int64, heartbeat uint64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ts > 0 {
		l.ts = ts
	}
	if heartbeat > 0 {
		l.quiet = heartbeat
	}
}

// state is the lag's state now: caught up while nothing was read after the last
// heartbeat acknowledged.
func (l *lagTracker) state() LagState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LagState{TS: l.ts, CaughtUp: l.quiet > 0 && l.quiet == l.read}
}

// lagRecordSlack is how far the lag computed from the status record may stray from
// the wave's own before the record is rewritten: the record changes when the lag does,
// not at every batch or heartbeat.
const lagRecordSlack = 2 * time.Second

// stale reports whether the status record's lag needs rewriting: the record has none
// while the wave's is known, or the lag computed from it is lagRecordSlack or more
// away from the wave's own.
func (l *lagTracker) stale(now time.Time) bool {
	s := l.state()
	l.mu.Lock()
	rec := l.recorded
	l.mu.Unlock()
	switch {
	case !s.Known():
		return false // nothing to say yet
	case !rec.Known():
		return true
	}
	return math.Abs(Lag(s, now)-Lag(rec, now)) >= lagRecordSlack.Seconds()
}

// wrote notes the state written into the status record.
func (l *lagTracker) wrote(s LagState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recorded = s
}
