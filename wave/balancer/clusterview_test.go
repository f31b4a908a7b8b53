package balancer

import (
	"testing"
	"time"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestMoveInstanceRecordsTheMove: a manual move rewrites the assignment and records the
// move, so the balancer's plans let the instance cool down before moving it again.
func TestMoveInstanceRecordsTheMove(t *testing.T) {
	c := wavetest.Coordinators(t)["single"](t)
	ctx := t.Context()
	inst := &cluster.Instance{ID: "orders", Source: cluster.Source{Addr: "127.0.0.1:3306", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: 7},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "t"}}}
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-1", nil); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UTC()
	if n, err := cluster.MoveInstance(ctx, c, "orders", "wave-2", nil); err != nil || n != "wave-2" {
		t.Fatalf("MoveInstance = %q, %v", n, err)
	}
	cl, err := readCluster(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	in := cl.req.Instances[0]
	if in.Node != "wave-2" || in.MovedAt.Before(before) {
		t.Errorf("after the move the balancer reads %+v, want it on wave-2, moved just now", in)
	}
	r, ok := cluster.ReadMoveRecord(ctx, c, "orders")
	if !ok || r.From != "wave-1" || r.To != "wave-2" || r.Reason != "manual" {
		t.Errorf("move record %+v (%v), want wave-1 → wave-2, manual", r, ok)
	}
	// wave-1 and wave-2 are not live: both are listed as dead, the instance an orphan.
	if o := cl.orphans(); len(o) != 1 || o[0] != "orders" {
		t.Errorf("orphans %v, want [orders] (no wave is live)", o)
	}
}
