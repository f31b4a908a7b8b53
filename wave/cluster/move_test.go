package cluster_test

import (
	"errors"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestMoveInstance: a move to the wave the instance is on already writes nothing (a move
// record would hold it out of the balancer's plans for a cooldown), and an unknown
// instance is not found, as show and remove say it; on both coordinators.
func TestMoveInstance(t *testing.T) {
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			if n, err := cluster.MoveInstance(ctx, c, inst.ID, "wave-1", nil); !errors.Is(err, cluster.ErrAlreadyThere) || n != "wave-1" {
				t.Fatalf("move to its own wave: %q, %v; want ErrAlreadyThere", n, err)
			}
			if _, err := c.Get(ctx, cluster.MovedKey(inst.ID)); !errors.Is(err, coord.ErrNotFound) {
				t.Fatalf("a move record after a move to its own wave: %v", err)
			}
			if n, err := cluster.MoveInstance(ctx, c, inst.ID, "wave-2", nil); err != nil || n != "wave-2" {
				t.Fatalf("move to wave-2: %q, %v", n, err)
			}
			if _, err := c.Get(ctx, cluster.MovedKey(inst.ID)); err != nil {
				t.Fatalf("no move record after a move: %v", err)
			}
			_, err := cluster.MoveInstance(ctx, c, "nope", "wave-2", nil)
			if !errors.Is(err, coord.ErrNotFound) || err.Error() != "instance nope: not found" {
				t.Fatalf("an unknown instance: %v", err)
			}
		})
	}
}
