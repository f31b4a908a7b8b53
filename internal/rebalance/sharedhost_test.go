package rebalance

import (
	"strings"
	"testing"
)

// sharing puts waves on host (each capacity cap, base its share of the host's other
// work).
func sharing(host string, cap, base float64, nodes ...string) []Wave {
	out := make([]Wave, len(nodes))
	for i, n := range nodes {
		out[i] = Wave{Node: n, Alive: true, Capacity: cap, Base: base, Host: host}
	}
	return out
}

// The hard threshold holds hosts, not shares of one (sharedhost.go).
func TestHardThresholdHoldsSharedHosts(t *testing.T) {
	hardMoves := func(p Plan) []Move {
		var out []Move
		for _, m := range p.Moves {
			if m.Reason == ReasonHardMax {
				out = append(out, m)
			}
		}
		return out
	}
	goals := Goals{HardMax: 0.7, Band: 1, NoShare: true}

	t.Run("one host over the threshold", func(t *testing.T) {
		// Three shares of 2/3 core, each with a third of the host's other work (0.3):
		// a and b at 0.84 of their shares, c at 0.54, the host at 0.74. A move from a
		// to c would bring a under 0.7 and leave the host where it is.
		waves := sharing("vm1", 2.0/3, 0.3, "a", "b", "c")
		insts := append(append(costs("a", 0.13, 0.13), costs("b", 0.13, 0.13)...), costs("c", 0.06)...)
		p := Make(waves, insts, goals, now)
		if hm := hardMoves(p); len(hm) > 0 {
			t.Fatalf("hard_max moves between waves of one host: %+v", hm)
		}
		if !strings.Contains(p.Unmet, "every live wave runs on it") {
			t.Errorf("unmet %q: want it to say the host is shared by every wave", p.Unmet)
		}
		// Before: two hard_max moves onto c.
		for i := range waves {
			waves[i].Host = ""
		}
		if hm := hardMoves(Make(waves, insts, goals, now)); len(hm) == 0 {
			t.Errorf("without the host named the shares over 0.7 moved nothing: the test no longer tells")
		}
	})

	t.Run("a host over, another with room", func(t *testing.T) {
		waves := append(sharing("vm1", 1, 0.3, "a", "b"), Wave{Node: "solo", Alive: true, Capacity: 2})
		insts := append(append(costs("a", 0.3, 0.2), costs("b", 0.3, 0.1)...), costs("solo", 0.2)...)
		p := Make(waves, insts, goals, now)
		hm := hardMoves(p)
		if len(hm) == 0 {
			t.Fatalf("the host at 0.9 shed nothing (moves %+v, unmet %q)", p.Moves, p.Unmet)
		}
		for _, m := range hm {
			if m.To != "solo" {
				t.Errorf("hard_max move %+v: want it off the host, to solo", m)
			}
		}
		if !p.Balanced {
			t.Errorf("unmet %q", p.Unmet)
		}
		a, b := p.After["a"], p.After["b"]
		if host := (a + b) / 2; host > 0.7+1e-9 {
			t.Errorf("the host after the plan at %.3f, over 0.7", host)
		}
	})

	t.Run("a share over, its host under, another host with room", func(t *testing.T) {
		// a's 4-core share holds one large instance (1.6 cores) and sixteen small ones
		// (0.1) at 0.825, its host-mate b at 0.4, the host at 0.61; three hosts of their
		// own at 0.325. The large one fits on no wave as it is, and the lines' steps,
		// each to lower a by a gain no small one gives, shed the small ones one by one
		// (17 moves). The threshold's step, off the host and as a move of the lines,
		// evicts the large one to a host that then sheds one to make room.
		waves := append(sharing("vm1", 4, 0.1, "a", "b"),
			Wave{Node: "s1", Alive: true, Capacity: 4, Base: 0.1}, Wave{Node: "s2", Alive: true, Capacity: 4, Base: 0.1},
			Wave{Node: "s3", Alive: true, Capacity: 4, Base: 0.1})
		small := make([]float64, 16)
		for i := range small {
			small[i] = 0.1
		}
		insts := append(costs("a", append([]float64{1.6}, small...)...), costs("b", 1.5)...)
		for _, n := range []string{"s1", "s2", "s3"} {
			insts = append(insts, costs(n, 0.3, 0.3, 0.3, 0.3)...)
		}
		p := Make(waves, insts, Goals{HardMax: 0.7, Band: 0.03, LevelGain: 0.01, Enough: 1.08, LevelNow: []int{0}, NoShare: true}, now)
		if len(p.Moves) == 0 || p.Moves[0].Instance != "a-0" || p.Moves[0].To == "b" || p.Moves[0].Reason != ReasonSpread {
			t.Fatalf("moves %+v: want the large instance a-0 off the host first, as a spread move", p.Moves)
		}
		if hm := hardMoves(p); len(hm) > 1 || len(hm) == 1 && hm[0].From != p.Moves[0].To {
			t.Errorf("hard_max moves %+v: want at most one, off the wave a-0 went to", hm)
		}
		if len(p.Moves) > 8 {
			t.Errorf("%d moves %+v: want the large one's and a few more, not the small ones one by one", len(p.Moves), p.Moves)
		}
	})

	t.Run("a share over, its host under", func(t *testing.T) {
		// a at 0.9 of its share, b at 0.2: the host at 0.55 starves nobody. The band
		// evens the shares; the hard threshold has nothing to do.
		waves := sharing("vm1", 1, 0.1, "a", "b")
		insts := append(costs("a", 0.4, 0.4), costs("b", 0.1)...)
		p := Make(waves, insts, Goals{HardMax: 0.7, Band: 0.3, NoShare: true}, now)
		if hm := hardMoves(p); len(hm) > 0 {
			t.Errorf("hard_max moves on a host under the threshold: %+v", hm)
		}
		if len(p.Moves) != 1 || p.Moves[0].Reason != ReasonSpread || p.Moves[0].To != "b" {
			t.Errorf("moves %+v: want one spread move from a to b", p.Moves)
		}
	})
}
