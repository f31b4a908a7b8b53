package testenv

import (
	"io"
	"log/slog"
	"sync"
	"testing"
)

// Logger is a test's logger: the code under test logs into the test's output, shown
// when the test fails or runs with -v (Debug with -v, Info otherwise), each line
// naming the test.
//
// Lines logged after the test's cleanups ran are dropped: a client library's
// goroutine that outlives the Close that ended it (kafka-go's readers log as they
// wind down) would otherwise panic the whole test binary with "Write called after
// the test has completed". The cleanup that closes the output runs last, so what the
// other cleanups log is kept.
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return LoggerAt(t, level)
}

// LoggerAt is Logger at the given level whether or not the run is verbose.
func LoggerAt(t testing.TB, level slog.Level) *slog.Logger {
	w := &untilCleanup{w: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("test", t.Name())
}

// untilCleanup writes to w until close; the lock makes close wait for a write under way.
type untilCleanup struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (u *untilCleanup) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return len(p), nil
	}
	return u.w.Write(p)
}

func (u *untilCleanup) close() {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
}
