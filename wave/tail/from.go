package tail

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// ParseFrom reads -from: start (the oldest message kept), end (only new ones), an offset
// (42), -N (the last N messages of each partition) or an RFC 3339 time (the first message
// at or after it).
func ParseFrom(s string) (bus.From, error) {
	switch s {
	case "start":
		return bus.From{Kind: bus.FromOldest}, nil
	case "end":
		return bus.From{Kind: bus.FromNewest}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if strings.HasPrefix(s, "-") {
			return bus.From{Kind: bus.FromLast, N: -n}, nil
		}
		return bus.From{Kind: bus.FromOffset, N: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return bus.From{Kind: bus.FromTime, Time: t}, nil
	}
	return bus.From{}, fmt.Errorf("-from %q: want start, end, an offset (42), -N for the last N messages of each partition, or a time (2026-11-29T14:00:00Z)", s)
}
