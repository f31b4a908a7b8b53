package cluster

import (
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// TestWaveMembersAbsence: a wave seen alive and then gone is absent since it left, and
// dead at once for the balancer unless it stopped cleanly (then a grace after it left);
// a wave never seen alive is absent since the watch
// began, and dead only a grace later; a live one is neither.
func TestWaveMembersAbsence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMembers(t0)
	gen0, ch := m.Changes()
	m.Apply([]coord.Member{{ID: "a"}, {ID: "b"}}, t0.Add(time.Second))
	select {
	case <-ch:
	default:
		t.Fatal("applying a member list did not close the change channel")
	}
	m.Apply([]coord.Member{{ID: "a"}}, t0.Add(3*time.Second))
	if gen, _ := m.Changes(); gen != gen0+2 {
		t.Errorf("generation %d after two lists, want %d", gen, gen0+2)
	}
	grace := 5 * time.Second
	for _, tc := range []struct {
		node string
		want Absence
		dead time.Time
	}{
		{"a", Absence{Live: true}, time.Time{}},
		{"b", Absence{Seen: true, Since: t0.Add(3 * time.Second)}, t0.Add(3 * time.Second)},
		{"c", Absence{Since: t0}, t0.Add(grace)},
	} {
		got := m.Absence(tc.node)
		if got != tc.want {
			t.Errorf("absence(%s) = %+v, want %+v", tc.node, got, tc.want)
		}
		if d := got.DeadAt(grace); !d.Equal(tc.dead) {
			t.Errorf("absence(%s).deadAt = %v, want %v", tc.node, d, tc.dead)
		}
	}
	stopped := m.Absence("b")
	stopped.Stopped = true
	if d, want := stopped.DeadAt(grace), t0.Add(3*time.Second+grace); !d.Equal(want) {
		t.Errorf("a wave that left after a clean stop is dead at %v, want %v (a grace after it left)", d, want)
	}
	// Back: live again, no longer counted as left.
	m.Apply([]coord.Member{{ID: "a"}, {ID: "b"}}, t0.Add(4*time.Second))
	if got := m.Absence("b"); got != (Absence{Live: true}) {
		t.Errorf("absence(b) after it came back = %+v, want live", got)
	}
}
