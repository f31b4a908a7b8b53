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

// TestRolesAnswerWhileWaiting: a role whose ZooKeeper or Kafka does not answer at its
// start waits for it; meanwhile its HTTP address answers /healthz with 503, "starting",
// and what it waits for (it refused connections, as a dead process's does). Stopped, it
// frees the address.
func TestRolesAnswerWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		role, yaml string // yaml: the config, %q its listen address
		want       map[string]string
	}{
		{"wave", "node: w1\nhttp: {listen: %q}\ncoordinator: {kind: zk, servers: [\"127.0.0.1:1\"], root: /binlake}\nsink: {kind: stdout}\n",
			map[string]string{"status": "starting", "node": "w1", "waiting_for": "coordinator"}},
		{"judge", "http: {listen: %q}\nbus: {kind: kafka, brokers: [\"127.0.0.1:1\"]}\n",
			map[string]string{"status": "starting", "waiting_for": "bus"}},
		{"alarm", "http: {listen: %q}\nbus: {kind: kafka, brokers: [\"127.0.0.1:1\"]}\nchannels: {l: {kind: log}}\n",
			map[string]string{"status": "starting", "waiting_for": "bus"}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			t.Chdir(t.TempDir()) // what a role writes (./data) stays here
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := ln.Addr().String()
			require.NoError(t, ln.Close())
			cfg := filepath.Join(t.TempDir(), tc.role+".yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(tc.yaml, addr)), 0o600))
			args := []string{tc.role, "--config", cfg}
			if tc.role == "alarm" {
				pol := filepath.Join(t.TempDir(), "policies.yaml")
				require.NoError(t, os.WriteFile(pol, []byte("policies:\n  - {name: dead, nodata: 3, severity: P1, channels: [l]}\n"), 0o600))
				args = append(args, "--policies", pol)
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ended := make(chan error, 1)
			var out, errOut bytes.Buffer
			go func() { ended <- run(ctx, args, &out, &errOut) }()

			// The alarm says "coordinator" for the moment its single-file coordinator
			// takes to open, then "bus": the answer is awaited, not its first.
			var (
				got        map[string]string
				status     int
				retryAfter string
			)
			require.Eventually(t, func() bool {
				resp, err := http.Get("http://" + addr + "/healthz")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				status, retryAfter, got = resp.StatusCode, resp.Header.Get("Retry-After"), nil
				return json.NewDecoder(resp.Body).Decode(&got) == nil && got["waiting_for"] == tc.want["waiting_for"]
			}, 10*time.Second, 20*time.Millisecond, "the address never answered what the %s waits for", tc.role)
			require.Equal(t, http.StatusServiceUnavailable, status)
			require.Equal(t, "5", retryAfter)
			require.Equal(t, tc.want, got)

			cancel()
			select {
			case err := <-ended:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second):
				t.Fatalf("the %s did not stop while it waited", tc.role)
			}
			ln, err = net.Listen("tcp", addr)
			require.NoError(t, err, "the address is still held after the %s stopped", tc.role)
			ln.Close()
		})
	}
}
