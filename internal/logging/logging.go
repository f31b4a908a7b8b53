// Package logging builds the process's *slog.Logger from the level and format named in a
// role's config or flags.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Redacted replaces the value of attributes whose key names a credential.
const Redacted = "***"

// New returns a logger writing to w. level is debug, info, warn or error; format is text or
// json; both are case-insensitive, and empty means info and text.
//
// As a last line of defence, attributes whose key contains "password", "passwd", "secret"
// or "token" are replaced by "***": config.Secret already hides itself, but a plain string
// passed under such a key must not reach the log either. An error is logged as its
// message: the text handler formats values with %+v, and the errors of go-mysql (pingcap's)
// then print their stack traces, a kilobyte of Go frames in each "reconnecting" line.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	if err := CheckFormat(format); err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: replaceAttr}
	if strings.EqualFold(strings.TrimSpace(format), "json") {
		// Durations as the text format writes them ("1.5s"), not as integer nanoseconds
		// ("took":1500000000), which nobody reads right.
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a = slog.String(a.Key, a.Value.Duration().String())
			}
			return replaceAttr(groups, a)
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// CheckFormat checks a log format: text or json, case-insensitive; empty means text.
func CheckFormat(format string) error {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "text", "json":
		return nil
	}
	return fmt.Errorf("unknown log format %q: want text or json", format)
}

// ParseLevel parses debug, info, warn (or warning) and error; empty means info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return 0, fmt.Errorf("unknown log level %q: want debug, info, warn or error", s)
	}
}

func replaceAttr(_ []string, a slog.Attr) slog.Attr {
	if err, ok := a.Value.Any().(error); ok && a.Value.Kind() == slog.KindAny && err != nil {
		a = slog.String(a.Key, err.Error())
	}
	k := strings.ToLower(a.Key)
	for _, s := range []string{"password", "passwd", "secret", "token"} {
		if strings.Contains(k, s) && a.Value.Kind() != slog.KindGroup {
			return slog.String(a.Key, Redacted)
		}
	}
	return a
}
