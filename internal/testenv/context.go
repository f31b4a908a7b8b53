package testenv

import (
	"context"
	"testing"
	"time"
)

// Context returns the context an integration test bounds its waits with: it ends when the
// test ends and, when go test runs with -timeout, shortly before that timeout, so a test
// that hangs fails with its own message (what it was waiting for) rather than with the
// test binary's goroutine dump. A fixed budget ("8 minutes") would instead fail a test
// that is only slow because the machine is busy, and how long a workload takes is not
// what such a test asserts (speed belongs in benchmarks).
func Context(t *testing.T) context.Context {
	ctx := t.Context()
	dl, ok := t.Deadline()
	if !ok {
		return ctx
	}
	// The margin leaves the test time to report and clean up before the binary panics.
	margin := min(time.Minute, time.Until(dl)/10)
	ctx, cancel := context.WithDeadline(ctx, dl.Add(-margin))
	t.Cleanup(cancel)
	return ctx
}
