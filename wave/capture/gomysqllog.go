package capture

import (
	"context"
	"log/slog"

	"github.com/binlake/binlake/internal/logging"
)

// goMySQLLogger is the logger go-mysql's binlog syncer writes to: the capture's, with
// the source's password hidden, and go-mysql's dump of its whole configuration struct
// (logged at INFO as each syncer is made, once per reconnect) lowered to DEBUG: it is a
// Go struct of pointers and internals, the start-up line already names the source, and at
// INFO it buried the lines an operator reads.
func goMySQLLogger(l *slog.Logger, password string) *slog.Logger {
	return logging.Redact(slog.New(&configToDebug{h: l.With("component", "go-mysql").Handler()}), password)
}

// configToDebug lowers INFO records that carry a "config" attribute to DEBUG.
type configToDebug struct{ h slog.Handler }

func (c *configToDebug) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }

func (c *configToDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && hasAttr(r, "config") {
		if !c.h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return c.h.Handle(ctx, r)
}

func (c *configToDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return &configToDebug{h: c.h.WithAttrs(as)}
}

func (c *configToDebug) WithGroup(name string) slog.Handler {
	return &configToDebug{h: c.h.WithGroup(name)}
}

func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
