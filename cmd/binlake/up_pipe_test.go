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
	"time"
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
		done, cancel := context.WithCancel(context.Background())
		cancel() // up's stop already ended the publish's context: no hold
		if _, err := w.(*rowsPipe).WriteContext(done, []byte("{}\n")); err == nil {
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

// TestRowsPipeHoldsTheFailedWriteUntilTheStop: the wave's write that finds the reader
// gone returns only once up's stop has ended the publish's context, so that the wave's
// publisher sees the stop instead of a failed write, which it logged as "publish failed;
// retrying … broken pipe" on its way out.
func TestRowsPipeHoldsTheFailedWriteUntilTheStop(t *testing.T) {
	w, _, stop := watchRowsPipe(context.Background(), &closedPipe{}, slog.New(slog.DiscardHandler))
	defer stop()
	publish, end := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		_, err := w.(*rowsPipe).WriteContext(publish, []byte("{}\n"))
		returned <- err
	}()
	select {
	case err := <-returned:
		t.Fatalf("returned %v before the stop", err)
	case <-time.After(100 * time.Millisecond):
	}
	end()
	select {
	case err := <-returned:
		if !errors.Is(err, syscall.EPIPE) {
			t.Errorf("err %v, want EPIPE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still held after the stop")
	}
}
