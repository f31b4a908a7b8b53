package balancer

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/judge/api"
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

// TestFailoverStartsNoCooldown: a failover's assignment is recorded (who moved the
// instance, when) but starts no cooldown, as a plan's move does: a wave restarted after
// a failover takes its share back from the instances failed over to the others (it
// waited out the cooldown with half its share: an outside trial).
func TestFailoverStartsNoCooldown(t *testing.T) {
	c := wavetest.Coordinators(t)["single"](t)
	ctx := t.Context()
	addInstances(t, c, "failed-over", "planned")
	cl, err := readCluster(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	mv := &mover{c: c, log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, m := range []api.Move{{Instance: "failed-over", From: "wave-1", To: "wave-2", Reason: api.ReasonFailover},
		{Instance: "planned", From: "wave-1", To: "wave-2", Reason: api.ReasonShare}} {
		if err := mv.assign(ctx, m, cl.versions[m.Instance]); err != nil {
			t.Fatal(err)
		}
	}
	if cl, err = readCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	moved := map[string]time.Time{}
	for _, in := range cl.req.Instances {
		moved[in.ID] = in.MovedAt
	}
	if !moved["failed-over"].IsZero() || moved["planned"].IsZero() {
		t.Errorf("moved at %v: want the planned move cooling down and the failover not", moved)
	}
	if r, ok := cluster.ReadMoveRecord(ctx, c, "failed-over"); !ok || r.Reason != api.ReasonFailover || r.To != "wave-2" {
		t.Errorf("the failover's record %+v (%v), want it kept: wave-2, failover", r, ok)
	}
}

// TestMoveOfAnInstanceNotRunningIsNotWaitedFor: an instance that was not running before
// its move (retrying a refused login) cannot run after it: the move is assigned and
// reported so, not waited for until the settle timeout (the run waited 2 minutes, failed,
// and the plan's other moves were not made: an outside trial). One that was running is
// waited for, and fails when it does not settle.
func TestMoveOfAnInstanceNotRunningIsNotWaitedFor(t *testing.T) {
	c := wavetest.Coordinators(t)["single"](t)
	ctx := t.Context()
	addInstances(t, c, "broken", "fine")
	status := func(id, state string) {
		data, _ := json.Marshal(cluster.RecordedStatus{Node: "wave-1", State: state, Reason: "access_denied"})
		if _, err := c.Put(ctx, cluster.StatusKey(id), data, coord.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	status("broken", cluster.StateRetrying)
	status("fine", cluster.StateRunning)
	opts := Options{SettleTimeout: 300 * time.Millisecond}
	mv := &mover{c: c, opts: opts, log: slog.New(slog.DiscardHandler), http: http.DefaultClient, now: time.Now}
	var got []MoveResult
	report := func(r MoveResult) { got = append(got, r) }
	if err := mv.one(ctx, api.Move{Instance: "broken", From: "wave-1", To: "wave-2"}, coord.AnyVersion, report); err != nil {
		t.Fatalf("the move of an instance not running: %v, want it assigned", err)
	}
	if len(got) != 1 || got[0].Result != MoveAssigned {
		t.Fatalf("results %+v, want assigned", got)
	}
	if err := mv.one(ctx, api.Move{Instance: "fine", From: "wave-1", To: "wave-2"}, coord.AnyVersion, report); err == nil || got[1].Result != MoveFailed {
		t.Fatalf("the move of a running instance that does not settle: %v, %+v; want it failed", err, got)
	}
}

// addInstances stores instances ids, each with a server_id of its own, on wave-1.
func addInstances(t *testing.T, c coord.Coordinator, ids ...string) {
	t.Helper()
	for i, id := range ids {
		inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: "127.0.0.1:3306", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: uint32(7 + i)},
			Subscriptions: []cluster.Subscription{{Name: "all", Topic: "t"}}}
		if _, err := cluster.AddInstance(t.Context(), c, inst, "wave-1", nil); err != nil {
			t.Fatal(err)
		}
	}
}
