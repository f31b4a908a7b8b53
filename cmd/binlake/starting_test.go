//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaveAnswersWhileWaitingForZooKeeper: a wave whose ZooKeeper does not answer waits
// for it; meanwhile its HTTP address answers /healthz with 503, "starting", and what it
// waits for (it refused connections, as a dead wave's does). Stopped, it frees the
// address.
func TestWaveAnswersWhileWaitingForZooKeeper(t *testing.T) {
	t.Chdir(t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := filepath.Join(t.TempDir(), "wave.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(
		"node: w1\nhttp: {listen: %q}\ncoordinator: {kind: zk, servers: [\"127.0.0.1:1\"], root: /binlake}\nsink: {kind: stdout}\n", addr)), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	var out, errOut bytes.Buffer
	go func() {
		ended <- run(ctx, []string{"wave", "--config", cfg}, &out, &errOut)
	}()

	var resp *http.Response
	require.Eventually(t, func() bool {
		resp, err = http.Get("http://" + addr + "/healthz")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the wave's address never answered while it waited")
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var got map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, map[string]string{"status": "starting", "node": "w1", "waiting_for": "coordinator"}, got)

	cancel()
	select {
	case err := <-ended:
		require.ErrorContains(t, err, "no session")
	case <-time.After(10 * time.Second):
		t.Fatal("the wave did not stop while waiting for ZooKeeper")
	}
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err, "the address is still held after the wave stopped")
	ln.Close()
}
