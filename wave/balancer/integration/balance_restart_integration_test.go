package integration_test

// A whole-cluster restart, as a deploy does it, on real `binlake wave` processes (issue
// 30 item 6): every wave stops with SIGTERM and starts again. The first wave back wins
// the balancer election while the others are still starting; it must not take their
// instances for orphans.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/wave/cluster"
)

// TestBalancerRestartIntegration: 3 waves with 12 instances spread 4/4/4 and rows
// flowing into every one; then every wave is restarted at once. "together": SIGTERM to
// all, then all started again in quick succession. "one_first": SIGTERM to all, one wave
// started, and the other two only once it has won the balancer election and half a
// second more (well within the default 5 s failover_grace). "killed": kill -9 to all,
// all started again at once; they register as their old sessions expire (4 s).
// "killed_apart": kill -9 to wave-a, to the others 2.5 s later, all started again at
// once: the new wave-a registers and balances while the old sessions of wave-b and
// wave-c still live, and sees them end while the new wave-b and wave-c wait for their
// names. "balancer_last": SIGTERM to the two waves that do not balance, to the one that
// does 0.7 s later (a deploy going host by host, or a signal late on a busy host): the
// balancer sees two waves leave, cleanly, and must wait for them. In each, no instance changes wave, none runs (leads) on a wave it is not
// assigned to, the balancer moves nothing, and no row is lost.
func TestBalancerRestartIntegration(t *testing.T) {
	for _, tc := range []restartCase{
		{name: "together"},
		{name: "one_first", head: 500 * time.Millisecond},
		{name: "killed", kill: true},
		{name: "killed_apart", kill: true, apart: 2500 * time.Millisecond},
		{name: "balancer_last", balancerLag: 700 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { testClusterRestart(t, tc) })
	}
}

// failoverGrace is the waves' balancer.failover_grace (their default), and stopKillAfter
// how long testenv.Proc.Stop waits after SIGTERM before it sends SIGKILL.
const (
	failoverGrace = 5 * time.Second
	stopKillAfter = 15 * time.Second
)

// restartCase is how the waves of a running cluster restart: with SIGTERM, or SIGKILL
// (kill: their sessions live on for the session timeout), wave-a apart before the others;
// with balancerLag > 0 the balancer's wave is stopped that long after the others; when
// head > 0 wave-a starts first and the others head after it leads the balancer election.
type restartCase struct {
	name        string
	head        time.Duration
	kill        bool
	apart       time.Duration
	balancerLag time.Duration
}

func testClusterRestart(t *testing.T, tc restartCase) {
	ctx := testenv.Context(t)
	e := newBalanceEnv(t, ctx, "r"+strings.ReplaceAll(tc.name, "_", ""), 12)
	// Every instance costs the floor, and a band of 150 holds 4/4/4: no plan moves any.
	_, e.balancer = e.startJudge(judge.RebalanceOptions{Band: 150, InstanceFloor: 100, MaxMoves: 20, Cooldown: 10 * time.Minute}, "")
	nodes := []string{"wave-a", "wave-b", "wave-c"}
	var procs []*testenv.Proc
	for _, n := range nodes {
		procs = append(procs, e.startWave(n))
	}
	e.waitWaves(3, procs...)
	for i, inst := range e.insts {
		if _, err := cluster.AddInstance(ctx, e.c, inst, nodes[i%3], nil); err != nil {
			t.Fatal(err)
		}
	}
	rates := make([]int, len(e.insts))
	for i := range rates {
		rates[i] = 10
	}
	e.write(rates)
	e.waitFor("every instance led where it is assigned", func() bool {
		return e.allOn(e.nodes("leader"), nodes...) && fmt.Sprint(e.nodes("leader")) == fmt.Sprint(e.nodes("assign"))
	}, procs...)
	before := e.nodes("assign")
	time.Sleep(2 * time.Second) // rows flowing on every instance

	watch := e.watchPlacement(before)
	stopped := time.Now()
	var wg sync.WaitGroup
	balancing := ""
	if tc.balancerLag > 0 {
		l, err := e.c.Leader(ctx, cluster.BalancerLeaderKey)
		if err != nil {
			t.Fatalf("the balancer's wave: %v", err)
		}
		balancing = string(l)
	}
	for i, p := range procs {
		switch {
		case balancing != "":
			if nodes[i] != balancing {
				wg.Go(p.Stop)
				continue
			}
			wg.Go(func() { time.Sleep(tc.balancerLag); p.Stop() })
		case !tc.kill:
			wg.Go(p.Stop) // SIGTERM, as a deploy does
		case i == 0 && tc.apart > 0:
			p.Kill(t)
			time.Sleep(tc.apart)
		default:
			wg.Go(func() { p.Kill(t) })
		}
	}
	wg.Wait()
	stopTook := time.Since(stopped)
	t.Logf("all 3 waves stopped (kill -9: %v) in %s", tc.kill, stopTook.Round(10*time.Millisecond))
	if !tc.kill && stopTook >= stopKillAfter {
		t.Errorf("the waves took %s to stop on SIGTERM, want under %s: one needed SIGKILL, so this was no clean stop", stopTook, stopKillAfter)
	}

	restarted := time.Now()
	procs = procs[:0]
	if head := tc.head; head > 0 {
		procs = append(procs, e.startWave("wave-a"))
		e.waitFor("wave-a, back first, to lead the balancer election", func() bool {
			l, err := e.c.Leader(ctx, cluster.BalancerLeaderKey)
			return err == nil && string(l) == "wave-a"
		}, procs...)
		t.Logf("wave-a back and balancing %s after the restart began; the others start %s later",
			time.Since(restarted).Round(10*time.Millisecond), head)
		time.Sleep(head)
		procs = append(procs, e.startWave("wave-b"), e.startWave("wave-c"))
	} else {
		for _, n := range nodes {
			procs = append(procs, e.startWave(n))
		}
	}
	running := regexp.MustCompile(`msg="wave running"`) // registered: after a kill, once the old session ended
	for _, p := range procs {
		p.WaitOutput(t, running, time.Minute)
	}
	registered := time.Since(restarted)
	if !tc.kill && registered >= failoverGrace {
		// Past the grace the balancer places a stopped wave's instances by design: the
		// case would test nothing it means to.
		t.Errorf("the waves registered %s after the restart began, want within the failover grace (%s) that a SIGTERM restart relies on", registered, failoverGrace)
	}
	e.waitFor("every instance led by a live wave, where it is assigned", func() bool {
		l := e.nodes("leader")
		return e.allOn(l, nodes...) && fmt.Sprint(l) == fmt.Sprint(e.nodes("assign"))
	}, procs...)
	settled := time.Since(restarted)
	// Watch on past the failover grace (5 s by default) counted from the restart, and a
	// few balancer intervals (1 s) beyond it: a wave still taken for dead would lose its
	// instances by then.
	time.Sleep(max(3*time.Second, 8*time.Second-settled))
	violations := watch()
	after := e.nodes("assign")
	t.Logf("restart: all 3 waves registered after %s, every instance led where assigned after %s",
		registered.Round(10*time.Millisecond), settled.Round(10*time.Millisecond))

	var moved []string
	for _, inst := range e.insts {
		if after[inst.ID] != before[inst.ID] {
			moved = append(moved, fmt.Sprintf("%s: %s → %s", inst.ID, before[inst.ID], after[inst.ID]))
		}
	}
	if len(moved) > 0 {
		t.Errorf("%d of %d instances changed wave in the restart, want none: %v", len(moved), len(e.insts), moved)
	}
	for _, v := range violations {
		t.Errorf("during the restart: %s", v)
	}
	if m := e.balancerMetric("binlake_wave_balancer_moves_total"); m != 0 {
		t.Errorf("the balancer counted %g moves in the restart, want none", m)
	}
	// Each restarted wave led only its own instances: none ran on two waves.
	leading := regexp.MustCompile(`msg="leading instance".* instance=(\S+)`)
	led := map[string][]string{}
	for i, p := range procs { // started in the order of nodes
		for _, m := range leading.FindAllStringSubmatch(p.Output(), -1) {
			if !slices.Contains(led[m[1]], nodes[i]) {
				led[m[1]] = append(led[m[1]], nodes[i])
			}
		}
	}
	for _, inst := range e.insts {
		if want := []string{before[inst.ID]}; !slices.Equal(led[inst.ID], want) {
			t.Errorf("instance %s was led by %v after the restart, want by %v alone", inst.ID, led[inst.ID], want)
		}
	}

	e.stopWriting()
	for i, inst := range e.insts {
		// checkRows fails the test for any row missing from the topic; the count shows the
		// writer ran on both sides of the restart (2 s before it, 3 s after settling).
		if rows, _ := e.checkRows(i); rows < 50 {
			t.Errorf("instance %s: %d rows written, want at least 50 (10 rows/s for over 5 s)", inst.ID, rows)
		}
	}
}

// watchPlacement samples every instance's assignment and leader every 100 ms until the
// returned function is called, which returns each time an instance was assigned to, or
// led by, a wave other than the one want names (the first sighting of each).
func (e *balanceEnv) watchPlacement(want map[string]string) func() []string {
	start := time.Now()
	done := make(chan struct{})
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		out  []string
	)
	note := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[what] {
			seen[what] = true
			out = append(out, fmt.Sprintf("%s (%s after the stop)", what, time.Since(start).Round(10*time.Millisecond)))
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for child, m := range map[string]map[string]string{"assigned to": e.nodes("assign"), "led by": e.nodes("leader")} {
				for id, node := range m {
					if node != want[id] {
						note(fmt.Sprintf("instance %s %s %s, not %s", id, child, node, want[id]))
					}
				}
			}
			select {
			case <-done:
				return
			case <-e.ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() []string {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}
