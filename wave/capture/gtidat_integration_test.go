package capture

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestOnConnectMariaDBFilePosTakesGTIDSetIntegration: on the test MariaDB, an instance
// started at a file/pos before a transaction takes a GTID set without it, one started
// after it a set with it, and a file the server does not have leaves the start by
// file/pos. Other tests write to the same server meanwhile: the check is on this test's
// own transaction.
func TestOnConnectMariaDBFilePosTakesGTIDSetIntegration(t *testing.T) {
	db, exec, conn := testenv.ScratchDatabase(t, "gtidat")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	before := binlogEnd(t, conn)
	exec("INSERT INTO " + db + ".t VALUES (1)")
	r, err := conn.Execute("SELECT @@last_gtid")
	if err != nil {
		t.Fatal(err)
	}
	last, _ := r.GetString(0, 0)
	mine, err := mysql.ParseMariadbGTIDSet(last)
	if err != nil || last == "" {
		t.Fatalf("@@last_gtid %q: %v", last, err)
	}
	after := binlogEnd(t, conn)

	lookUp := func(p cluster.Position) *Capture {
		t.Helper()
		c := &Capture{
			Options: Options{Inst: &cluster.Instance{Source: cluster.Source{Flavor: cluster.FlavorMariaDB}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
			resume:  p,
		}
		var owner binlogOwner
		if err := c.onConnect(conn, &owner); err != nil {
			t.Fatalf("onConnect at %s: %v", p.String(), err)
		}
		if owner.serverID == 0 {
			t.Errorf("onConnect at %s: no server id read", p.String())
		}
		return c
	}
	cb := lookUp(before)
	if cb.gset == nil || !cb.announce || cb.resume.GTIDSet != cb.gset.String() {
		t.Fatalf("at %s (before GTID %s): set %v, resume %s, announce %v; want a set, announced", before.String(), last, cb.gset, cb.resume.String(), cb.announce)
	}
	if cb.gset.Contain(mine) {
		t.Errorf("the set at %s, before GTID %s was written, is %s: it contains it", before.String(), last, cb.gset)
	}
	ca := lookUp(after)
	if ca.gset == nil || !ca.gset.Contain(mine) {
		t.Errorf("the set at %s, after GTID %s was written, is %v: it lacks it", after.String(), last, ca.gset)
	}
	if !ca.gset.Contain(cb.gset) {
		t.Errorf("the set at %s (%s) does not contain the earlier one at %s (%s)", after.String(), ca.gset, before.String(), cb.gset)
	}

	gone := lookUp(cluster.Position{File: before.File + "-none", Pos: 4})
	if gone.gset != nil || gone.announce || !gone.gtidLookedUp {
		t.Errorf("a file the server does not have: set %v, announce %v, looked up %v; want no set, looked up once", gone.gset, gone.announce, gone.gtidLookedUp)
	}
	if _, reason, err := gtidAt(conn, cluster.FlavorMariaDB, before.File+"-none", 4); err != nil || !strings.Contains(reason, "is not in the source's binlog") {
		t.Errorf("a file the server does not have: reason %q, error %v", reason, err)
	}
}

// binlogEnd is the server's binlog file and position now (SHOW MASTER STATUS).
func binlogEnd(t *testing.T, c *client.Conn) cluster.Position {
	t.Helper()
	r, err := c.Execute("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	if r.RowNumber() == 0 {
		t.Fatal("SHOW MASTER STATUS: the test MariaDB has no binlog")
	}
	file, _ := r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	return cluster.Position{File: file, Pos: uint32(pos)}
}

// TestPositionNowMariaDBIntegration: on the test MariaDB the start position of a first
// capture has a GTID set that is not ahead of its file/pos (BINLOG_GTID_POS there holds
// all of it) and holds a transaction committed before it.
func TestPositionNowMariaDBIntegration(t *testing.T) {
	db, exec, conn := testenv.ScratchDatabase(t, "posnow")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	exec("INSERT INTO " + db + ".t VALUES (1)")
	r, err := conn.Execute("SELECT @@last_gtid")
	if err != nil {
		t.Fatal(err)
	}
	last, _ := r.GetString(0, 0)
	mine, err := mysql.ParseMariadbGTIDSet(last)
	if err != nil || last == "" {
		t.Fatalf("@@last_gtid %q: %v", last, err)
	}
	p, err := positionNow(conn, cluster.FlavorMariaDB)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mysql.ParseMariadbGTIDSet(p.GTIDSet)
	if err != nil || p.GTIDSet == "" || p.File == "" || p.Pos < 4 {
		t.Fatalf("position %s: %v", p.String(), err)
	}
	if !got.Contain(mine) {
		t.Errorf("the set %s at %s lacks %s, committed before", p.GTIDSet, p.String(), last)
	}
	exact, reason, err := gtidAt(conn, cluster.FlavorMariaDB, p.File, p.Pos)
	if err != nil || exact == nil {
		t.Fatalf("BINLOG_GTID_POS at %s: %v %s", p.String(), err, reason)
	}
	if !exact.Contain(got) {
		t.Errorf("the set %s is ahead of %s:%d, where the binlog's set is %s", p.GTIDSet, p.File, p.Pos, exact)
	}
}
