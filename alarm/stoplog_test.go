package alarm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
)

// "alarm stopping" comes before "alarm stopped", even when the goroutine that logs it is
// scheduled late.
func TestRunLogsStopLinesInOrder(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	var log testenv.SyncBuffer
	logger := testenv.StopOrderLogger(&log)
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Coordinator: c, Logger: logger,
		Channels: map[string]notify.Notifier{"c": notify.Log{L: logger}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, a.Run(ctx))
	testenv.RequireStopLines(t, log.String(), "alarm")
}
