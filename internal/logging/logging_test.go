package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name, level, format string
		wantErr             string
		debugShown          bool
		infoShown           bool
		json                bool
	}{
		{name: "defaults", infoShown: true},
		{name: "debug text", level: "debug", format: "text", debugShown: true, infoShown: true},
		{name: "debug upper case", level: "DEBUG", format: "TEXT", debugShown: true, infoShown: true},
		{name: "info json", level: "info", format: "json", infoShown: true, json: true},
		{name: "warn hides info", level: "warn", format: "text"},
		{name: "warning alias", level: "warning", format: "json", json: true},
		{name: "error", level: "error", format: "text"},
		{name: "unknown level", level: "verbose", wantErr: `unknown log level "verbose"`},
		{name: "unknown format", format: "xml", wantErr: `unknown log format "xml"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := New(&buf, tc.level, tc.format)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, l)
				return
			}
			require.NoError(t, err)
			l.Debug("dbg-msg")
			l.Info("info-msg")
			l.Error("err-msg", "k", 1)
			out := buf.String()
			require.Equal(t, tc.debugShown, strings.Contains(out, "dbg-msg"), out)
			require.Equal(t, tc.infoShown, strings.Contains(out, "info-msg"), out)
			require.Contains(t, out, "err-msg")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var m map[string]any
			isJSON := json.Unmarshal([]byte(lines[len(lines)-1]), &m) == nil
			require.Equal(t, tc.json, isJSON, out)
		})
	}
}

func TestRedact(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		l, err := New(&buf, "info", format)
		require.NoError(t, err)
		l.Info("connect", "password", "pw-value", "api_token", "tok-value", slog.Group("es", "Secret", "sec-value"), "user", "alice")
		out := buf.String()
		for _, v := range []string{"pw-value", "tok-value", "sec-value"} {
			require.NotContains(t, out, v)
		}
		require.Contains(t, out, "alice")
		require.Contains(t, out, Redacted)
	}
}

// TestRedactSecret: a secret inside the message, a With attribute, a struct formatted with
// fmt and a group is replaced; the rest of the record stays.
func TestRedactSecret(t *testing.T) {
	var b strings.Builder
	base := slog.New(slog.NewTextHandler(&b, nil))
	l := Redact(base, "s3cr3t")
	l.With("dsn", "root:s3cr3t@x").Info("create s3cr3t", "config", struct{ Password string }{"s3cr3t"},
		slog.Group("g", "p", "s3cr3t"), "n", 5)
	if strings.Contains(b.String(), "s3cr3t") {
		t.Fatalf("secret in log: %s", b.String())
	}
	if !strings.Contains(b.String(), "n=5") || !strings.Contains(b.String(), "***") {
		t.Fatalf("log lost its content: %s", b.String())
	}
}
