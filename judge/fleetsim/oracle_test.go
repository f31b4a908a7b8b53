//go:build !race

package fleetsim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/rebalance"
)

// TestPlannerOnTrueCosts separates the judge's planner from its learned model: the
// planner (internal/rebalance, the judge's goals and slots: now, then each hour of the
// day, with the window of now, this hour and the next) is given every wave's true prices
// and every instance's true work, and its plans are applied round by round as a balancer
// would. It must bring the load now and the daily peaks within 1.10× the greedy
// reference's at once in no more moves than the descent reference on the same joint
// measure needs (plus one in twenty), moving few instances twice on the way. What the
// judge needs beyond that in `binlake bench fleet` is the price of learning the costs
// (BENCHMARKS.md). Not under -race (the large fleet's plans of 5,000 instances): `make
// test` runs it in its second pass.
func TestPlannerOnTrueCosts(t *testing.T) {
	for _, name := range []string{"hetero", "large", "homogeneous"} {
		t.Run(name, func(t *testing.T) {
			o, err := Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Generate(o)
			if err != nil {
				t.Fatal(err)
			}
			moves, end := planTruly(t, f, o.Now, priceMiss{})
			h, gNow, gDay, j := jointAtEnd(f, moves, end)
			got, d := j.JudgeMovesToTarget, j.Descent.MovesToTarget
			t.Logf("%s: %d moves, %d to ≤ %.2f× greedy now (%.1f %%) and by the day (%.1f %%); descent %d to it",
				name, len(moves), got, TargetFactor, 100*gNow, 100*gDay, d)
			if d < 0 {
				t.Fatalf("the descent reference never reaches the target: no yardstick")
			}
			if got < 0 || float64(got) > 1.05*float64(d)+1 {
				t.Errorf("the planner took %d moves to the target, the descent reference %d", got, d)
			}
			// Every move until the plans end: on the true costs few come after the target
			// (hetero 38 of 34, large 486 of 475, homogeneous 27 of 26).
			if float64(len(moves)) > 1.20*float64(d)+1 {
				t.Errorf("the planner made %d moves until its plans ended: want at most 1.20× the descent reference's %d", len(moves), d)
			}
			// Where the plans end, both peaks stay within the target.
			final := slices.Clone(f.Initial)
			for _, m := range moves {
				final[m[0]] = m[1]
			}
			if p := figuresOf(f, final, atHour(h)).Peak; p > TargetFactor*gNow {
				t.Errorf("the plans ended with the peak now at %.1f %%, %.3f× greedy's: want at most %.2f×", 100*p, p/gNow, TargetFactor)
			}
			if p := figuresOf(f, final, dayPeak).Peak; p > TargetFactor*gDay {
				t.Errorf("the plans ended with the daily peak at %.1f %%, %.3f× greedy's: want at most %.2f×", 100*p, p/gDay, TargetFactor)
			}
			// An instance may move twice on the way when a later plan, on the hours that
			// turned since, finds it the best step (on the 200-wave fleet 1 of 475 moves);
			// more than one in a hundred would be plans undoing each other.
			seen, again := map[int]bool{}, 0
			for _, m := range moves[:max(got, 0)] {
				if seen[m[0]] {
					again++
				}
				seen[m[0]] = true
			}
			if again > got/100 {
				t.Errorf("%d of %d moves on the way to the target moved an instance a second time: want at most one in a hundred", again, got)
			}
		})
	}
}

// jointAtEnd is the hour the plans ended at, greedy's peaks then (now and by the day),
// and the Joint figures of moves against the targets they set.
func jointAtEnd(f *Fleet, moves [][2]int, end time.Time) (h, gNow, gDay float64, j Joint) {
	h = hourOf(end)
	gNow = figuresOf(f, greedy(f, atHour(h)), atHour(h)).Peak
	gDay = figuresOf(f, greedy(f, dayPeak), dayPeak).Peak
	return h, gNow, gDay, joint(f, moves, h, TargetFactor*gNow, TargetFactor*gDay)
}

// priceMiss makes the prices a plan is given miss the true ones: each wave's row, byte
// and base price times 1 + share·z, z a normal draw per wave and plan (draw seeds them),
// with the wave's Err two such shares of its load, as the judge gives its own. The zero
// value is the true costs.
type priceMiss struct {
	share float64
	draw  uint64
}

// priced is waves as a plan at round sees them under pm; load is every wave's true load
// now, in cores.
func (pm priceMiss) priced(waves []rebalance.Wave, round int, load []float64) []rebalance.Wave {
	if pm.share == 0 {
		return waves
	}
	out := slices.Clone(waves)
	for w := range out {
		k := 1 + pm.share*gauss(pm.draw, noiseMiss, uint64(w), uint64(round))
		out[w].Row, out[w].Byte, out[w].Base = k*out[w].Row, k*out[w].Byte, k*out[w].Base
		out[w].Err = 2 * pm.share * load[w]
	}
	return out
}

// noiseMiss is priceMiss's kind of draw (agent.go's kinds are the agents').
const noiseMiss = 99

// planTruly plans f from its initial assignment on the true costs (missed by pm) with
// the judge's default goals (20 moves a plan, a 10-minute cooldown, the lines 1.08× the
// level) and slots, a plan every 5 minutes, until a plan is empty; it returns the moves
// in order and when the last plan was made.
func planTruly(t testing.TB, f *Fleet, now time.Time, pm priceMiss) ([][2]int, time.Time) {
	t.Helper()
	assign := append([]int(nil), f.Initial...)
	wave, inst := map[string]int{}, map[string]int{}
	waves := make([]rebalance.Wave, len(f.Waves))
	for w, wv := range f.Waves {
		wave[wv.Node] = w
		waves[w] = rebalance.Wave{Node: wv.Node, Alive: true, Capacity: float64(wv.Cores), Base: wv.Idle, Row: wv.RowPrice, Byte: wv.BytePrice}
	}
	insts := make([]rebalance.Instance, len(f.Instances))
	for i, in := range f.Instances {
		inst[in.ID] = i
		insts[i] = rebalance.Instance{ID: in.ID, Rows: make([]float64, 25), Bytes: make([]float64, 25)}
		for h := range 24 {
			insts[i].Rows[1+h] = in.Rows * in.Diurnal(float64(h))
			insts[i].Bytes[1+h] = insts[i].Rows[1+h] * in.RowBytes
		}
	}
	var moves [][2]int
	for round := range 100 {
		at := now.Add(time.Duration(round) * 5 * time.Minute)
		for i, in := range f.Instances {
			insts[i].Node = f.Waves[assign[i]].Node
			insts[i].Rows[0] = in.Rows * in.Diurnal(hourOf(at))
			insts[i].Bytes[0] = insts[i].Rows[0] * in.RowBytes
		}
		h := at.UTC().Hour()
		goals := rebalance.Goals{HardMax: 0.7, Band: 0.03, LevelGain: 0.01, Enough: 1.08, LevelNow: []int{0, 1 + h, 1 + (h+1)%24},
			MaxMoves: 20, Cooldown: 10 * time.Minute, Budget: time.Minute}
		load := make([]float64, len(f.Waves))
		for w, l := range loads(f, assign) {
			load[w] = l.at(hourOf(at))
		}
		p := rebalance.Make(pm.priced(waves, round, load), insts, goals, at)
		if len(p.Moves) == 0 {
			return moves, at
		}
		for _, m := range p.Moves {
			i := inst[m.Instance]
			assign[i], insts[i].MovedAt = wave[m.To], at
			moves = append(moves, [2]int{i, wave[m.To]})
		}
	}
	t.Fatalf("100 plans and the planner still moves")
	return nil, now
}

// BenchmarkPlannerOnMissedCosts measures what the criterion "at most as many moves as
// must move" asks of the judge's predictions: the planner of TestPlannerOnTrueCosts on
// the fifteen seeded 24-wave fleets of BENCHMARKS.md, given each wave's prices missed by
// a share drawn anew per plan (priceMiss; three draws each), reports the moves to both
// targets summed over the fifteen (moves/op), the joint descent reference's (descent),
// on how many fleets it took more than the descent (over) and on how many its plans
// ended with a target unmet (never; those count in neither sum), averaged over the draws.
// Not in make test: a measurement, `go test -run '^$' -bench PlannerOnMissedCosts
// -benchtime 1x ./judge/fleetsim`.
func BenchmarkPlannerOnMissedCosts(b *testing.B) {
	for _, share := range []float64{0, 0.005, 0.01, 0.02} {
		b.Run(fmt.Sprintf("miss=%g", share), func(b *testing.B) {
			draws := uint64(3)
			if share == 0 {
				draws = 1 // the true costs draw nothing
			}
			for b.Loop() {
				var moves, descent, over, never float64
				for draw := range draws {
					for seed := uint64(1); seed <= 15; seed++ {
						f, o := seededHetero(b, seed)
						ms, end := planTruly(b, f, o.Now, priceMiss{share: share, draw: draw + 1})
						_, _, _, j := jointAtEnd(f, ms, end)
						if j.JudgeMovesToTarget < 0 {
							never++ // the plans ended with the fleet above a target
							continue
						}
						moves += float64(j.JudgeMovesToTarget)
						descent += float64(j.Descent.MovesToTarget)
						if j.JudgeMovesToTarget > j.Descent.MovesToTarget {
							over++
						}
					}
				}
				n := float64(draws)
				b.ReportMetric(moves/n, "moves/op")
				b.ReportMetric(descent/n, "descent")
				b.ReportMetric(over/n, "over")
				b.ReportMetric(never/n, "never")
			}
		})
	}
}

// exactMinima are the fewest instances that must change wave to bring the fifteen
// seeded 24-wave fleets (seeds 1–15) within both targets, solved exactly by
// docs/tools/min_moves.py (PuLP's CBC) on `binlake bench fleet -seed N -history-step 1m
// -json -truth` (BENCHMARKS.md): the same counts at the hour the planner's plans end.
var exactMinima = []int{33, 45, 18, 49, 51, 48, 54, 59, 50, 50, 57, 52, 45, 43, 50}

// TestPlannerNearTheExactMinimum: on the true costs the planner takes at most 711 moves
// to both targets over the fifteen fleets, 7 more than the exact minima's 704, and at
// most one more than the minimum on each (seven take one more). With the lines drawn
// from the fleet's level alone it took 713, two more on seed 5.
func TestPlannerNearTheExactMinimum(t *testing.T) {
	sum := 0
	for seed := uint64(1); seed <= 15; seed++ {
		f, o := seededHetero(t, seed)
		ms, end := planTruly(t, f, o.Now, priceMiss{})
		_, _, _, j := jointAtEnd(f, ms, end)
		got, least := j.JudgeMovesToTarget, exactMinima[seed-1]
		if got < 0 {
			t.Fatalf("seed %d: the plans ended above a target", seed)
		}
		if got < least {
			t.Fatalf("seed %d: %d moves to the target, under the exact minimum %d: the minima no longer match the fleets", seed, got, least)
		}
		if got > least+1 {
			t.Errorf("seed %d: %d moves to the target, the exact minimum %d: want at most one more", seed, got, least)
		}
		sum += got
	}
	if sum > 711 {
		t.Errorf("%d moves to the targets over the fifteen fleets: want at most 711 (the exact minima: 704)", sum)
	}
}

// seededHetero is the 24-wave fleet of the hetero preset with seed, and its options.
func seededHetero(tb testing.TB, seed uint64) (*Fleet, Options) {
	tb.Helper()
	o, err := Preset("hetero")
	if err != nil {
		tb.Fatal(err)
	}
	o.Seed = seed
	f, err := Generate(o)
	if err != nil {
		tb.Fatal(err)
	}
	return f, o
}
