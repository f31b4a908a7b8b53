package capture

import (
	"math"
	"sync"
	"time"

	"github.com/binlake/binlake/wave/cluster"
)

// LagTracker follows the lag of one leadership term of an instance: the capture counts
// what it reads, the publisher reports each batch acknowledged in order, and the
// readers (the metric, /status, the status record) take its state. A term's lag is
// the last term's (Seed) until its first transaction or heartbeat is acknowledged, and
// unknown when there was none: the position it resumed from may be an hour old on a
// source that wrote nothing since (0) or a great deal (an hour), which only reading
// tells. A nil tracker (a test's capture or
// publisher) does nothing.
type LagTracker struct {
	mu sync.Mutex
	// read counts the binlog events read and the connections opened: a heartbeat's
	// number, compared with it, says whether anything was read after the heartbeat.
	read uint64
	// quiet is the number of the last heartbeat acknowledged together with everything
	// before it (0: none).
	quiet uint64
	ts    int64
	// recorded is the state last written into the instance's status record.
	recorded cluster.LagState
}

// Saw counts a binlog event read, or a connection opened (after which the source's end
// is not known until its first heartbeat), and returns its number.
func (l *LagTracker) Saw() uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.read++
	return l.read
}

// Seed starts the term's lag where the instance's last term left it (its status
// record's, prev), until this term acknowledges its first transaction or heartbeat: a
// term that began while its source was down (a failover, a restart, a redefinition) had
// no lag at all, so the lag alert went blind on it while another instance of the same
// source, in its term since before, showed its lag growing (an outside trial). A term
// that was caught up is taken as caught up until now, when this one began: its lag grows
// from there.
func (l *LagTracker) Seed(prev cluster.LagState, now time.Time) {
	if l == nil || !prev.Known() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ts != 0 || l.quiet != 0 {
		return // this term's own already
	}
	l.ts = prev.TS
	if prev.CaughtUp || prev.TS > now.Unix() {
		l.ts = now.Unix()
	}
}

// Acked reports a batch acknowledged, after every batch before it: ts is the time of
// its last item that has one (0: none), heartbeat the number of its last heartbeat (0:
// none). Whatever was read after that heartbeat has a higher number, so the capture is
// caught up only if nothing was.
func (l *LagTracker) Acked(ts int64, heartbeat uint64) {
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

// State is the lag's state now: caught up while nothing was read after the last
// heartbeat acknowledged.
func (l *LagTracker) State() cluster.LagState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cluster.LagState{TS: l.ts, CaughtUp: l.quiet > 0 && l.quiet == l.read}
}

// lagRecordSlack is how far the lag computed from the status record may stray from
// the wave's own before the record is rewritten: the record changes when the lag does,
// not at every batch or heartbeat.
const lagRecordSlack = 2 * time.Second

// Stale reports whether the status record's lag needs rewriting: the record has none
// while the wave's is known, or the lag computed from it is lagRecordSlack or more
// away from the wave's own.
func (l *LagTracker) Stale(now time.Time) bool {
	s := l.State()
	l.mu.Lock()
	rec := l.recorded
	l.mu.Unlock()
	switch {
	case !s.Known():
		return false // nothing to say yet
	case !rec.Known():
		return true
	}
	return math.Abs(cluster.Lag(s, now)-cluster.Lag(rec, now)) >= lagRecordSlack.Seconds()
}

// Wrote notes the state written into the status record.
func (l *LagTracker) Wrote(s cluster.LagState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recorded = s
}
