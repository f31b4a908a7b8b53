//go:build !agentonly

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv"
)

// On Ctrl-C up says it is stopping before any part does, and each part's "stopping"
// line comes before its "stopped" line (the agent logged only "stopped", and before up's
// own line).
func TestUpStopLinesInOrder(t *testing.T) {
	var log testenv.SyncBuffer
	const stopping = "stopping: sources first, then judge and alarm"
	// up's line is written late: the parts must not begin to stop before it is out.
	logger := testenv.DelayLogger(&log, func(msg string) bool { return msg == stopping })
	s := startUp(t, upOptions{DataDir: t.TempDir(), Node: "n", Logger: logger})
	require.NoError(t, s.stop(t))
	out := log.String()
	up := strings.Index(out, `msg="`+stopping+`"`)
	require.GreaterOrEqual(t, up, 0, out)
	for _, role := range []string{"agent", "judge", "alarm"} {
		testenv.RequireStopLines(t, out, role)
		require.Less(t, up, strings.Index(out, `msg="`+role+` stopping"`), "up's line first:\n%s", out)
	}
	require.Less(t, strings.Index(out, `msg="agent stopped"`), strings.Index(out, `msg="judge stopping"`), "the sources stop before the sinks:\n%s", out)
}
