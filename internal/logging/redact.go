package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// redactingHandler hides a secret inside log records, wherever it appears: in the
// message, in string attributes and in values formatted with fmt.
type redactingHandler struct {
	h      slog.Handler
	secret string
}

// Redact returns l with every occurrence of secret replaced by "***" in messages and
// attributes (groups included). Some libraries log whole configs with the credential in
// a plain string field (go-mysql logs its BinlogSyncerConfig, password included, when a
// syncer is created); the key-based redaction of New cannot see that one.
func Redact(l *slog.Logger, secret string) *slog.Logger {
	if secret == "" {
		return l
	}
	return slog.New(&redactingHandler{h: l.Handler(), secret: secret})
}

func (r *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	for i := range as {
		as[i] = r.attr(as[i])
	}
	return &redactingHandler{h: r.h.WithAttrs(as), secret: r.secret}
}

func (r *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: r.h.WithGroup(name), secret: r.secret}
}

func (r *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.hide(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactingHandler) hide(s string) string { return strings.ReplaceAll(s, r.secret, Redacted) }

func (r *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i := range g {
			out[i] = r.attr(g[i])
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindString:
		return slog.String(a.Key, r.hide(v.String()))
	case slog.KindAny:
		return slog.String(a.Key, r.hide(fmt.Sprint(v.Any())))
	}
	return a
}
