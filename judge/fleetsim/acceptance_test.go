//go:build !race

package fleetsim

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestJudgeBalancesSimulatedFleets holds the judge's plans to what issue 30 asks of
// them, on seeded fleets driven through its HTTP API: the peak utilisation, now and at
// each wave's own peak of the day, within 1.10× of the greedy reference (instances by
// descending true cost, each to the wave with the lowest resulting utilisation, which
// moves nearly every instance), and far fewer moves than greedy's. The heterogeneous
// fleet is the (24 waves of 2, 4 and 8 cores, 400 instances); the homogeneous
// one is the regression: 24 identical hosts, where the judge balanced at 1.12× now and
// 1.32× at the daily peak before it planned in utilisation. On both, no instance moves
// twice and the plans are done (the last one empty).
//
// On the heterogeneous fleet the judge must also get there in about as many moves as
// the descent reference (one move at a time off the busiest wave, on the true costs):
// replaying its moves in order, the peak comes within 1.10× greedy, now and at the daily
// peaks, after at most 10 % more moves than the descent's (before the judge priced a
// plan's base from the wave's latest samples it took 55 and 59 moves to the descent's 31
// and 35: each plan chased the load it had just moved).
//
// Seeds 2 and 3 of the same fleet each hold one instance larger than a fair share, whose
// wave the plans set aside (their goals stay unmet, and the balancer stops on three empty
// plans). Seed 2's daily peaks were at 1.00× greedy while its load now stood at 1.13×,
// until the second level evened out the hour the fleet is in (rebalance.Goals.LevelNow);
// seed 3 took 42 and 41 moves to the target against the descent's 29 and 24, shedding
// small instances off the large one's wave, until the large one went first. They run
// with the 5-minute history steps (cheaper: the suite's time).
//
// An outside tester counts every move until the plans end, not only those to the
// target: each fleet holds the judge's total to a multiple of the descent reference's
// moves to the target (the larger of now's and the daily peaks'). While the highest
// predicted peak stands within 1.08× the fleet's level (rebalance.Goals.Enough) the
// plans make no more moves for the band or the first level, and the second level none
// for an excess within that ratio of its hours' level, nor for one that stands over its
// start by less than half the wave's fit error (rebalance.Wave.Err). Seed 1 takes the
// descent's 35 moves (1.00×: the issue's "at most as many moves as instances that must
// move"; 40 before the error margin, and main at c663364 took 54, 1.54×, its last plan
// of 14 lowering a daily peak the target did not need lowered), the homogeneous fleet 53 to 25 (66 at
// c663364), seed 2 81 to 44 (86), seed 3 45 to 25 (58; 52 until the band and the first
// level stopped under a wave set aside that stands highest, once every other wave
// stands three of its fit errors under it: rebalance's aside.go): what is left over the
// descent's is the first plans' moves, on costs still being learned, and on seed 2 the
// band among the waves under the one a large instance holds, which stand within their
// errors of it (BENCHMARKS.md). Seed 1's
// daily peak is no longer held to 1.08× greedy, which c663364's last plan bought with
// those 14 moves: it ends at 1.096×, under the 1.10×.
//
// The 200-wave fleet takes minutes and is measured by `binlake bench fleet -preset
// large` (BENCHMARKS.md).
//
// Not built with -race: the race detector makes a simulated day of a whole fleet take
// over ten minutes. `make test` runs it in a run of its own without -race.
func TestJudgeBalancesSimulatedFleets(t *testing.T) {
	if testing.Short() {
		t.Skip("a day of simulated history per fleet: not in -short")
	}
	for _, c := range []struct {
		name, preset string
		seed         uint64
		// oneMinute: the last six hours (the judge's fit window) at one batch a minute:
		// an agent sends one every 10 s, and the 5-minute steps that make the rest of the
		// day cheap to simulate leave each wave's prices a sixth of the samples (with
		// 5-min steps, 2 of 64 and 1 of 46 instances moved twice; BENCHMARKS.md).
		oneMinute bool
		// done: the plans end on an empty one, no instance moved twice, and fewer than a
		// quarter of the moves greedy's assignment would take (seed 2 took 94–107 of 381: at the bound).
		done bool
		// toTarget: moves to the target at most 10 % over the descent reference's.
		toTarget bool
		// total: every move the judge made, until its plans ended, at most this times
		// the descent reference's moves to the target (the larger of now's and the daily
		// peaks'): what an outside tester counts against "as many moves as instances
		// that must move". Main at c663364 took 54 on seed 1 (1.54×), 70 on the
		// homogeneous fleet (2.8× with 5-minute steps), 86 on seed 2 (1.95×) and 58 on
		// seed 3 (2.32×).
		total float64
	}{
		{"hetero", "hetero", 1, true, true, true, 1.0},
		{"homogeneous", "homogeneous", 1, true, true, false, 2.15},
		{"hetero-seed-2", "hetero", 2, false, false, false, 1.85},
		{"hetero-seed-3", "hetero", 3, false, false, true, 1.85},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := Preset(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			o.Seed = c.seed
			// o.Dir stays empty: the judge's store goes to /dev/shm (memTempDir), as in
			// `binlake bench fleet`. On this disk its fsync per write made seed 3 take
			// 28-30 s instead of 22-24 s; the simulated clock keeps the figures the same.
			o.HistoricalEvery = 5 * time.Second
			if c.oneMinute {
				o.HistoryStep = time.Minute
			}
			var progress bytes.Buffer
			o.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			rep, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("%v\nprogress:\n%s", err, progress.String())
			}
			var text bytes.Buffer
			rep.WriteText(&text)
			t.Logf("report:\n%s", text.String())
			for _, m := range []struct {
				what  string
				cmp   Comparison
				ratio float64
			}{{"now", rep.Now, 1.10}, {"at the daily peaks", rep.Day, 1.10}} {
				if m.cmp.Ratio > m.ratio {
					t.Errorf("%s: the judge's peak %.1f %% is %.3f× the greedy reference's %.1f %%, want at most %.2f×",
						m.what, 100*m.cmp.Judge.Peak, m.cmp.Ratio, 100*m.cmp.Greedy.Peak, m.ratio)
				}
				got, d := m.cmp.JudgeMovesToTarget, m.cmp.Descent.MovesToTarget
				if c.toTarget && (got < 0 || float64(got) > 1.10*float64(d)) {
					t.Errorf("%s: the judge's moves brought the peak within %.2f× greedy after %d, the descent reference's after %d: want at most 10 %% more",
						m.what, TargetFactor, got, d)
				}
			}
			if must := max(rep.Now.Descent.MovesToTarget, rep.Day.Descent.MovesToTarget); c.total > 0 && float64(rep.Moves) > c.total*float64(must) {
				t.Errorf("%d moves in all: want at most %.2f× the %d the descent reference needs to the target", rep.Moves, c.total, must)
			}
			if c.done && rep.EndedBy != "empty plan" {
				t.Errorf("ended by %q: want the plans done, the last one empty", rep.EndedBy)
			}
			if c.done && rep.Moves != rep.Distinct {
				t.Errorf("%d moves of %d distinct instances: want no instance moved twice", rep.Moves, rep.Distinct)
			}
			if c.done && rep.Moves > rep.Now.GreedyMoves/4 {
				t.Errorf("%d moves: want far fewer than the %d the greedy reference's assignment would take", rep.Moves, rep.Now.GreedyMoves)
			}
		})
	}
}
