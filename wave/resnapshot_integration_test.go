package wave_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestSnapshotRestartsPurgedInstanceIntegration: the runbook's fix for an instance stopped
// on a purged binlog works: `binlake instance snapshot` on the stopped instance restarts
// it at the source's current end, its tables' rows come as snapshot messages, and the
// rows written after come as the binlog streams on. Before, the request waited for a
// running leader that never came.
func TestSnapshotRestartsPurgedInstanceIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "wave_resnap")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	exec("INSERT INTO " + db + ".t VALUES (1), (2)")
	inst := &cluster.Instance{ID: "resnap", Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "resnap.all", Include: []string{db + `\.t`}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := singleCoord(t)
	// The offset of an instance that ran, in a binlog the source no longer has.
	gone, _ := json.Marshal(cluster.Position{File: "binlog.999999", Pos: 4, Rows: 40})
	if _, err := c.Put(ctx, cluster.OffsetKey(inst.ID), gone, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	b, wv, _ := embeddedOn(t, ctx, c, inst, 0)
	waitState(t, ctx, wv, inst.ID, cluster.StateError)
	for _, st := range wv.Status() { // the remedy where the error is read, not only in the log
		if st.ID == inst.ID && !strings.Contains(st.Error, "`binlake instance snapshot resnap` restarts it at the source's current end") {
			t.Errorf("the stopped instance's error: %q, want it to name the remedy", st.Error)
		}
	}

	req, err := cluster.RequestSnapshot(ctx, c, inst.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, wv, inst.ID, cluster.StateRunning)
	exec("INSERT INTO " + db + ".t VALUES (3)")

	// The snapshot starts at the leader's next poll of the request: row 3 may come
	// before it, and in it.
	got := map[string]bool{}
	readUntil(t, ctx, b, "resnap.all", func(m received) bool {
		got[m.typ+" "+m.id] = true
		return got["snapshot 1"] && got["snapshot 2"] && got["insert 3"]
	})
	// Committed within the committer's interval (500 ms).
	for {
		off, _, ok, err := cluster.ReadOffset(ctx, c, inst.ID)
		if err == nil && ok && off.File != "binlog.999999" && off.Snapshot != nil && off.Snapshot.Request == req.ID && off.Snapshot.Done && off.Rows >= 43 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("offset after the restart: %s, snapshot %+v, rows %d (%v); want past the purged file, the request done, the row count kept and grown",
				off, off.Snapshot, off.Rows, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
