package bus

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestWarnRetriesOneLineOfAKind: the same failure again and again (a topic not yet
// created, every few seconds) is one warning, not one per attempt; another failure is
// its own line; every failure is counted.
func TestWarnRetriesOneLineOfAKind(t *testing.T) {
	var buf bytes.Buffer
	counted := 0
	onError := WarnRetries(slog.New(slog.NewTextHandler(&buf, nil)), "metric subscription failed; retrying", func() { counted++ })
	missing := errors.New(`subscribe to "binlake.metrics": unknown topic`)
	for range 10 {
		onError(missing, 5*time.Second)
	}
	onError(errors.New("dial tcp 127.0.0.1:9092: connection refused"), time.Second)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "unknown topic") || !strings.Contains(lines[1], "connection refused") {
		t.Errorf("logged %d lines, want one per kind of failure:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "in=5s") {
		t.Errorf("line %q: want a warning with the wait", lines[0])
	}
	if counted != 11 {
		t.Errorf("counted %d failures, want 11", counted)
	}
}
