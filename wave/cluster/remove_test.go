package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestRemoveInstanceWaitsForItsLeader: a removal withdraws the definition at once (no
// wave starts the instance any more) and deletes nothing, the offset above all, while a
// wave still leads the instance; once the leader lets go, everything goes. On both
// coordinators.
func TestRemoveInstanceWaitsForItsLeader(t *testing.T) {
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			off, _ := json.Marshal(cluster.Position{File: "bin.000007", Pos: 1234})
			if _, err := c.Put(ctx, cluster.OffsetKey(inst.ID), off, coord.NoVersion); err != nil {
				t.Fatal(err)
			}
			lead, err := c.Campaign(ctx, cluster.LeaderKey(inst.ID), []byte("wave-1"))
			if err != nil {
				t.Fatal(err)
			}
			removed := make(chan error, 1)
			go func() { removed <- cluster.RemoveInstance(ctx, c, inst.ID) }()

			// Withdrawn: the definition is empty, as for an add not completed, which no
			// wave runs.
			deadline := time.Now().Add(10 * time.Second)
			for {
				v, err := c.Get(ctx, cluster.InstanceKey(inst.ID))
				if err == nil && len(v.Data) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the definition was not withdrawn: %q, %v", v.Data, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			info, err := cluster.ShowInstance(ctx, c, inst.ID, 0, time.Now)
			if err != nil || info.State != cluster.StateRemoving || info.Leader != "wave-1" {
				t.Fatalf("show during the removal: %+v, %v; want state %s, led by wave-1", info, err, cluster.StateRemoving)
			}
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-1", nil); err == nil || !strings.Contains(err.Error(), "being removed") {
				t.Fatalf("add during the removal: %v, want a refusal", err)
			}
			time.Sleep(500 * time.Millisecond)
			select {
			case err := <-removed:
				t.Fatalf("the removal ended (%v) while a wave led the instance", err)
			default:
			}
			if v, err := c.Get(ctx, cluster.OffsetKey(inst.ID)); err != nil || string(v.Data) != string(off) {
				t.Fatalf("offset while the leader holds on: %q, %v; want it untouched", v.Data, err)
			}

			if err := lead.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-removed; err != nil {
				t.Fatalf("remove: %v", err)
			}
			for _, key := range []string{cluster.InstanceKey(inst.ID), cluster.OffsetKey(inst.ID), cluster.AssignKey(inst.ID), cluster.RemovingKey(inst.ID)} {
				if _, err := c.Get(ctx, key); !errors.Is(err, coord.ErrNotFound) {
					t.Errorf("%s after the removal: %v, want it gone", key, err)
				}
			}
			if ids, _ := cluster.ListInstances(ctx, c); slices.Contains(ids, inst.ID) {
				t.Errorf("listed after the removal: %v", ids)
			}
			// Added again, it starts afresh.
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-1", nil); err != nil {
				t.Fatalf("add after the removal: %v", err)
			}
		})
	}
}

// TestRemoveInstanceLeaderHoldsOn: a leader that does not let go within RemoveWait fails
// the removal, naming it, with nothing deleted; removing again once it has finishes it.
func TestRemoveInstanceLeaderHoldsOn(t *testing.T) {
	wait := cluster.RemoveWait
	cluster.RemoveWait = 300 * time.Millisecond
	defer func() { cluster.RemoveWait = wait }()
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Put(ctx, cluster.OffsetKey(inst.ID), []byte(`{"file":"bin.000001","pos":4}`), coord.NoVersion); err != nil {
				t.Fatal(err)
			}
			lead, err := c.Campaign(ctx, cluster.LeaderKey(inst.ID), []byte("wave-1"))
			if err != nil {
				t.Fatal(err)
			}
			err = cluster.RemoveInstance(ctx, c, inst.ID)
			if err == nil || !strings.Contains(err.Error(), "wave-1 still leads it") {
				t.Fatalf("remove while the leader holds on: %v", err)
			}
			if _, err := c.Get(ctx, cluster.OffsetKey(inst.ID)); err != nil {
				t.Fatalf("the offset went with a removal that did not finish: %v", err)
			}
			if info, err := cluster.ShowInstance(ctx, c, inst.ID, 0, time.Now); err != nil || info.State != cluster.StateRemoving {
				t.Fatalf("show after the removal gave up: %+v, %v", info, err)
			}
			ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := lead.Resign(ctx2); err != nil {
				t.Fatal(err)
			}
			if err := cluster.RemoveInstance(ctx2, c, inst.ID); err != nil {
				t.Fatalf("remove again: %v", err)
			}
			if _, err := cluster.ShowInstance(ctx, c, inst.ID, 0, time.Now); !errors.Is(err, coord.ErrNotFound) {
				t.Fatalf("show after the second removal: %v, want ErrNotFound", err)
			}
		})
	}
}
