package integration_test

// Scale-out as the planner does it since issue 30 (item 6), on real waves:
//
//   - TestBalancerScaleOutWithinCooldownIntegration: a wave that joins within the
//     cooldown of a previous scale-out takes its share, from the waves whose instances
//     may move (the planner once took instances only from the single most loaded wave,
//     and when that wave's instances had all moved recently its plan was empty).
//   - TestBalancerIdleScaleOutIntegration: a wave that joins a cluster of idle
//     instances takes its share with the default goals (6/6/0 instances at a few rows/s
//     each once sat inside the default band, so nothing moved to the new wave).
//   - TestBalancerShareOfFewInstancesIntegration: a fourth wave joins three that run two
//     idle instances each, and takes one (no wave ran a whole instance over its share
//     of 1.5, and the share goal once took only from such a wave).

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/cluster"
)

// plannerRig is a cluster in automatic mode with an agent per wave reporting to an
// in-process judge: its instances (12 for start) each written at 10 rows/s (a light
// load).
type plannerRig struct {
	*balanceEnv
	judgeURL string
	procs    []*testenv.Proc
}

func newPlannerRig(t *testing.T, name string, rb judge.RebalanceOptions) *plannerRig {
	ctx := testenv.Context(t)
	r := &plannerRig{balanceEnv: newBalanceEnv(t, ctx, name, 12)}
	r.judgeURL, r.balancer = r.startJudge(rb, "  auto: true\n  auto_after: 2s\n")
	return r
}

// join starts node's wave and its agent.
func (r *plannerRig) join(node string) {
	r.procs = append(r.procs, r.startWave(node))
	r.procs = append(r.procs, r.startAgent(node, r.judgeURL))
}

// start runs waves a and b with 6 instances each and the writers.
func (r *plannerRig) start() {
	r.join("wave-a")
	r.join("wave-b")
	r.waitWaves(2, r.procs...)
	for i, inst := range r.insts {
		if _, err := cluster.AddInstance(r.ctx, r.c, inst, []string{"wave-a", "wave-b"}[i%2], nil); err != nil {
			r.t.Fatal(err)
		}
	}
	rates := make([]int, len(r.insts))
	for i := range rates {
		rates[i] = 10
	}
	r.write(rates)
	r.waitFor("every instance led where it is assigned", r.settled, r.procs...)
}

// settled: every instance is led by the wave it is assigned to.
func (r *plannerRig) settled() bool {
	l := r.nodes("leader")
	return len(l) == len(r.insts) && fmt.Sprint(l) == fmt.Sprint(r.nodes("assign"))
}

// shares reports whether each of nodes is assigned between lo and hi instances, and
// every instance runs where it is assigned.
func (r *plannerRig) shares(lo, hi int, nodes ...string) bool {
	n := count(r.nodes("assign"))
	for _, node := range nodes {
		if n[node] < lo || n[node] > hi {
			return false
		}
	}
	return r.settled()
}

// waitShares waits up to d for shares(lo, hi, nodes...), and otherwise fails the test
// with the judge's plan of the moment (its moves and what it could not meet).
func (r *plannerRig) waitShares(d time.Duration, what string, lo, hi int, nodes ...string) time.Duration {
	r.t.Helper()
	start := time.Now()
	if r.within(d, func() bool { return r.shares(lo, hi, nodes...) }, r.procs...) {
		return time.Since(start)
	}
	plan, err := balancer.PlanRebalance(r.ctx, r.c, &client.Client{URL: r.judgeURL})
	if err != nil {
		r.t.Fatalf("%s: not within %s (assigned %v); the judge's plan: %v", what, d, count(r.nodes("assign")), err)
	}
	r.t.Fatalf("%s: not within %s (assigned %v); the judge's plan of now: %d moves %+v, before %v, unmet %q",
		what, d, count(r.nodes("assign")), len(plan.Moves), plan.Moves, plan.Before, plan.Unmet)
	return 0
}

// coolingStayed waits a few seconds more (nothing more moves), fails the test for every
// instance that cooling had on node and that moved since (within its cooldown), and
// returns the assignments.
func (r *plannerRig) coolingStayed(cooling map[string]string, node string) map[string]string {
	r.t.Helper()
	time.Sleep(3 * time.Second)
	after := r.nodes("assign")
	for id, n := range cooling {
		if n == node && after[id] != node {
			r.t.Errorf("instance %s moved %s → %s within its cooldown", id, node, after[id])
		}
	}
	return after
}

// checkAllRows stops the writers and fails the test for any row missing from an
// instance's topic.
func (r *plannerRig) checkAllRows() {
	r.stopWriting()
	for i, inst := range r.insts {
		if rows, _ := r.checkRows(i); rows < 50 {
			r.t.Errorf("instance %s: %d rows written, want at least 50", inst.ID, rows)
		}
	}
}

// TestBalancerScaleOutWithinCooldownIntegration:
// waves a and b run 6 instances each; wave-c joins and automatic mode moves 4 onto it
// (they are now within the 10 min cooldown); their rows then come 3 times as fast, which
// makes wave-c the most loaded wave, within the band. wave-d joins, within that cooldown,
// and must take its share all the same from wave-a and wave-b, whose instances never
// moved: every wave ends within one instance of the mean of 3 (wave-c's cooling
// instances stay: 3/3/4/2 or the like), none of wave-c's instances moves, no row is lost.
func TestBalancerScaleOutWithinCooldownIntegration(t *testing.T) {
	rb := judge.DefaultRebalanceOptions()
	// Today's planner spreads these instances (each costs about the floor) only with a
	// band under two instances' cost: the first scale-out happens as the premise needs.
	rb.Band = 150
	r := newPlannerRig(t, "pc", rb)
	r.start()
	r.join("wave-c")
	took := r.waitShares(40*time.Second, "wave-c to take 4 instances (the first scale-out)", 4, 4, "wave-a", "wave-b", "wave-c")
	t.Logf("first scale-out: wave-c runs 4 instances after %s", took.Round(100*time.Millisecond))
	cooling := r.nodes("assign")
	rates := make([]int, len(r.insts))
	for i, inst := range r.insts {
		rates[i] = 10
		if cooling[inst.ID] == "wave-c" {
			rates[i] = 30
		}
	}
	r.stopWriting()
	r.write(rates)
	jc := &client.Client{URL: r.judgeURL}
	var before map[string]float64
	if !r.within(30*time.Second, func() bool {
		plan, err := balancer.PlanRebalance(r.ctx, r.c, jc)
		if err != nil {
			t.Fatal(err)
		}
		before = plan.Before
		return len(plan.Moves) == 0 && before["wave-c"] > before["wave-a"]+40 && before["wave-c"] > before["wave-b"]+40
	}, r.procs...) {
		t.Fatalf("the judge does not see wave-c as the most loaded wave within the band: loads %v", before)
	}
	t.Logf("before wave-d joins: loads %v, wave-c's instances cooling", before)

	r.join("wave-d")
	took = r.waitShares(25*time.Second, "wave-d, joined within the cooldown, to take its share (every wave within 1 of 3 instances)",
		2, 4, "wave-a", "wave-b", "wave-c", "wave-d")
	after := r.coolingStayed(cooling, "wave-c")
	t.Logf("second scale-out: %v after %s", count(after), took.Round(100*time.Millisecond))
	if n := count(after); n["wave-d"] < 2 {
		t.Errorf("wave-d runs %d instances, want its share (at least 2 of 12 over 4 waves, wave-c's 4 cooling)", n["wave-d"])
	}
	r.checkAllRows()
}

// TestBalancerIdleScaleOutIntegration:
// waves a and b run 6 instances each at a light load (10 rows/s each) and the judge plans
// with its default goals; wave-c joins and automatic mode gives it its share: 4/4/4. No
// row is lost. "one_host": the agents report their host as well (cpu.cores, cpu.util,
// host.info), and every wave is on this one host: the judge's plans have each with an
// equal share of its cores and the others named in shares_host_with, two waves and then
// three (each had read the whole host's cores and CPU, so all stood alike in
// utilisation, a new one as busy as the others). Idle instances cannot be priced, so
// these plans are in rows/s, model_note says why; the judge's unit tests plan such
// waves in utilisation.
func TestBalancerIdleScaleOutIntegration(t *testing.T) {
	for _, tc := range []struct {
		name    string
		oneHost bool
	}{{name: "rows"}, {name: "one_host", oneHost: true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			r := &plannerRig{balanceEnv: newBalanceEnv(t, ctx, "pl"+tc.name[:1], 12)}
			r.hostAgents = tc.oneHost
			r.judgeURL, r.balancer = r.startJudge(judge.DefaultRebalanceOptions(), "  auto: true\n  auto_after: 2s\n")
			r.start()
			if tc.oneHost {
				r.waitSharing(2)
			}
			r.join("wave-c")
			took := r.waitShares(60*time.Second, "wave-c to take its share of a lightly loaded cluster (4/4/4)", 4, 4, "wave-a", "wave-b", "wave-c")
			time.Sleep(3 * time.Second) // nothing more moves
			n := count(r.nodes("assign"))
			t.Logf("scale-out: %v after %s", n, took.Round(100*time.Millisecond))
			for _, node := range []string{"wave-a", "wave-b", "wave-c"} {
				if n[node] != 4 {
					t.Errorf("%s runs %d instances, want 4", node, n[node])
				}
			}
			if tc.oneHost {
				r.waitSharing(3)
			}
			r.checkAllRows()
		})
	}
}

// waitSharing waits until the judge's plan has n waves, each with 1/n of this host's
// cores and the n-1 others named in shares_host_with, and otherwise fails the test.
func (r *plannerRig) waitSharing(n int) {
	r.t.Helper()
	cores := float64(runtime.NumCPU())
	jc := &client.Client{URL: r.judgeURL}
	var plan *api.RebalanceAnswer
	if r.within(30*time.Second, func() bool {
		var err error
		if plan, err = balancer.PlanRebalance(r.ctx, r.c, jc); err != nil {
			r.t.Fatal(err)
		}
		shared := 0
		for _, w := range plan.Waves {
			if len(w.SharesHostWith) == n-1 && math.Abs(w.Cores-cores/float64(n)) < 1e-9 {
				shared++
			}
		}
		return shared == n
	}, r.procs...) {
		return
	}
	r.t.Fatalf("the judge's plan does not have %d waves sharing this host's %g cores: %+v", n, cores, plan.Waves)
}

// TestBalancerShareOfFewInstancesIntegration: three waves run two idle instances each,
// and a fourth joins. Each wave's share is 1.5, so no wave runs a whole instance over its
// own; with the default goals the new wave still takes one (an operator's trial of four
// waves got none: the share goal took only from a wave a whole instance over its share).
// No row is lost.
func TestBalancerShareOfFewInstancesIntegration(t *testing.T) {
	ctx := testenv.Context(t)
	r := &plannerRig{balanceEnv: newBalanceEnv(t, ctx, "pf", 6)}
	r.judgeURL, r.balancer = r.startJudge(judge.DefaultRebalanceOptions(), "  auto: true\n  auto_after: 2s\n")
	waves := []string{"wave-a", "wave-b", "wave-c"}
	for _, w := range waves {
		r.join(w)
	}
	r.waitWaves(3, r.procs...)
	for i, inst := range r.insts {
		if _, err := cluster.AddInstance(r.ctx, r.c, inst, waves[i%3], nil); err != nil {
			t.Fatal(err)
		}
	}
	rates := make([]int, len(r.insts))
	for i := range rates {
		rates[i] = 10
	}
	r.write(rates)
	r.waitFor("every instance led where it is assigned", r.settled, r.procs...)
	r.join("wave-d")
	took := r.waitShares(40*time.Second, "wave-d to take one of the six instances", 1, 2, "wave-a", "wave-b", "wave-c", "wave-d")
	time.Sleep(3 * time.Second) // nothing more moves
	n := count(r.nodes("assign"))
	t.Logf("scale-out of six instances: %v after %s", n, took.Round(100*time.Millisecond))
	for _, node := range append(waves, "wave-d") {
		if n[node] < 1 || n[node] > 2 {
			t.Errorf("%s runs %d instances, want 1 or 2 (shares of 1.5)", node, n[node])
		}
	}
	r.checkAllRows()
}

// TestBalancerRestartedWaveTakesItsShareIntegration: waves a and b run 6 instances each;
// wave-c joins and takes 4, which then cool down. wave-a is killed (kill -9, wave and
// agent): its 4 fail over, 2 to each of the others. wave-a starts again within the
// cooldown of the scale-out and must take its share back all the same (an outside
// trial's restarted wave waited out the cooldown with 2 of its 4: the failover had
// started a cooldown too, and wave-c's 6 instances were all cooling): every wave ends
// with 4, none of the scale-out's cooling instances moves, no row is lost.
func TestBalancerRestartedWaveTakesItsShareIntegration(t *testing.T) {
	r := newPlannerRig(t, "pr", judge.DefaultRebalanceOptions())
	r.start()
	r.join("wave-c")
	r.waitShares(40*time.Second, "wave-c to take its share (4/4/4)", 4, 4, "wave-a", "wave-b", "wave-c")
	cooling := r.nodes("assign")
	wa, aa := r.procs[0], r.procs[1] // start() joined wave-a first: its wave, then its agent
	aa.Kill(t)
	wa.Kill(t)
	r.procs = r.procs[2:]
	r.waitFor("wave-a's instances failed over", func() bool {
		return r.allOn(r.nodes("assign"), "wave-b", "wave-c") && r.settled()
	}, r.procs...)
	// The premise: wave-a's 4 went 2 to each survivor (the failover spreads them), so the
	// restarted wave must take back from wave-c, whose other 4 are cooling.
	if n := count(r.nodes("assign")); n["wave-b"] != 6 || n["wave-c"] != 6 {
		t.Fatalf("after the failover %v, want 6 on each survivor", n)
	}
	r.join("wave-a")
	took := r.waitShares(40*time.Second, "wave-a, restarted within the scale-out's cooldown, to take its share (4/4/4)",
		4, 4, "wave-a", "wave-b", "wave-c")
	after := r.coolingStayed(cooling, "wave-c")
	t.Logf("restarted wave-a: %v after %s", count(after), took.Round(100*time.Millisecond))
	if n := count(after); n["wave-a"] != 4 {
		t.Errorf("wave-a runs %d instances, want its share of 4", n["wave-a"])
	}
	r.checkAllRows()
}
