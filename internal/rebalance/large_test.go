package rebalance

import (
	"strings"
	"testing"
)

// TestEvictBeforeShedding: hot runs a large instance (0.6) and ten small ones (0.03), 0.9
// against a hard threshold of 0.7; the large one fits on no other wave as it is (each
// at 0.3). Shedding the small ones takes seven moves; moving the large one to a wave and
// two of that wave's instances off it, three: the plan takes the three.
func TestEvictBeforeShedding(t *testing.T) {
	insts := costs("hot", 0.6, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03)
	for _, n := range []string{"a", "b", "c"} {
		insts = append(insts, costs(n, 0.1, 0.1, 0.1)...)
	}
	p := Make(unitWaves("hot", "a", "b", "c"), insts, Goals{HardMax: 0.7, Band: 0.5, NoShare: true}, now)
	if !p.Balanced {
		t.Fatalf("plan %+v: want balanced", p)
	}
	if len(p.Moves) > 3 || p.Moves[0].Instance != "hot-0" {
		t.Errorf("moves %+v: want the large instance first and at most three moves", p.Moves)
	}
}

// TestHeldByLargeSetAside: g runs a large instance (0.5, as much on any wave) and three
// small ones (0.01): its peak, 0.53, is within the band (0.05) of where the large one
// alone would stand, and that more than the band above the others' 0.3. Moving the
// small ones off would lower the highest wave by a point a move and never into the
// band: the spread goal sets g aside at once.
func TestHeldByLargeSetAside(t *testing.T) {
	insts := append(costs("g", 0.5, 0.01, 0.01, 0.01), costs("a", 0.1, 0.1, 0.1)...)
	insts = append(insts, costs("b", 0.1, 0.1, 0.1)...)
	p := Make(unitWaves("g", "a", "b"), insts, Goals{HardMax: 0.9, Band: 0.05, NoShare: true}, now)
	if len(p.Moves) != 0 {
		t.Errorf("moves %+v: want none (g is held up by its large instance)", p.Moves)
	}
	if !strings.Contains(p.Unmet, "g cannot come down") {
		t.Errorf("unmet %q: want it to name g as set aside", p.Unmet)
	}
	// Where its floor is within the band of the lowest (the others at 0.47), moving a
	// small one off meets the band, and it moves.
	insts = append(costs("g", 0.5, 0.01, 0.01, 0.01), costs("a", 0.2, 0.27)...)
	insts = append(insts, costs("b", 0.2, 0.27)...)
	if p := Make(unitWaves("g", "a", "b"), insts, Goals{HardMax: 0.9, Band: 0.05, NoShare: true}, now); len(p.Moves) == 0 || !p.Balanced {
		t.Errorf("g's floor within the band of the lowest: plan %+v: want small instances moved, balanced", p)
	}
	// Its floor more than the band above the lowest (0.31 against 0.07 and a band of
	// 0.2) but not above the level (0.245): moving its small one raises the lowest into
	// the band, and it moves.
	insts = append(costs("g", 0.31, 0.11), costs("a", 0.07)...)
	if p := Make(unitWaves("g", "a"), insts, Goals{HardMax: 0.9, Band: 0.2, NoShare: true}, now); len(p.Moves) != 1 || !p.Balanced {
		t.Errorf("g's floor within the band of the level: plan %+v: want its small instance moved, balanced", p)
	}
	// Beyond the band of its floor the small ones do move: g at 0.6 with ten of them.
	insts = append(costs("g", 0.5, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01), costs("a", 0.1, 0.1, 0.1)...)
	insts = append(insts, costs("b", 0.1, 0.1, 0.1)...)
	if p := Make(unitWaves("g", "a", "b"), insts, Goals{HardMax: 0.9, Band: 0.05, NoShare: true}, now); len(p.Moves) == 0 || p.After["g"] > 0.55+1e-9 {
		t.Errorf("g at 0.6, its floor 0.5: plan %+v: want small instances moved until it is within the band of 0.5", p)
	}
}

// TestUnmetSaysWhyPlainly: a goal a plan cannot meet says why in the fleet's own terms:
// a wave over the hard threshold that is the only live one is not held by "instances too
// large for any other wave", and a wave at the top of the spread that runs no instance
// is held by its own load, not by pinned, cooling or large instances (an outside trial
// read both).
func TestUnmetSaysWhyPlainly(t *testing.T) {
	p := Make(unitWaves("solo"), costs("solo", 0.3, 0.3, 0.3), Goals{HardMax: 0.7, Band: 0.2, NoShare: true}, now)
	if !strings.Contains(p.Unmet, "hard_max: solo is at 0.9") || !strings.Contains(p.Unmet, "(it is the only live wave)") {
		t.Errorf("one live wave over the threshold: unmet %q, want it to say it is the only live wave", p.Unmet)
	}
	waves := unitWaves("idle", "a")
	waves[0].Base = 0.6 // the host's other work
	p = Make(waves, costs("a", 0.1), Goals{HardMax: 0.9, Band: 0.2, NoShare: true}, now)
	if !strings.Contains(p.Unmet, "idle cannot come down (it runs no instance") || strings.Contains(p.Unmet, "pinned") {
		t.Errorf("an idle wave over the band: unmet %q, want its own load named, not pinned or cooling instances", p.Unmet)
	}
}
