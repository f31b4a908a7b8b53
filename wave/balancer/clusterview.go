package balancer

import (
	"context"
	"errors"
	"fmt"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/cluster"
)

// The cluster as a rebalancing plan starts from it: read from the coordinator, which
// holds the truth of where each instance belongs (its assignment), which waves live,
// which instances are pinned and when each last moved.

// clusterView is a read of the coordinator: the request a planner takes, and the version of
// each assignment read, so that a move only rewrites the assignment it planned from.
type clusterView struct {
	req      api.RebalanceRequest
	versions map[string]int64 // instance id → its assignment's version (NoVersion: none)
}

// readCluster reads the live waves and every defined instance with its assignment, pin
// and last move. The waves an assignment names that are not live are listed as dead.
func readCluster(ctx context.Context, c coord.Coordinator) (*clusterView, error) {
	ms, err := c.Members(ctx, cluster.GroupWaves)
	if err != nil {
		return nil, fmt.Errorf("list waves: %w", err)
	}
	cl := &clusterView{versions: map[string]int64{}}
	known := map[string]bool{}
	for _, m := range ms {
		cl.req.Waves = append(cl.req.Waves, api.RebalanceWave{Node: m.ID, Alive: true})
		known[m.ID] = true
	}
	ids, err := cluster.ListInstances(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	for _, id := range ids {
		def, err := c.Get(ctx, cluster.InstanceKey(id))
		if errors.Is(err, coord.ErrNotFound) || (err == nil && len(def.Data) == 0) {
			continue // removed meanwhile, or incomplete (no wave runs it)
		}
		if err != nil {
			return nil, fmt.Errorf("read instance %s: %w", id, err)
		}
		in := api.RebalanceInstance{ID: id}
		if inst, err := cluster.ParseInstance(def.Data); err == nil {
			in.Pinned = inst.Pinned
		}
		a, err := c.Get(ctx, cluster.AssignKey(id))
		switch {
		case errors.Is(err, coord.ErrNotFound):
			cl.versions[id] = coord.NoVersion
		case err != nil:
			return nil, fmt.Errorf("read assignment of %s: %w", id, err)
		default:
			in.Node, cl.versions[id] = string(a.Data), a.Version
		}
		if r, ok := cluster.ReadMoveRecord(ctx, c, id); ok && r.Reason != api.ReasonFailover {
			// A failover is no plan's choice, and starts no cooldown: its instances are
			// what a wave restarted after it takes back as its share (it waited out the
			// cooldown with 2 of its 4, the others' instances all cooling: an outside
			// trial). The record stays, for who moved it when.
			in.MovedAt = r.At
		}
		if in.Node != "" && !known[in.Node] {
			cl.req.Waves = append(cl.req.Waves, api.RebalanceWave{Node: in.Node})
			known[in.Node] = true
		}
		cl.req.Instances = append(cl.req.Instances, in)
	}
	return cl, nil
}

// hold leaves out of the cluster the waves that are not live and that held reports (not
// dead yet: they may be starting), with their instances: no plan places, moves or counts
// them while they are held. It returns the waves held.
func (cl *clusterView) hold(held func(node string) bool) []string {
	var out []string
	waves := make([]api.RebalanceWave, 0, len(cl.req.Waves))
	gone := map[string]bool{}
	for _, w := range cl.req.Waves {
		if !w.Alive && held(w.Node) {
			out = append(out, w.Node)
			gone[w.Node] = true
			continue
		}
		waves = append(waves, w)
	}
	if len(out) == 0 {
		return nil
	}
	insts := make([]api.RebalanceInstance, 0, len(cl.req.Instances))
	for _, in := range cl.req.Instances {
		if gone[in.Node] {
			delete(cl.versions, in.ID)
			continue
		}
		insts = append(insts, in)
	}
	cl.req.Waves, cl.req.Instances = waves, insts
	return out
}

// orphans are the instances assigned to no live wave (a dead one, or none at all).
func (cl *clusterView) orphans() []string {
	alive := map[string]bool{}
	for _, w := range cl.req.Waves {
		alive[w.Node] = w.Alive
	}
	var out []string
	for _, in := range cl.req.Instances {
		if !alive[in.Node] {
			out = append(out, in.ID)
		}
	}
	return out
}
