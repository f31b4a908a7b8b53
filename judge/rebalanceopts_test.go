package judge

import (
	"slices"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/api"
)

// TestGoalsLevelNow: in utilisation the plans level now, this hour and the next (the
// load view's slots: 0, then 1 + each UTC hour), wrapping at midnight; in rows/s,
// whose loads have one slot, nothing.
func TestGoalsLevelNow(t *testing.T) {
	o := DefaultRebalanceOptions()
	for _, c := range []struct {
		at   time.Time
		want []int
	}{
		{time.Date(2026, 1, 5, 12, 40, 0, 0, time.UTC), []int{0, 13, 14}},
		{time.Date(2026, 1, 5, 23, 5, 0, 0, time.UTC), []int{0, 24, 1}},
		{time.Date(2026, 1, 5, 1, 5, 0, 0, time.FixedZone("CET", 3600)), []int{0, 1, 2}}, // 00:05 UTC
	} {
		if got := o.goals(api.ModelUtilisation, c.at).LevelNow; !slices.Equal(got, c.want) {
			t.Errorf("at %s: LevelNow %v, want %v", c.at, got, c.want)
		}
	}
	if got := o.goals(api.ModelRows, time.Now()).LevelNow; got != nil {
		t.Errorf("rows model: LevelNow %v, want none", got)
	}
}
