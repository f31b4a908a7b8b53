package capture

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"
)

// go-mysql logs its whole config struct at INFO as a syncer is made: at INFO it must not
// show; at DEBUG it does, with the password hidden. Its other lines keep their level.
func TestGoMySQLLoggerConfigAtDebug(t *testing.T) {
	for _, tc := range []struct {
		level      slog.Level
		wantConfig bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		var buf bytes.Buffer
		l := goMySQLLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})), "hunter2")
		// What NewBinlogSyncer logs, through the logger the capture gives it.
		replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: 7, Flavor: "mysql", Host: "db", Port: 3306,
			User: "repl", Password: "hunter2", Logger: l}).Close()
		out := buf.String()
		require.Equal(t, tc.wantConfig, bytes.Contains(buf.Bytes(), []byte("create BinlogSyncer")), "level %s:\n%s", tc.level, out)
		if tc.wantConfig {
			require.Contains(t, out, `level=DEBUG msg="create BinlogSyncer" component=go-mysql config=`)
		}
		require.Contains(t, out, `level=INFO msg="syncer is closing..." component=go-mysql`)
		require.NotContains(t, out, "hunter2")
	}
}
