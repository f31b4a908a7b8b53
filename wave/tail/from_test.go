package tail_test

import (
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/tail"
)

func TestParseFrom(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 0, 0, 5e8, time.FixedZone("", 3600))
	for in, want := range map[string]bus.From{
		"start":                       {Kind: bus.FromOldest},
		"end":                         {Kind: bus.FromNewest},
		"42":                          {Kind: bus.FromOffset, N: 42},
		"0":                           {Kind: bus.FromOffset},
		"-10":                         {Kind: bus.FromLast, N: 10},
		"2026-11-29T14:00:00.5+01:00": {Kind: bus.FromTime, Time: at},
		"2026-11-29T13:00:00.500000Z": {Kind: bus.FromTime, Time: at.UTC()},
	} {
		got, err := tail.ParseFrom(in)
		if err != nil || got.Kind != want.Kind || got.N != want.N || !got.Time.Equal(want.Time) {
			t.Errorf("ParseFrom(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "oldest", "beginning", "2026-11-29", "1e3", "-x"} {
		if _, err := tail.ParseFrom(in); err == nil || err.Error() != `-from "`+in+`": want start, end, an offset (42), -N for the last N messages of each partition, or a time (2026-11-29T14:00:00Z)` {
			t.Errorf("ParseFrom(%q): %v", in, err)
		}
	}
}
