package wave

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestWaveMembersAbsence: a wave seen alive and then gone is absent since it left, and
// dead at once for the balancer; a wave never seen alive is absent since the watch
// began, and dead only a grace later; a live one is neither.
func TestWaveMembersAbsence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := cluster.NewMembers(t0)
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
		want cluster.Absence
		dead time.Time
	}{
		{"a", cluster.Absence{Live: true}, time.Time{}},
		{"b", cluster.Absence{Seen: true, Since: t0.Add(3 * time.Second)}, t0.Add(3 * time.Second)},
		{"c", cluster.Absence{Since: t0}, t0.Add(grace)},
	} {
		got := m.Absence(tc.node)
		if got != tc.want {
			t.Errorf("absence(%s) = %+v, want %+v", tc.node, got, tc.want)
		}
		if d := got.DeadAt(grace); !d.Equal(tc.dead) {
			t.Errorf("absence(%s).deadAt = %v, want %v", tc.node, d, tc.dead)
		}
	}
	// Back: live again, no longer counted as left.
	m.Apply([]coord.Member{{ID: "a"}, {ID: "b"}}, t0.Add(4*time.Second))
	if got := m.Absence("b"); got != (cluster.Absence{Live: true}) {
		t.Errorf("absence(b) after it came back = %+v, want live", got)
	}
}

// planFunc is a Planner made of a function.
type planFunc func(ctx context.Context, req api.RebalanceRequest) (*api.RebalanceAnswer, error)

func (f planFunc) Rebalance(ctx context.Context, req api.RebalanceRequest) (*api.RebalanceAnswer, error) {
	return f(ctx, req)
}

// failoverRig is a balancer on wave-a over a single coordinator, whose membership view
// the test feeds by hand: instances i0, i1 assigned to wave-b, i2, i3 to wave-c.
type failoverRig struct {
	t     *testing.T
	ctx   context.Context
	c     coord.Coordinator
	w     *Wave
	b     *balancer
	regs  map[string]context.CancelFunc
	calls int // plans asked for
}

func newFailoverRig(t *testing.T, hook func(req api.RebalanceRequest)) *failoverRig {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &failoverRig{t: t, ctx: t.Context(), c: c, regs: map[string]context.CancelFunc{}}
	planner := planFunc(func(ctx context.Context, req api.RebalanceRequest) (*api.RebalanceAnswer, error) {
		r.calls++
		if hook != nil {
			hook(req)
		}
		return &api.RebalanceAnswer{Plan: fewestInstances(req, time.Now())}, nil
	})
	r.w, err = New(Options{Node: "wave-a", Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.DiscardHandler),
		Balancer: BalancerOptions{Planner: planner, FailoverGrace: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	r.w.members = cluster.NewMembers(time.Now())
	r.b = newBalancer(r.w)
	for i, node := range []string{"wave-b", "wave-b", "wave-c", "wave-c"} {
		inst := wavetest.ValidInstance()
		inst.ID = fmt.Sprintf("i%d", i)
		if _, err := cluster.AddInstance(r.ctx, c, &inst, node, nil); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// register makes node a member (until leave) and the view sees the members as they are.
func (r *failoverRig) register(node string) {
	ctx, cancel := context.WithCancel(r.ctx)
	if err := r.c.Register(ctx, cluster.GroupWaves, coord.Member{ID: node}); err != nil {
		r.t.Fatal(err)
	}
	r.regs[node] = cancel
	r.see()
}

func (r *failoverRig) leave(node string) {
	r.regs[node]()
	for slices.ContainsFunc(r.members(), func(m coord.Member) bool { return m.ID == node }) {
		time.Sleep(time.Millisecond) // the single coordinator deregisters in the background
	}
	r.see()
}

func (r *failoverRig) members() []coord.Member {
	ms, err := r.c.Members(r.ctx, cluster.GroupWaves)
	if err != nil {
		r.t.Fatal(err)
	}
	return ms
}

// see gives the view the current member list, as the wave's watch would.
func (r *failoverRig) see() { r.w.members.Apply(r.members(), time.Now()) }

func (r *failoverRig) assigned() map[string]string {
	out := map[string]string{}
	for i := range 4 {
		id := fmt.Sprintf("i%d", i)
		v, err := r.c.Get(r.ctx, cluster.AssignKey(id))
		if err != nil {
			r.t.Fatal(err)
		}
		out[id] = string(v.Data)
	}
	return out
}

// TestFailoverHoldsWavesNeverSeenAlive: a freshly started balancer (its wave has watched
// the membership for less than the failover grace) places the instances of a wave it saw
// leave at once, but leaves those of a wave it never saw alive where they are, out of
// the plan, and says when to look again: that wave may be starting.
func TestFailoverHoldsWavesNeverSeenAlive(t *testing.T) {
	var planned []string
	r := newFailoverRig(t, func(req api.RebalanceRequest) {
		for _, w := range req.Waves {
			planned = append(planned, fmt.Sprintf("%s:%v", w.Node, w.Alive))
		}
	})
	r.register("wave-a")
	r.register("wave-c")
	r.leave("wave-c") // seen alive, then gone: dead
	recheck := r.b.failover(r.ctx)

	got := r.assigned()
	want := map[string]string{"i0": "wave-b", "i1": "wave-b", "i2": "wave-a", "i3": "wave-a"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the failover: %v, want %v (wave-c's instances placed, wave-b's held)", got, want)
	}
	if want := r.w.members.Start().Add(time.Hour); !recheck.Equal(want) {
		t.Errorf("failover says to look again at %v, want at the end of wave-b's grace %v", recheck, want)
	}
	if slices.Contains(planned, "wave-b:false") {
		t.Errorf("the plan was asked for with wave-b, held, among the waves: %v", planned)
	}
}

// TestFailoverActsOnlyOnAFreshRead: wave-c leaves and comes back while the balancer plans
// the failover of its instances; the plan, made from a read older than that change, is
// not applied, and the next pass finds nothing to place.
func TestFailoverActsOnlyOnAFreshRead(t *testing.T) {
	var r *failoverRig
	r = newFailoverRig(t, func(api.RebalanceRequest) {
		if r.calls == 1 {
			r.register("wave-c") // back while the plan is made
		}
	})
	r.register("wave-a")
	r.register("wave-c")
	r.leave("wave-c")
	r.b.failover(r.ctx)
	if r.calls != 1 {
		t.Fatalf("%d plans asked for, want 1 (wave-c's instances were orphans)", r.calls)
	}
	want := map[string]string{"i0": "wave-b", "i1": "wave-b", "i2": "wave-c", "i3": "wave-c"}
	if got := r.assigned(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after a failover planned before wave-c came back: %v, want %v", got, want)
	}
	r.b.failover(r.ctx)
	if r.calls != 1 {
		t.Errorf("%d plans asked for after wave-c came back, want none more", r.calls)
	}
	if got := r.assigned(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the next failover pass: %v, want %v", got, want)
	}
}

// TestFailoverHoldsAWaveWaitingForItsName: wave-c, seen alive, is gone, but a new process
// of it waits for its name (a member of cluster.GroupStarting: the previous session had not
// expired yet): its instances stay, and the balancer looks again at the next poll. Once
// that process gives up, they are placed.
func TestFailoverHoldsAWaveWaitingForItsName(t *testing.T) {
	r := newFailoverRig(t, nil)
	r.register("wave-a")
	r.register("wave-c")
	mctx, unmark := context.WithCancel(r.ctx)
	if err := r.c.Register(mctx, cluster.GroupStarting, coord.Member{ID: "wave-c"}); err != nil {
		t.Fatal(err)
	}
	r.leave("wave-c")
	recheck := r.b.failover(r.ctx)
	want := map[string]string{"i0": "wave-b", "i1": "wave-b", "i2": "wave-c", "i3": "wave-c"}
	if got := r.assigned(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("with wave-c starting: %v, want %v", got, want)
	}
	if recheck.IsZero() || recheck.After(time.Now().Add(r.w.opts.PollInterval)) {
		t.Errorf("failover says to look again at %v, want by the next poll (%s)", recheck, r.w.opts.PollInterval)
	}
	unmark()
	for len(r.starting()) > 0 {
		time.Sleep(time.Millisecond) // the single coordinator deregisters in the background
	}
	r.b.failover(r.ctx)
	want = map[string]string{"i0": "wave-b", "i1": "wave-b", "i2": "wave-a", "i3": "wave-a"}
	if got := r.assigned(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("once wave-c's new process gave up: %v, want %v", got, want)
	}
}

func (r *failoverRig) starting() []coord.Member {
	ms, err := r.c.Members(r.ctx, cluster.GroupStarting)
	if err != nil {
		r.t.Fatal(err)
	}
	return ms
}
