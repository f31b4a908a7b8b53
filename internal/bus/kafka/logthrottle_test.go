package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/logging"
)

func TestKafkaGoWarningsAreThrottled(t *testing.T) {
	var out bytes.Buffer
	b := &Bus{log: slog.New(slog.NewTextHandler(&out, nil)), warns: &logging.Throttle{Every: warnEvery}}
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
