//go:build !agentonly

package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv"
)

// -judge-http 0 picks a free port, as its help says, on 127.0.0.1 like up's defaults:
// it failed with "missing port in address", and ":0" bound every interface.
func TestUpPortAloneListensOnLoopback(t *testing.T) {
	var out, errOut testenv.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"up", "-data", t.TempDir(), "-judge-http", "0", "-alarm-http", "0"}, &out, &errOut)
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "Ctrl-C stops it"); {
		select {
		case err := <-done:
			t.Fatalf("up: %v\n%s", err, errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "up not serving after 30s:\n%s", errOut.String())
	}
	cancel()
	require.NoError(t, <-done)
	require.Regexp(t, regexp.MustCompile(`(?m)^  status page  http://127\.0\.0\.1:[1-9][0-9]*/$`), out.String())
	require.Regexp(t, regexp.MustCompile(`(?m)^  alarm API    http://127\.0\.0\.1:[1-9][0-9]*/v1/alerts$`), out.String())
}

func TestUpListenFlag(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"0", "127.0.0.1:0", ""},
		{"8080", "127.0.0.1:8080", ""},
		{":0", ":0", ""}, // every interface, as written
		{"[::1]:9", "[::1]:9", ""},
		{"80911", "", `bad -judge-http: "127.0.0.1:80911": port "80911": want a number from 0 to 65535 (0 picks a free one)`},
		{"localhost", "", `bad -judge-http: "localhost": want host:port, e.g. 127.0.0.1:8090 (port 0 picks a free one)`},
	} {
		got, err := upListen("-judge-http", tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

// up gives its alarm the URL it is reached at on this machine, for notifications' links
// (an Alertmanager's generatorURL); none for a port picked at start.
func TestUpExternalURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8092": "http://127.0.0.1:8092",
		":8092":          "http://127.0.0.1:8092",
		"0.0.0.0:8092":   "http://127.0.0.1:8092",
		"[::1]:8092":     "http://[::1]:8092",
		"alarm-1:8092":   "http://alarm-1:8092",
		"127.0.0.1:0":    "",
	} {
		if got := upExternalURL(listen); got != want {
			t.Errorf("upExternalURL(%q) = %q, want %q", listen, got, want)
		}
	}
}

// -mysql given empty (-mysql "$DSN", DSN unset) is refused: up started without a
// capture, and without a word.
func TestUpRefusesAnEmptyMySQL(t *testing.T) {
	var out, errOut testenv.SyncBuffer
	err := run(context.Background(), []string{"up", "-data", t.TempDir(), "-mysql", " "}, &out, &errOut)
	require.Error(t, err)
	require.Contains(t, err.Error(), "-mysql is empty (an unset variable?)")
	require.NotContains(t, out.String(), "Ctrl-C stops it")
}
