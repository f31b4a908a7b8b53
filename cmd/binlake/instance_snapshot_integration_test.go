//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceSnapshotOnStoppedInstance: `instance snapshot` on an instance its wave
// holds stopped says what the request does: restart it at the source's end when its
// binlog was purged, nothing until it runs again on another error.
func TestInstanceSnapshotOnStoppedInstance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, zkAddr, root := testCoordinator(t, ctx, "inst-snap")
	registerWaves(t, zkAddr, root, "wave-x")
	for reason, want := range map[string]string{
		wave.ReasonBinlogPurged:    "the instance is stopped on a purged binlog: its leader restarts it at the source's current end with this snapshot",
		wave.ReasonMessageTooLarge: "the instance is stopped (message_too_large), which a snapshot does not mend: the snapshot starts once it runs again",
	} {
		id := strings.ReplaceAll(reason, "_", "-")
		inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: "127.0.0.1:1", User: "u", ServerID: 4248 + uint32(len(id))}, // its own, which add requires
			Subscriptions: []cluster.Subscription{{Name: "all", Topic: "snap.rows"}}}
		if _, err := cluster.AddInstance(ctx, c, inst, "wave-x", nil); err != nil {
			t.Fatal(err)
		}
		st, _ := json.Marshal(cluster.RecordedStatus{Node: "wave-x", State: cluster.StateError, Reason: reason, Error: "…", Since: time.Now().UTC().Format(time.RFC3339)})
		if _, err := c.Put(ctx, cluster.StatusKey(id), st, coord.AnyVersion); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if err := runInstance(ctx, []string{"snapshot", id, "-zk", zkAddr, "-root", root}, &out, &errOut); err != nil {
			t.Fatalf("instance snapshot %s: %v\n%s", id, err, errOut.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("instance snapshot of an instance stopped on %s said:\n%s\nwant %q", reason, out.String(), want)
		}
	}
}

// TestInstanceSnapshotOfAMissingTable: on the real MariaDB, `instance snapshot -tables`
// of a table the source does not have is refused, naming it, and nothing is requested;
// one it has is requested. Where the source cannot be asked (the password is not on
// this host), the request goes ahead, said so; and a table the snapshot then skipped is
// listed by `instance show`, not only by its -json (it said "done, 0 rows", as a success).
func TestInstanceSnapshotOfAMissingTable(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "snapmissing")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, zkAddr, root := testCoordinator(t, ctx, "inst-snap-missing")
	registerWaves(t, zkAddr, root, "wave-x")
	t.Setenv("BINLAKE_TEST_SNAP_PASSWORD", a.Password)
	add := func(id, env string) {
		t.Helper()
		inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: a.Addr, User: a.User, PasswordEnv: env, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
			Subscriptions: []cluster.Subscription{{Name: "all", Topic: "snap.rows", Include: []string{db + `\..*`}}}}
		if _, err := cluster.AddInstance(ctx, c, inst, "wave-x", nil); err != nil {
			t.Fatal(err)
		}
	}
	add("here", "BINLAKE_TEST_SNAP_PASSWORD")
	add("elsewhere", "BINLAKE_TEST_SNAP_UNSET")
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(ctx, append(args, "-zk", zkAddr, "-root", root), &out, &errOut)
		return out.String() + errOut.String(), err
	}

	out, err := run("snapshot", "here", "-tables", db+".nosuch,"+db+".t")
	if want := "instance snapshot: " + db + ".nosuch: not on the source " + a.Addr + ", or not visible to " + a.User + " (a snapshot could not read it): nothing requested"; err == nil || err.Error() != want {
		t.Errorf("snapshot of %s.nosuch: %v (%s), want the error %q", db, err, out, want)
	}
	if _, ok, err := cluster.ReadSnapshotRequest(ctx, c, "here"); ok || err != nil {
		t.Errorf("a request was written for the refused snapshot (%v)", err)
	}
	if out, err := run("snapshot", "here", "-tables", db+".t"); err != nil || !strings.Contains(out, "snapshot ") || strings.Contains(out, "not looked up") {
		t.Errorf("snapshot of %s.t: %v\n%s", db, err, out)
	}
	out, err = run("snapshot", "elsewhere", "-tables", db+".nosuch")
	if err != nil || !strings.Contains(out, "the tables were not looked up on the source (source password missing: ") {
		t.Errorf("snapshot where the password is not on this host: %v\n%s\nwant it requested, saying the tables were not looked up", err, out)
	}

	// What the wave records of a snapshot that skipped the table.
	pos, _ := json.Marshal(cluster.Position{File: "binlog.000001", Pos: 4, Snapshot: &cluster.SnapshotProgress{
		Request: "r1", Done: true, StartedAt: "2026-12-05T07:00:00Z", Skipped: []string{db + ".nosuch: the table is gone"}}})
	if _, err := c.Put(ctx, cluster.OffsetKey("elsewhere"), pos, coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	out, err = run("show", "elsewhere", "-sample", "0")
	for _, want := range []string{"snapshot  r1: done (1 skipped, below), 0 rows, started 2026-12-05T07:00:00Z\n", "skipped   " + db + ".nosuch: the table is gone\n"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("instance show: %v\n%s\nwant %q in it", err, out, want)
		}
	}
}
