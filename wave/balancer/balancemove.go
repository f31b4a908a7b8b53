package balancer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/cluster"
)

// Executing moves: a move rewrites the instance's assignment (only if it still names
// the wave the plan moves it from), records the move for the cooldown, and then waits
// until the instance runs on its new wave with its lag under the bound.

// Results of a move.
const (
	MoveDone     = "done"     // assigned and settled on the new wave
	MoveAssigned = "assigned" // a failover: assigned, not waited for
	MoveSkipped  = "skipped"  // the assignment changed since the plan
	MoveFailed   = "failed"   // not assigned, or did not settle in time
)

// MoveResult is one executed move.
type MoveResult struct {
	api.Move
	At     time.Time `json:"at"`
	Result string    `json:"result"`
	Error  string    `json:"error,omitempty"`
	// SettledS is how long the instance took to run again, caught up, on its new wave.
	SettledS float64 `json:"settled_s,omitempty"`
}

// mover executes moves against the coordinator.
type mover struct {
	c    coord.Coordinator
	opts Options
	log  *slog.Logger
	http *http.Client
	now  func() time.Time

	lagUnknownSaid bool // the warning that lags cannot be read was logged
}

// assign rewrites the instance's assignment from m.From to m.To. version is the
// assignment's version the plan was made from: a move planned from an assignment that
// changed since is skipped (errStale).
func (mv *mover) assign(ctx context.Context, m api.Move, version int64) error {
	if _, err := mv.c.Put(ctx, cluster.AssignKey(m.Instance), []byte(m.To), version); err != nil {
		if errors.Is(err, coord.ErrVersionConflict) {
			return errStale
		}
		return fmt.Errorf("assign %s to %s: %w", m.Instance, m.To, err)
	}
	rec, _ := json.Marshal(cluster.MoveRecord{At: mv.now().UTC(), From: m.From, To: m.To, Reason: m.Reason})
	if _, err := mv.c.Put(ctx, cluster.MovedKey(m.Instance), rec, coord.AnyVersion); err != nil {
		// The move stands; only its cooldown is unrecorded.
		mv.log.Warn("record the move", "instance", m.Instance, "err", err)
	}
	return nil
}

var errStale = errors.New("its assignment changed since the plan")

// settle waits until m.Instance runs on m.To: leading there, its state running, and its
// lag (from the wave's /status, when it advertises an address) under the bound.
func (mv *mover) settle(ctx context.Context, m api.Move) (time.Duration, error) {
	start := mv.now()
	ctx, cancel := context.WithTimeout(ctx, mv.opts.SettleTimeout)
	defer cancel()
	var last string
	for {
		ok, why := mv.settled(ctx, m)
		if ok {
			return mv.now().Sub(start), nil
		}
		last = why
		select {
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return 0, fmt.Errorf("stopped waiting for %s to settle on %s (%s): %w", m.Instance, m.To, last, context.Cause(ctx))
			}
			return 0, fmt.Errorf("%s not settled on %s after %s: %s", m.Instance, m.To, mv.opts.SettleTimeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// state is the instance's state as its status record has it; "" when there is none
// (never run yet) or it cannot be read.
func (mv *mover) state(ctx context.Context, id string) string {
	v, err := mv.c.Get(ctx, cluster.StatusKey(id))
	var st struct{ State string }
	if err != nil || json.Unmarshal(v.Data, &st) != nil {
		return ""
	}
	return st.State
}

func (mv *mover) settled(ctx context.Context, m api.Move) (bool, string) {
	l, err := mv.c.Leader(ctx, cluster.LeaderKey(m.Instance))
	if err != nil || string(l) != m.To {
		return false, fmt.Sprintf("leader is %q", l)
	}
	v, err := mv.c.Get(ctx, cluster.StatusKey(m.Instance))
	var st struct{ Node, State string }
	if err != nil || json.Unmarshal(v.Data, &st) != nil || st.Node != m.To || st.State != cluster.StateRunning {
		return false, fmt.Sprintf("state on %q is %q", st.Node, st.State)
	}
	lag, known, err := mv.lagOn(ctx, m.To, m.Instance)
	if err != nil {
		return false, err.Error()
	}
	if !known && !mv.lagUnknownSaid {
		mv.lagUnknownSaid = true
		mv.log.Warn("cannot read the lag of moved instances: settling on their running state alone", "wave", m.To,
			"hint", "each wave's http.listen or advertise_addr must be reachable from the other waves")
	}
	if known && lag > mv.opts.LagBound.Seconds() {
		return false, fmt.Sprintf("lag %.1fs", lag)
	}
	return true, ""
}

// lagOn reads the instance's lag from node's /status; known is false when the wave
// advertises no address, or one this process cannot reach it at (the lag check is then
// skipped, and the move settles on the instance's running state).
func (mv *mover) lagOn(ctx context.Context, node, id string) (lag float64, known bool, err error) {
	ms, err := mv.c.Members(ctx, cluster.GroupWaves)
	if err != nil {
		return 0, false, err
	}
	var addr string
	for _, m := range ms {
		if m.ID == node {
			var d struct{ Addr string }
			if json.Unmarshal(m.Data, &d) == nil {
				addr = d.Addr
			}
		}
	}
	if addr == "" {
		return 0, false, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := mv.http.Do(req)
	if err != nil {
		return 0, false, nil // not reachable from here (a loopback address, a firewall)
	}
	defer resp.Body.Close()
	var st struct { // the parts of the wave's /status (wave.InstanceStatus) it reads
		Node      string
		Instances []struct {
			ID   string   `json:"id"`
			LagS *float64 `json:"lag_s"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Node != node {
		return 0, false, nil // another process answers there (a loopback address)
	}
	for _, s := range st.Instances {
		if s.ID == id && s.LagS != nil {
			return *s.LagS, true, nil
		}
	}
	return 0, false, fmt.Errorf("%s shows no lag for %s yet", node, id)
}

// apply executes moves, at most InFlight at once, each waiting until it settles. The
// run stops starting moves at the first that fails (what follows was planned assuming
// it); the moves in flight still settle. report gets every result as it comes.
func (mv *mover) apply(ctx context.Context, moves []api.Move, versions map[string]int64, report func(MoveResult)) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	sem := make(chan struct{}, mv.opts.InFlight)
	for _, m := range moves {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || failed() {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := mv.one(ctx, m, versions[m.Instance], report); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// one executes one move and waits for it to settle: one of an instance that was not
// running before it (retrying a refused login, stopped in error) cannot run after it
// either, and is assigned without waiting (the run waited out its settle timeout and
// failed, with the other moves not made: an outside trial).
func (mv *mover) one(ctx context.Context, m api.Move, version int64, report func(MoveResult)) error {
	r := MoveResult{Move: m, At: mv.now().UTC()}
	state := mv.state(ctx, m.Instance)
	err := mv.assign(ctx, m, version)
	if errors.Is(err, errStale) {
		mv.log.Info("move skipped: "+err.Error(), "instance", m.Instance, "from", m.From, "to", m.To)
		r.Result, r.Error = MoveSkipped, err.Error()
		report(r)
		return nil
	}
	if err == nil && state != "" && state != cluster.StateRunning {
		mv.log.Info("instance moved; not waited for, as it was not running before the move", "instance", m.Instance,
			"from", m.From, "to", m.To, "reason", m.Reason, "state", state)
		r.Result = MoveAssigned
		report(r)
		return nil
	}
	if err == nil {
		mv.log.Info("moving instance", "instance", m.Instance, "from", m.From, "to", m.To, "reason", m.Reason,
			"cost", m.Cost, "from_load", m.FromLoad, "to_load", m.ToLoad)
		var d time.Duration
		if d, err = mv.settle(ctx, m); err == nil {
			mv.log.Info("instance moved", "instance", m.Instance, "to", m.To, "settled_in", d.Round(time.Millisecond))
			r.Result, r.SettledS = MoveDone, d.Seconds()
			report(r)
			return nil
		}
	}
	mv.log.Error("move failed", "instance", m.Instance, "from", m.From, "to", m.To, "err", err)
	r.Result, r.Error = MoveFailed, err.Error()
	report(r)
	return err
}
