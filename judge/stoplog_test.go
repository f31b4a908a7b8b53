package judge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv"
)

// "judge stopping" comes before "judge stopped", even when the goroutine that logs it is
// scheduled late.
func TestRunLogsStopLinesInOrder(t *testing.T) {
	var log testenv.SyncBuffer
	j, err := New(Options{Store: openStore(t), Logger: testenv.StopOrderLogger(&log)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, j.Run(ctx))
	testenv.RequireStopLines(t, log.String(), "judge")
}
