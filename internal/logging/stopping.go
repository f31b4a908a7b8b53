package logging

import (
	"context"
	"log/slog"
)

// OnStop logs msg and args at INFO as soon as ctx ends (a role's "… stopping" line), and
// returns a function that waits until that line is written. A role calls it before it
// logs that it stopped: a bare goroutine logging "stopping" could be scheduled after the
// role had finished and logged "stopped", and the log then read backwards. ctx must end
// eventually (an errgroup's context ends when Wait returns), or the wait blocks.
func OnStop(ctx context.Context, l *slog.Logger, msg string, args ...any) (written func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		l.Info(msg, args...)
	}()
	return func() { <-done }
}
