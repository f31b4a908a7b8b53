package benchkit

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a ')' is skipped whole; utime 250 + stime 50 ticks.
	line := "4242 (binlake (judge) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 9 0 100 0 0\n"
	got, err := ParseProcStat([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseProcStat = %s, %v; want 3s", got, err)
	}
	for _, bad := range []string{"", "4242 binlake S 1", "4242 (binlake) S 1 2 3", "4242 (b) S 1 2 3 4 5 6 7 8 9 10 x 50 0"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 7 3 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("1 (a) b) S"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if d, err := ParseProcStat(data); err == nil && d < 0 {
			t.Fatalf("negative CPU time %s from %q", d, data)
		}
	})
}
