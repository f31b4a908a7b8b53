package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestThrottleOneLineOfAKindPerInterval(t *testing.T) {
	th := newThrottle()
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		kind string
		at   time.Duration
		ok   bool
		held int
	}{
		{"dial %s", 0, true, 0},
		{"dial %s", time.Second, false, 0},
		{"read %s", time.Second, true, 0}, // another kind is its own
		{"dial %s", 2 * time.Second, false, 0},
		{"dial %s", warnEvery, true, 2},
		{"dial %s", warnEvery + time.Second, false, 0},
		{"read %s", 2 * warnEvery, true, 0},
	} {
		ok, held := th.allow(tc.kind, t0.Add(tc.at))
		require.Equal(t, tc.ok, ok, "%q at %s", tc.kind, tc.at)
		require.Equal(t, tc.held, held, "%q at %s", tc.kind, tc.at)
	}
}

func TestKafkaGoWarningsAreThrottled(t *testing.T) {
	var out bytes.Buffer
	b := &Bus{log: slog.New(slog.NewTextHandler(&out, nil)), warns: newThrottle()}
	_, errs := b.loggers()
	for range 5 {
		errs.Printf("failed to dial %s: connection refused", "127.0.0.1:9092")
	}
	errs.Printf("kafka reader failed to fetch offset")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	require.Contains(t, lines[0], `msg="failed to dial 127.0.0.1:9092: connection refused" lib=kafka-go`)
	require.Equal(t, 1, strings.Count(lines[0], "msg="), "one message key: %s", lines[0])
	require.Contains(t, lines[1], "failed to fetch offset")
}
