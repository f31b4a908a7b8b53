package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv"
)

// The agent logs "agent stopping" as it begins to stop (it logged only "agent stopped"),
// before "agent stopped".
func TestRunLogsStopLinesInOrder(t *testing.T) {
	var log testenv.SyncBuffer
	a, err := New(Options{Config: testConfig(), Sink: NewHTTPSink("http://127.0.0.1:1/v1/metrics", "", nil), Logger: testenv.StopOrderLogger(&log)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, a.Run(ctx))
	require.NoError(t, a.Close())
	testenv.RequireStopLines(t, log.String(), "agent")
}
