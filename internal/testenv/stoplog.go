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
	return slog.New(&slowStopping{h: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})})
}

type slowStopping struct{ h slog.Handler }

func (s *slowStopping) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }
func (s *slowStopping) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasSuffix(r.Message, " stopping") {
		time.Sleep(100 * time.Millisecond)
	}
	return s.h.Handle(ctx, r)
}
func (s *slowStopping) WithAttrs(as []slog.Attr) slog.Handler {
	return &slowStopping{h: s.h.WithAttrs(as)}
}
func (s *slowStopping) WithGroup(n string) slog.Handler { return &slowStopping{h: s.h.WithGroup(n)} }

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
