package capture

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// waitLog keeps the backoff of each "reconnecting" line Run logs.
type waitLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (l *waitLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *waitLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *waitLog) WithGroup(string) slog.Handler            { return l }
func (l *waitLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "backoff" {
			l.mu.Lock()
			l.waits = append(l.waits, a.Value.Duration())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestReconnectBackoff: Run's wait before a reconnect starts again from the first only
// after a session that read events and stayed up for twice the longest wait. Sessions
// that read a few events and drop at once (two replicas with one server_id on a source,
// each ending the other's connection) wait their way up to the longest wait, as a refused
// connection does; before, any event read reset the wait, and such sessions reconnected
// every 200 ms for ever.
func TestReconnectBackoff(t *testing.T) {
	const first, limit = time.Millisecond, 32 * time.Millisecond
	short, long := 10*time.Millisecond, 2*limit
	type session struct {
		up   time.Duration
		read bool
	}
	flaps := func(n int) []session {
		s := make([]session, n)
		for i := range s {
			s[i] = session{short, true}
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		sessions []session
		// the last wait is within [min, max]
		min, max time.Duration
	}{
		{"sessions that read events and drop at once reach the longest wait", flaps(8), limit * 4 / 5, limit * 6 / 5},
		{"a session up for twice the longest wait restarts the schedule", append(flaps(7), session{long, true}), first * 4 / 5, first * 6 / 5},
		{"one up for the longest wait, as long as a clashing replica's wait, does not", append(flaps(7), session{limit * 6 / 5, true}), limit * 4 / 5, limit * 6 / 5},
		{"a session up as long that read nothing does not", append(flaps(7), session{long, false}), limit * 4 / 5, limit * 6 / 5},
		{"a short session after a long one waits the first wait again, then twice as long", append(flaps(7), session{long, true}, session{short, true}), 2 * first * 4 / 5, 2 * first * 6 / 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &waitLog{}
			clash := errors.New("ERROR 4052 (HY000): A slave with the same server_uuid/server_id as this slave has connected to the master")
			err := runFakeSessions(t, Options{Log: slog.New(log), BackoffMin: first, BackoffMax: limit}, len(tc.sessions), func(i int) (time.Duration, bool, error) {
				return tc.sessions[i].up, tc.sessions[i].read, clash
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(log.waits) != len(tc.sessions) {
				t.Fatalf("%d reconnects logged, want %d: %v", len(log.waits), len(tc.sessions), log.waits)
			}
			if last := log.waits[len(log.waits)-1]; last < tc.min || last > tc.max {
				t.Errorf("the last wait is %v, want %v–%v (all: %v)", last, tc.min, tc.max, log.waits)
			}
		})
	}
}

// TestClassify: the source's error that ends a binlog connection is told apart by its
// text where the code is shared. MySQL reports a server_id clash with 1236, the code of a
// purged binlog: it was taken for one, and the instance stopped for good as
// binlog_purged, when it only had to wait for the other replica to go.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		fatal      bool
		purged     bool
		clash      bool
		wantPrefix string
	}{
		{"MariaDB's server_id clash", mysql.NewError(errSlaveSameID, "A slave with the same server_uuid/server_id is already connected; the first event '.' at 4"),
			false, false, true, ErrServerIDClash.Error()},
		{"MySQL's server_id clash", mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "A slave with the same server_uuid/server_id as this slave has connected to the master; the first event 'binlog.000001' at 4"),
			false, false, true, ErrServerIDClash.Error()},
		{"a purged binlog", mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "Could not find first log file name in binary log index file"),
			true, true, false, ErrBinlogPurged.Error()},
		{"MariaDB's purged GTIDs", mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged."),
			true, true, false, ErrBinlogPurged.Error()},
		// Not purged: the position is wrong. Each was binlog_purged, whose remedy is not
		// the fix (an outside trial).
		{"not an event's start", mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "bogus data in log event; the first event 'binlog.000013' at 5000, the last event read from 'binlog.000013' at 4, the last byte read from 'binlog.000013' at 5019. log event entry exceeded max_allowed_packet; Increase max_allowed_packet on master"),
			true, false, false, ErrPositionUnserved.Error()},
		{"a GTID ahead of the source", mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "Error: connecting slave requested to start from GTID 0-1-99999999, which is not in the master's binlog"),
			true, false, false, ErrPositionUnserved.Error()},
		{"a dropped connection", errors.New("connection was bad"), false, false, false, "connection was bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify(tc.err)
			if IsFatal(err) != tc.fatal || errors.Is(err, ErrBinlogPurged) != tc.purged || IsServerIDClash(err) != tc.clash ||
				!strings.HasPrefix(err.Error(), tc.wantPrefix) {
				t.Errorf("classify: %v (fatal %v, purged %v, clash %v); want fatal %v, purged %v, clash %v, starting %q",
					err, IsFatal(err), errors.Is(err, ErrBinlogPurged), IsServerIDClash(err), tc.fatal, tc.purged, tc.clash, tc.wantPrefix)
			}
		})
	}
}

// TestLastingClashStops: a capture whose every session clashes on its server_id for
// clashLimit stops with a fatal server_id clash that says what to do (it reconnected for
// ever, ending a real replica's connection each time); a clash broken by another error,
// or a session that held, starts the count again.
func TestLastingClashStops(t *testing.T) {
	clash := errors.New("ERROR 4052 (HY000): A slave with the same server_uuid/server_id as this slave has connected to the master")
	for _, tc := range []struct {
		name     string
		sessions []error // each session lasts a minute
		fatal    bool
	}{
		{"six minutes of clashes", []error{clash, clash, clash, clash, clash, clash, clash}, true},
		{"broken by a refused connection", []error{clash, clash, clash, errors.New("connection refused"), clash, clash, clash}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A session held for twice the longest wait would count as stable: 20 min here.
			err := runFakeSessions(t, Options{Log: slog.New(slog.DiscardHandler), BackoffMin: time.Millisecond, BackoffMax: 10 * time.Minute},
				len(tc.sessions), func(i int) (time.Duration, bool, error) { return time.Minute, true, tc.sessions[i] })
			switch {
			case tc.fatal && (!IsFatal(err) || !errors.Is(err, ErrServerIDClash) || !strings.Contains(err.Error(), "binlake instance set orders -f FILE")):
				t.Fatalf("Run: %v, want a fatal server_id clash saying what to do", err)
			case !tc.fatal && err != nil:
				t.Fatalf("Run: %v, want it to go on", err)
			}
		})
	}
}

// runFakeSessions runs a capture of instance "orders" with o's log and backoff over n
// sessions that session(i) describes (how long it stays up on the capture's clock,
// whether it read events, how it ends), and returns what Run returns.
func runFakeSessions(t *testing.T, o Options, n int, session func(i int) (time.Duration, bool, error)) error {
	t.Helper()
	o.Inst = &cluster.Instance{ID: "orders", Source: cluster.Source{Addr: "127.0.0.1:1", User: "u"}}
	c, err := New(o, start4())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := time.Unix(1e9, 0)
	c.now = func() time.Time { return clock }
	i := 0
	c.runSession = func(context.Context) (bool, error) {
		if i == n {
			cancel()
			return false, ctx.Err()
		}
		up, read, err := session(i)
		i++
		clock = clock.Add(up)
		return read, err
	}
	return c.Run(ctx)
}
