package capture

import (
	"context"
	"log/slog"

	"github.com/binlake/binlake/internal/logging"
)

// goMySQLLogger is the logger go-mysql's binlog syncer writes to: the capture's, with
// the source's password hidden, its lines marked lib=go-mysql (the capture's logger
// already carries a component, and a second one made duplicate keys in JSON logs), and
// their levels set to what they mean to an operator (goMySQLLevel).
func goMySQLLogger(l *slog.Logger, password string) *slog.Logger {
	return logging.Redact(slog.New(&goMySQLLevels{h: l.With("lib", "go-mysql").Handler()}), password)
}

// goMySQLLevel is the level a go-mysql line is logged at:
//   - its dump of its whole configuration struct (at INFO as each syncer is made, once
//     per reconnect) at DEBUG: a Go struct of pointers and internals, the start-up line
//     already names the source, and at INFO it buried the lines an operator reads;
//   - its routine lines (a rotation, twice per FLUSH LOGS; a syncer closing as a session
//     ends; "retry sync is disabled", which follows every dropped connection because the
//     capture reconnects itself, as its own line says) at DEBUG;
//   - its errors at WARN: each one is a connection the syncer retries, or returns to the
//     capture, which says what it does about it ("binlog connection failed;
//     reconnecting"), so an ERROR line of go-mysql's was not the process failing.
func goMySQLLevel(r slog.Record) slog.Level {
	switch {
	case r.Level <= slog.LevelWarn && (hasAttr(r, "config") || goMySQLRoutine[r.Message]):
		return slog.LevelDebug
	case r.Level >= slog.LevelError:
		return slog.LevelWarn
	}
	return r.Level
}

// goMySQLRoutine are the messages of go-mysql's INFO lines that say nothing an operator
// acts on.
var goMySQLRoutine = map[string]bool{
	"rotate to next binlog":  true,
	"syncer is closing...":   true,
	"syncer is closed":       true,
	"retry sync is disabled": true,
}

// goMySQLLevels logs go-mysql's records at goMySQLLevel.
type goMySQLLevels struct{ h slog.Handler }

// Enabled lets every record through to Handle, which knows its message: a lowered
// level cannot be judged from the level alone.
func (g *goMySQLLevels) Enabled(ctx context.Context, l slog.Level) bool {
	return g.h.Enabled(ctx, min(l, slog.LevelWarn))
}

func (g *goMySQLLevels) Handle(ctx context.Context, r slog.Record) error {
	lvl := goMySQLLevel(r)
	if !g.h.Enabled(ctx, lvl) {
		return nil
	}
	r.Level = lvl
	return g.h.Handle(ctx, r)
}

func (g *goMySQLLevels) WithAttrs(as []slog.Attr) slog.Handler {
	return &goMySQLLevels{h: g.h.WithAttrs(as)}
}

func (g *goMySQLLevels) WithGroup(name string) slog.Handler {
	return &goMySQLLevels{h: g.h.WithGroup(name)}
}

func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
