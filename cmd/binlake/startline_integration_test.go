//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv"
)

// The wave says in one start-up line where everything it talks to is: its HTTP address,
// its ZooKeeper servers and root, its Kafka brokers and the judge (it named none of them).
func TestWaveStartLineNamesEveryEndpointIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	zk := testenv.Require(t, testenv.ZooKeeper)
	brokers := testenv.Require(t, testenv.Kafka)
	root := fmt.Sprintf("/startline-test-%d", time.Now().UnixNano())
	base := fmt.Sprintf("node: w-startline\nhttp: {listen: \"127.0.0.1:0\"}\ncoordinator: {kind: zk, servers: [%s], root: %s}\n"+
		"sink: {kind: kafka, kafka: {brokers: [%s]}}\n", zk, root, brokers)
	t.Run("with a judge", func(t *testing.T) {
		cfg, log := runWaveUntilRunning(t, base+"balancer: {judge: \"http://127.0.0.1:1\"}\n")
		line := startLine(t, log)
		for _, want := range []string{
			`config=` + cfg, `node=w-startline`, `listen=http://127.0.0.1:0`,
			`coordinator="zk ` + zk + ` root ` + root + `"`, `sink="kafka ` + brokers + `"`, `judge=http://127.0.0.1:1`,
		} {
			require.Contains(t, line, want, "the start-up line")
		}
		stopping, stopped := strings.Index(log, `msg="wave stopping"`), strings.Index(log, `msg="wave stopped"`)
		require.True(t, stopping >= 0 && stopped > stopping, "the stop lines, in order:\n%s", log)
	})
	t.Run("without a judge", func(t *testing.T) {
		_, log := runWaveUntilRunning(t, base)
		require.Contains(t, startLine(t, log), "judge=none")
		require.Contains(t, log, `planner="none: a dead wave's instances go to the waves with the fewest"`, "no judge, no planner")
	})
}

// startLine is the one "wave starting" line of log.
func startLine(t *testing.T, log string) string {
	t.Helper()
	lines := regexp.MustCompile(`(?m)^.*msg="wave starting".*$`).FindAllString(log, -1)
	require.Len(t, lines, 1, log)
	return lines[0]
}

// runWaveUntilRunning runs `binlake wave` on the config yaml until it balances (its
// balancer says how), stops it, and returns the config's path and the wave's log.
func runWaveUntilRunning(t *testing.T, yaml string) (cfg, log string) {
	cfg = filepath.Join(t.TempDir(), "wave.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(yaml), 0o600))
	var out, errOut testenv.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"wave", "--config", cfg}, &out, &errOut) }()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(errOut.String(), `msg="this wave balances the cluster"`); {
		select {
		case err := <-done:
			t.Fatalf("wave: %v\n%s", err, errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the wave is not balancing after 60s:\n%s", errOut.String())
	}
	cancel()
	require.NoError(t, <-done)
	return cfg, errOut.String()
}

// The wave says what it is starting before anything opens: a coordinator that cannot
// be opened (here a damaged single-node file) fails a wave whose log already named it.
// (The judge and the alarm log theirs first too.)
func TestWaveStartLineBeforeItsCoordinatorOpens(t *testing.T) {
	dir := t.TempDir()
	coordFile := filepath.Join(dir, "coord.json")
	require.NoError(t, os.WriteFile(coordFile, []byte("garbage{"), 0o600))
	cfg := tempFile(t, "wave.yaml", "node: w1\nhttp: {listen: \"127.0.0.1:0\"}\n"+
		"coordinator: {kind: single, path: "+coordFile+"}\nsink: {kind: stdout}\n")
	_, errOut, err := runCmd(t, "wave", "-config", cfg)
	require.ErrorContains(t, err, "is not a coordinator file")
	line := startLine(t, errOut)
	require.Contains(t, line, `coordinator="single `+coordFile+`"`)
	require.Contains(t, line, `sink=stdout`)
}
