//go:build !agentonly

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// rowsPipe is the stdout of `up -rows -` once its reader may exit (`| head`): a write to
// a pipe nobody reads killed the process by SIGPIPE, silently, with no stop at all. With
// SIGPIPE caught, the write fails with EPIPE instead: up says that its reader is gone
// and stops as on Ctrl-C. The rows the pipe held, unread, are not sent again (the offset
// was committed once they were written).
type rowsPipe struct {
	w    io.Writer
	once sync.Once
	gone func()
}

// errRowsReaderGone is why up stopped when its -rows - reader went: up returns it, and
// exits 1.
var errRowsReaderGone = errors.New("up: the reader of -rows - is gone (broken pipe); rows the pipe held unread are not sent again")

// watchRowsPipe returns stdout as rowsPipe and a context that ends when its reader is
// gone, its cause errRowsReaderGone; stop releases SIGPIPE.
func watchRowsPipe(ctx context.Context, stdout io.Writer, log *slog.Logger) (io.Writer, context.Context, func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGPIPE) // writes to a closed pipe fail with EPIPE, not kill
	ctx, cancel := context.WithCancelCause(ctx)
	p := &rowsPipe{w: stdout, gone: func() {
		log.Warn("the reader of -rows - is gone (broken pipe): stopping; rows the pipe held unread are not sent again", "component", "up")
		cancel(errRowsReaderGone)
	}}
	return p, ctx, func() { signal.Stop(sig); cancel(nil) }
}

func (p *rowsPipe) Write(b []byte) (int, error) {
	return p.WriteContext(context.Background(), b)
}

// WriteContext is Write for the wave's sink (sink.ContextWriter): once the reader is
// gone it holds the failed write until up's stop ends ctx, the publish's (a second at
// most), so that the wave's publisher sees the stop and says nothing more, where it
// logged "publish failed; retrying … broken pipe" on its way out.
func (p *rowsPipe) WriteContext(ctx context.Context, b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.once.Do(p.gone)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return n, err
}
