package capture

import (
	"context"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// xaSessions opens n sessions on the test MariaDB for XA transactions (one is a
// session's until it is prepared and the session ends). When t ends they are closed,
// and the XA transactions of db (gtrid "db-…") still prepared are rolled back, so that
// no test leaves one on the shared server, holding its locks.
func xaSessions(t *testing.T, a testenv.MySQLAddr, db string, n int) []func(string) {
	t.Helper()
	t.Cleanup(func() {
		c, err := client.Connect(a.Addr, a.User, a.Password, "")
		if err != nil {
			t.Errorf("roll back the test's XA transactions: %v", err)
			return
		}
		defer c.Close()
		res, err := c.Execute("XA RECOVER")
		if err != nil {
			t.Errorf("XA RECOVER: %v", err)
			return
		}
		for i := range res.RowNumber() {
			data, _ := res.GetString(i, 3)
			if strings.HasPrefix(data, db+"-") {
				if _, err := c.Execute("XA ROLLBACK '" + data + "'"); err != nil {
					t.Errorf("XA ROLLBACK '%s': %v", data, err)
				}
			}
		}
	})
	var out []func(string)
	for range n {
		c := conn(t, a)
		out = append(out, func(q string) {
			t.Helper()
			if _, err := c.Execute(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		})
	}
	return out
}

// xaName is the quoted xid of test XA transaction name in db, and its form in the binlog.
func xaName(db, name string) (quoted, binlog string) {
	return "'" + db + "-" + name + "'", xid{formatID: 1, gtrid: db + "-" + name}.String()
}

// TestXAIntegration: MariaDB's XA transactions (the tester's repro, and two that
// overlap): a rolled-back one's rows are never published; a committed one's are
// published once, at its XA COMMIT, with commit: true on its last row alone; XA COMMIT
// … ONE PHASE is an ordinary transaction. While one is prepared, the offset stays before
// it.
func TestXAIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, _, start := tableAt(t, ctx, a, "fixc_xa", "(id INT PRIMARY KEY, v VARCHAR(20))")
	ss := xaSessions(t, a, db, 3)
	exec, exec2, plain := ss[0], ss[1], ss[2]
	tb := db + ".t"
	xa := func(name string) string { q, _ := xaName(db, name); return q }
	for _, q := range []string{
		"XA START " + xa("a"), "INSERT INTO " + tb + " VALUES (1, 'xa-committed'), (11, 'xa-committed')", "XA END " + xa("a"), "XA PREPARE " + xa("a"), "XA COMMIT " + xa("a"),
		"XA START " + xa("b"), "INSERT INTO " + tb + " VALUES (2, 'xa-rolled-back')", "XA END " + xa("b"), "XA PREPARE " + xa("b"), "XA ROLLBACK " + xa("b"),
		"XA START " + xa("c"), "INSERT INTO " + tb + " VALUES (3, 'one-phase')", "XA END " + xa("c"), "XA COMMIT " + xa("c") + " ONE PHASE",
	} {
		exec(q)
	}
	beforeD := binlogEndOf(t, ctx, a)
	for _, q := range []string{"XA START " + xa("d"), "INSERT INTO " + tb + " VALUES (4, 'overlap-d')", "XA END " + xa("d"), "XA PREPARE " + xa("d")} {
		exec(q)
	}
	afterD := binlogEndOf(t, ctx, a)
	for _, q := range []string{"XA START " + xa("e"), "INSERT INTO " + tb + " VALUES (5, 'overlap-e')", "XA END " + xa("e"), "XA PREPARE " + xa("e")} {
		exec2(q)
	}
	plain("INSERT INTO " + tb + " VALUES (6, 'plain')")

	r := startCapture(t, ctx, a, db, start, "", nil)
	if got := rowsString(r.until(6)); got != "1 11c 3c 6c" {
		t.Errorf("rows up to 6: %s, want 1 11c 3c 6c (2 rolled back; 4 and 5 prepared)", got)
	}
	// The boundary before d's prepared part (other sessions of the shared server may have
	// written between the two readings).
	if r.last.File == beforeD.File && afterD.File == beforeD.File && (r.last.Pos < beforeD.Pos || r.last.Pos >= afterD.Pos) || r.last.XADone != "" {
		t.Errorf("offset %+v while d is prepared, want the boundary before it (binlog end %s before it, %s after)", r.last, beforeD.String(), afterD.String())
	}
	exec2("XA COMMIT " + xa("e"))
	exec("XA COMMIT " + xa("d"))
	plain("INSERT INTO " + tb + " VALUES (99, 'sentinel')")
	if got := rowsString(r.until(99)); got != "5c 4c 99c" {
		t.Errorf("rows after the XA COMMITs: %s, want 5c 4c 99c", got)
	}
	if r.last.XADone != "" || len(r.c.prepared) != 0 || r.c.heldBytes != 0 {
		t.Errorf("offset %+v, %d prepared, %d bytes held", r.last, len(r.c.prepared), r.c.heldBytes)
	}
}

// atOrBefore says whether binlog position p is at or before q (the files' names order
// them: their numbers have a fixed width).
func atOrBefore(p, q cluster.Position) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	return p.Pos <= q.Pos
}

// binlogEndOf is where the test MariaDB's binlog ends now.
func binlogEndOf(t *testing.T, ctx context.Context, a testenv.MySQLAddr) cluster.Position {
	t.Helper()
	p, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestXARestartIntegration: captures stopped while XA transactions are prepared (a
// crash, for the offset) resume from their last offset and neither lose a committed
// one's rows nor publish a rolled-back one's; one committed before the stop though
// prepared before the offset (they overlap) is not published twice.
func TestXARestartIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, _, start := tableAt(t, ctx, a, "fixc_xa_restart", "(id INT PRIMARY KEY)")
	ss := xaSessions(t, a, db, 3)
	execR, execS, plain := ss[0], ss[1], ss[2]
	tb := db + ".t"
	xr, xrBinlog := xaName(db, "r")
	xs, _ := xaName(db, "s")
	// Other tests' transactions may commit before r's: the offset may pass them, not r.
	beforeR := binlogEndOf(t, ctx, a)
	for _, q := range []string{"XA START " + xr, "INSERT INTO " + tb + " VALUES (1)", "XA END " + xr, "XA PREPARE " + xr} {
		execR(q)
	}
	for _, q := range []string{"XA START " + xs, "INSERT INTO " + tb + " VALUES (2)", "XA END " + xs, "XA PREPARE " + xs} {
		execS(q)
	}
	plain("INSERT INTO " + tb + " VALUES (3)")

	r1 := startCapture(t, ctx, a, db, start, "", nil)
	if got := rowsString(r1.until(3)); got != "3c" {
		t.Errorf("first capture: %s, want 3c", got)
	}
	if !atOrBefore(r1.last, beforeR) || !atOrBefore(start, r1.last) || r1.last.XADone != "" {
		t.Errorf("offset %+v while r and s are prepared, want from the start %+v to before r (%+v)", r1.last, start, beforeR)
	}
	r1.halt()

	execR("XA COMMIT " + xr)
	plain("INSERT INTO " + tb + " VALUES (4)")
	r2 := startCapture(t, ctx, a, db, r1.last, "", nil)
	if got := rowsString(r2.until(4)); got != "3c 1c 4c" {
		t.Errorf("second capture: %s, want 3c 1c 4c", got)
	}
	if r2.last.XADone != xrBinlog || r2.last.Pos == start.Pos {
		t.Errorf("offset %+v while s is prepared: want the boundary before it, naming r (%s)", r2.last, xrBinlog)
	}
	r2.halt()

	execS("XA ROLLBACK " + xs)
	plain("INSERT INTO " + tb + " VALUES (5)")
	r3 := startCapture(t, ctx, a, db, r2.last, "", nil)
	if got := rowsString(r3.until(5)); got != "3c 4c 5c" {
		t.Errorf("third capture: %s, want 3c 4c 5c (1 published before, 2 rolled back)", got)
	}
	if r3.last.XADone != "" {
		t.Errorf("offset %+v", r3.last)
	}
}
