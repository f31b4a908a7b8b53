package testenv

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// endingTB is a test whose output and cleanups the test below sees: testing panics on
// a write after a test and its parents returned, which a test cannot do to itself.
type endingTB struct {
	testing.TB
	out      bytes.Buffer
	cleanups []func()
}

func (e *endingTB) Output() io.Writer { return &e.out }
func (e *endingTB) Cleanup(f func())  { e.cleanups = append(e.cleanups, f) }
func (e *endingTB) end() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// TestLoggerAfterTheTestEnded: what is logged after the test's cleanups ran (a client
// library's goroutine winding down after Close) is dropped, not written into a test
// that completed; what is logged before is kept.
func TestLoggerAfterTheTestEnded(t *testing.T) {
	tb := &endingTB{TB: t}
	log := Logger(tb)
	log.Info("during the test")
	tb.end()
	log.Info("after the test")
	got := tb.out.String()
	if !strings.Contains(got, "during the test") {
		t.Errorf("a line logged during the test is missing: %q", got)
	}
	if strings.Contains(got, "after the test") {
		t.Errorf("a line logged after the test ended reached its output: %q", got)
	}
}
