//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

// closedPipe fails every write as a pipe whose reader exited does (SIGPIPE caught).
type closedPipe struct{ writes int }

func (c *closedPipe) Write([]byte) (int, error) {
	c.writes++
	return 0, fmt.Errorf("write /dev/stdout: %w", syscall.EPIPE)
}

// TestRowsPipeStopsUpWhenItsReaderIsGone: a write of -rows - to a pipe whose reader
// exited (`| head`) ends up's context, saying why once, and returns the error (the wave
// then does not count the rows as written); up was killed by SIGPIPE, silently.
func TestRowsPipeStopsUpWhenItsReaderIsGone(t *testing.T) {
	var logged bytes.Buffer
	pipe := &closedPipe{}
	w, ctx, stop := watchRowsPipe(context.Background(), pipe, slog.New(slog.NewTextHandler(&logged, nil)))
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("ended before any write")
	}
	for range 3 {
		if _, err := w.Write([]byte("{}\n")); err == nil {
			t.Fatal("a write to a closed pipe succeeded")
		}
	}
	if ctx.Err() == nil {
		t.Fatal("up's context still running after its rows' reader went")
	}
	if !errors.Is(context.Cause(ctx), errRowsReaderGone) {
		t.Errorf("cause %v, want errRowsReaderGone: up returns it and exits 1, not as a clean stop", context.Cause(ctx))
	}
	if n := strings.Count(logged.String(), "the reader of -rows - is gone"); n != 1 {
		t.Errorf("said %d times, want once:\n%s", n, logged.String())
	}
}
