package capture

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"
)

// go-mysql logs its whole config struct at INFO as a syncer is made: at INFO it must not
// show; at DEBUG it does, with the password hidden. So do its routine lines ("syncer is
// closing..."), and every line is marked lib=go-mysql beside the capture's component.
func TestGoMySQLLoggerConfigAtDebug(t *testing.T) {
	for _, tc := range []struct {
		level      slog.Level
		wantConfig bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		var buf bytes.Buffer
		l := goMySQLLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})).With("component", "wave"), "hunter2")
		// What NewBinlogSyncer logs, through the logger the capture gives it.
		replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: 7, Flavor: "mysql", Host: "db", Port: 3306,
			User: "repl", Password: "hunter2", Logger: l}).Close()
		out := buf.String()
		require.Equal(t, tc.wantConfig, bytes.Contains(buf.Bytes(), []byte("create BinlogSyncer")), "level %s:\n%s", tc.level, out)
		if tc.wantConfig {
			require.Contains(t, out, `level=DEBUG msg="create BinlogSyncer" component=wave lib=go-mysql config=`)
			require.Contains(t, out, `level=DEBUG msg="syncer is closing..." component=wave lib=go-mysql`)
		}
		require.Equal(t, tc.wantConfig, bytes.Contains(buf.Bytes(), []byte("syncer is closing")), "level %s:\n%s", tc.level, out)
		require.NotContains(t, out, "hunter2")
	}
}

func TestGoMySQLLevels(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		msg   string
		want  string // "" when not logged at INFO
	}{
		{slog.LevelInfo, "Connected to server", "level=INFO"},
		{slog.LevelInfo, "rotate to next binlog", ""},
		{slog.LevelInfo, "syncer is closed", ""},
		{slog.LevelWarn, "retry sync is disabled", ""}, // every reconnect: the capture says what it does
		{slog.LevelWarn, "could not close connection", "level=WARN"},
		{slog.LevelError, "io.ReadFull(header) failed. err EOF", "level=WARN"},
		{slog.LevelDebug, "anything", ""},
	} {
		var buf bytes.Buffer
		l := goMySQLLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "")
		l.Log(t.Context(), tc.level, tc.msg)
		if tc.want == "" {
			require.Empty(t, buf.String(), "%s %q", tc.level, tc.msg)
			continue
		}
		require.Contains(t, buf.String(), tc.want+` msg="`, "%s %q", tc.level, tc.msg)
		require.Contains(t, buf.String(), "lib=go-mysql")
	}
}
