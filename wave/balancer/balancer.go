package balancer

import (
	"cmp"
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/rebalance"
	"github.com/binlake/binlake/judge/api"
)

// The balancer: one wave of the cluster, elected at "balancer/leader", owns the
// reassignment of instances (docs/design.md, "Balancing"). It places the instances of a
// wave whose session ended, applies rebalancing plans on request (`binlake instance
// rebalance -apply`) and, in automatic mode, by itself. Every move rewrites the
// instance's assignment, so a wave that comes back does not pull its instances back.

// Options configure the wave's part in balancing.
type Options struct {
	// Disabled keeps this wave out of the balancer election. With every wave disabled,
	// a dead wave's instances run wherever the election fallback puts them.
	Disabled bool
	// Planner makes the plans (the judge, which knows what each instance costs). Nil, or
	// unreachable: a dead wave's instances go to the waves with the fewest instances,
	// and no rebalancing happens.
	Planner Planner
	// Auto applies plans by themselves once the load has stayed outside the goals for
	// AutoAfter (5 min). Off by default.
	Auto      bool
	AutoAfter time.Duration
	// Interval is how often the balancer asks for a plan (30 s); it checks for dead waves
	// and requests at every poll.
	Interval time.Duration
	// InFlight is how many moves run at once (1).
	InFlight int
	// LagBound is the lag under which a moved instance counts as settled (10 s), and
	// SettleTimeout how long a move may take to settle (2 min) before the run stops.
	LagBound      time.Duration
	SettleTimeout time.Duration
	// FailoverGrace is how long a wave waits, after another wave died, before it
	// campaigns for the dead wave's instances itself (the election fallback): the
	// balancer's placement normally comes first. It is also how long a wave that has just
	// begun watching the membership gives a wave it has never seen alive (it may be
	// starting, as in a whole-cluster restart), and a wave that stopped cleanly (it may be
	// restarting, as a deploy does), before its balancer counts it dead; a wave seen alive
	// whose session ended without a clean stop is dead at once (cluster.Members). 5 s;
	// negative for none (set it so when no wave of the cluster balances).
	FailoverGrace time.Duration
	// PlanTimeout bounds one request to the planner (3 s): a failover must not wait on
	// a slow judge.
	PlanTimeout time.Duration
}

func (o *Options) SetDefaults() {
	// A zero or negative setting takes the default.
	o.AutoAfter = cmp.Or(max(o.AutoAfter, 0), 5*time.Minute)
	o.Interval = cmp.Or(max(o.Interval, 0), 30*time.Second)
	o.LagBound = cmp.Or(max(o.LagBound, 0), 10*time.Second)
	o.SettleTimeout = cmp.Or(max(o.SettleTimeout, 0), 2*time.Minute)
	o.PlanTimeout = cmp.Or(max(o.PlanTimeout, 0), 3*time.Second)
	switch {
	case o.FailoverGrace == 0:
		o.FailoverGrace = 5 * time.Second
	case o.FailoverGrace < 0:
		o.FailoverGrace = 0 // asked for none
	}
	if o.InFlight <= 0 {
		o.InFlight = 1
	}
}

// Planner makes rebalancing plans; the judge's client (judge/client) is one.
type Planner interface {
	Rebalance(ctx context.Context, req api.RebalanceRequest) (*api.RebalanceAnswer, error)
}

// ErrNoPlanner is returned when a rebalance is asked of a cluster without a planner.
var ErrNoPlanner = errors.New("rebalancing needs a judge: it knows what each instance costs")

// PlanRebalance reads the cluster from the coordinator and asks p for a plan: the dry run
// of `binlake instance rebalance`.
func PlanRebalance(ctx context.Context, c coord.Coordinator, p Planner) (*api.RebalanceAnswer, error) {
	if p == nil {
		return nil, ErrNoPlanner
	}
	cl, err := readCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	return p.Rebalance(ctx, cl.req)
}

// fewestInstances is the plan when no planner answers: every instance costs the same,
// so a dead wave's instances go one by one to the wave with the fewest. It places
// orphans only; without costs there is nothing to rebalance.
func fewestInstances(req api.RebalanceRequest, now time.Time) api.Plan {
	waves := make([]rebalance.Wave, len(req.Waves))
	for i, w := range req.Waves {
		waves[i] = rebalance.Wave{Node: w.Node, Alive: w.Alive}
	}
	insts := make([]rebalance.Instance, len(req.Instances))
	for i, in := range req.Instances {
		insts[i] = rebalance.Instance{ID: in.ID, Node: in.Node, Cost: 1, Pinned: in.Pinned, MovedAt: in.MovedAt}
	}
	return api.PlanOf(rebalance.Make(waves, insts, rebalance.Goals{Band: math.Inf(1)}, now))
}

// View is what the wave's /status shows of the balancer.
type View struct {
	Leader bool `json:"leader"`
	Auto   bool `json:"auto"`
	// Planner is "judge" or "fewest_instances" (no judge configured, or it did not
	// answer last time).
	Planner string `json:"planner,omitempty"`
	// OutsideSince is when the load left the goals (automatic mode applies a plan
	// AutoAfter later).
	OutsideSince *time.Time   `json:"outside_since,omitempty"`
	Moves        []MoveResult `json:"moves"` // the latest first, at most maxRecentMoves
}

const maxRecentMoves = 20

// balancerState is the balancer's shared state (for /status).
type balancerState struct {
	mu   sync.Mutex
	view View
}

func (s *balancerState) update(f func(v *View)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.view)
}

func (s *balancerState) snapshot() View {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.view
	v.Moves = append([]MoveResult{}, s.view.Moves...)
	return v
}

func (s *balancerState) record(r MoveResult) {
	s.update(func(v *View) {
		v.Moves = append([]MoveResult{r}, v.Moves...)
		if len(v.Moves) > maxRecentMoves {
			v.Moves = v.Moves[:maxRecentMoves]
		}
	})
}
