package testenv

import (
	"log/slog"
	"testing"
)

// Logger is a test's logger: the code under test logs into the test's output, shown
// when the test fails or runs with -v (Debug with -v, Info otherwise), each line
// naming the test.
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level})).With("test", t.Name())
}
