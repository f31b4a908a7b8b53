package capture

import (
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// While a snapshot reads a table, a change of it that no subscription takes (an UPDATE
// under events: [insert]) is read for the snapshot alone: the insert before it in the
// transaction still carries the transaction's commit and xid. It was flushed there, as
// the transaction's not-last row, and the transaction went out without a commit row
// (an outside trial); outside a snapshot it had one.
func TestSnapshotOnlyChangeKeepsTheCommitIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_snapcommit", "(id INT PRIMARY KEY, v INT)")
	exec("INSERT INTO " + db + ".t VALUES (5, 0)")
	exec("BEGIN NOT ATOMIC START TRANSACTION; INSERT INTO " + db + ".t VALUES (100, 1); UPDATE " + db + ".t SET v = v + 1 WHERE id = 5; COMMIT; END")

	// The binlog from the start: the first insert's transaction, then the one above.
	streamer, stop := streamFrom(t, a, start)
	// Counted by the commits of transactions that wrote the table: others write the
	// shared server meanwhile (the test failed on another test's commit).
	var evs []*replication.BinlogEvent
	xids, ours := 0, false
	for xids < 2 {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			t.Fatalf("reading the binlog: %v", err)
		}
		evs = append(evs, ev)
		switch e := ev.Event.(type) {
		case *replication.TableMapEvent:
			ours = ours || string(e.Schema) == db
		case *replication.XIDEvent:
			if ours {
				xids, ours = xids+1, false
			}
		}
	}
	stop()

	for _, snapshotting := range []bool{false, true} {
		out := make(chan Item, 64)
		c := newTestCapture(t, a, "snapcommit", 1, out, []cluster.Subscription{{Name: "ins", Topic: "ins", Include: []string{db + `\.t`}, Events: []string{"insert"}}}, start)
		c.tables, c.reader = map[uint64]*rowenc.Table{}, rowenc.NewReader() // as a connection's start sets them
		if snapshotting {
			c.snap = &snapshotRun{touched: map[string]time.Time{}}
			c.resume.Snapshot = &cluster.SnapshotProgress{Tables: []string{db + ".t"}}
		}
		for _, ev := range evs {
			if err := c.handle(ctx, ev); err != nil {
				t.Fatalf("snapshotting %v: %v", snapshotting, err)
			}
		}
		var last string
		for len(out) > 0 {
			for _, m := range (<-out).Msgs {
				last = string(m.Value)
			}
		}
		if !strings.Contains(last, `"id":100`) || !strings.Contains(last, `"commit":true`) {
			t.Errorf("snapshotting %v: the transaction's insert %s, want it with the commit", snapshotting, last)
		}
		if snapshotting && c.snap.touched == nil {
			t.Error("the snapshot's keys were not kept")
		}
	}
}
