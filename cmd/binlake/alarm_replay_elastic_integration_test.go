//go:build !agentonly

package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store/elastic"
)

// `binlake alarm test -judge-config` on a judge whose store is Elasticsearch replays the
// history stored there (the test engine, indices of a prefix of its own) to the same
// alerts as the same history in SQLite or a recorded stream.
func TestAlarmTestOnElasticsearchIntegration(t *testing.T) {
	addr, prefix := fillElastic(t, testHistory())
	out, errOut, err := alarmTestOnElastic(t, addr, prefix)
	require.NoError(t, err, errOut)
	require.Empty(t, errOut)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Equal(t, wantTable, lines[:len(lines)-1])
	require.Equal(t, "replayed 51 batches of 2 nodes from elastic "+addr+
		" (2026-11-29T14:00:00Z to 2026-11-29T14:04:50Z) through 3 policies: 3 alerts fired, 2 resolved, 1 still firing at the end; 5 notifications would have been sent",
		lines[len(lines)-1])
}

// The points a judge wrote within its refresh_interval are replayed too: the replay
// refreshes the indices first (a live agent at a 2 s interval read "still firing"
// agent-dead, its last 10 s of points not yet searchable).
func TestAlarmTestOnElasticsearchSeesUnrefreshedPointsIntegration(t *testing.T) {
	addr, prefix := writeElastic(t, testHistory(), false)
	out, errOut, err := alarmTestOnElastic(t, addr, prefix)
	require.NoError(t, err, errOut)
	require.Empty(t, errOut)
	require.Contains(t, out, "replayed 51 batches of 2 nodes")
}

// alarmTestOnElastic runs `binlake alarm test` on testHistory's five minutes through a
// judge config whose store is the engine's indices of prefix.
func alarmTestOnElastic(t *testing.T, addr, prefix string) (out, errOut string, err error) {
	cfg := tempFile(t, "judge.yaml", `node: judge-1
bus:
  kind: none
store:
  kind: elastic
  elastic:
    addresses: [`+addr+`]
    prefix: `+prefix+`
`)
	pol := tempFile(t, "policies.yaml", testPolicies)
	return runCmd(t, "alarm", "test", "-policies", pol, "-judge-config", cfg,
		"-from", "2026-11-29T14:00:00Z", "-to", "2026-11-29T14:05:00Z")
}

// fillElastic writes batches into an Elasticsearch store on the test engine, as the
// judge does, under a prefix of their own (removed at the end), and makes them
// searchable. It returns the engine's first address and the prefix.
func fillElastic(t *testing.T, batches []metric.Batch) (addr, prefix string) {
	return writeElastic(t, batches, true)
}

// writeElastic is fillElastic, refreshing the indices or not (the judge's
// refresh_interval, 10 s, would).
func writeElastic(t *testing.T, batches []metric.Batch, refresh bool) (addr, prefix string) {
	t.Helper()
	addr = strings.Split(testenv.Require(t, testenv.Elasticsearch), ",")[0]
	prefix = fmt.Sprintf("binlake-test-%08x-metrics-", rand.Uint32())
	estest.CleanupPrefix(t, prefix)
	st, err := elastic.New(elastic.Options{Config: estest.Config(t), Prefix: prefix})
	require.NoError(t, err)
	defer st.Close()
	ctx := testenv.Context(t)
	require.NoError(t, st.Write(ctx, storePoints(batches)))
	if refresh {
		require.NoError(t, st.Refresh(ctx))
	}
	return addr, prefix
}
