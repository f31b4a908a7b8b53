package testenv

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// StopOrderLogger is a logger for a role under test whose "… stopping" lines are held
// back a while before they are written, as a busy scheduler may hold the goroutine that
// logs them: a role that logs "stopped" without waiting for its "stopping" line then
// writes them backwards, every time. Its text goes to buf.
func StopOrderLogger(buf *SyncBuffer) *slog.Logger {
	return DelayLogger(buf, func(msg string) bool { return strings.HasSuffix(msg, " stopping") })
}

// DelayLogger writes text to buf, each record whose message delay picks 100 ms late: a
// test makes the order it must not depend on the wrong one.
func DelayLogger(buf *SyncBuffer, delay func(msg string) bool) *slog.Logger {
	return slog.New(&delaying{h: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), delay: delay})
}

type delaying struct {
	h     slog.Handler
	delay func(string) bool
}

func (d *delaying) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }
func (d *delaying) Handle(ctx context.Context, r slog.Record) error {
	if d.delay(r.Message) {
		time.Sleep(100 * time.Millisecond)
	}
	return d.h.Handle(ctx, r)
}
func (d *delaying) WithAttrs(as []slog.Attr) slog.Handler {
	return &delaying{h: d.h.WithAttrs(as), delay: d.delay}
}
func (d *delaying) WithGroup(n string) slog.Handler {
	return &delaying{h: d.h.WithGroup(n), delay: d.delay}
}

// RequireStopLines checks log (a StopOrderLogger's text, after the role returned) has
// exactly one `msg="<role> stopping"` line and one `msg="<role> stopped"` line, in that
// order.
func RequireStopLines(t testing.TB, log, role string) {
	t.Helper()
	stopping, stopped := `msg="`+role+` stopping"`, `msg="`+role+` stopped"`
	if n, m := strings.Count(log, stopping), strings.Count(log, stopped); n != 1 || m != 1 {
		t.Fatalf("%d %q and %d %q lines, want one of each:\n%s", n, stopping, m, stopped, log)
	}
	if strings.Index(log, stopping) > strings.Index(log, stopped) {
		t.Fatalf("%q came before %q:\n%s", stopped, stopping, log)
	}
}
