package wavetest

import (
	"context"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// Connect opens a connection to the test MariaDB (BINLAKE_TEST_MYSQL), closed when the
// test ends.
func Connect(t testing.TB) *client.Conn {
	t.Helper()
	a := testenv.RequireMySQL(t)
	conn, err := client.ConnectWithContext(context.Background(), a.Addr, a.User, a.Password, "", 10*time.Second)
	if err != nil {
		t.Fatalf("connect to MariaDB at %s: %v", a, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// MustExec runs q on c and fails the test on an error.
func MustExec(t testing.TB, c *client.Conn, q string, args ...any) {
	t.Helper()
	if _, err := c.Execute(q, args...); err != nil {
		t.Fatalf("%.120s: %v", q, err)
	}
}

// MasterStatus is the server's binlog end: file, pos and GTID position.
func MasterStatus(t testing.TB, c *client.Conn) *cluster.Position {
	t.Helper()
	r, err := c.Execute("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	g, err := c.Execute("SELECT @@GLOBAL.gtid_binlog_pos")
	if err != nil {
		t.Fatal(err)
	}
	gs, _ := g.GetString(0, 0)
	return &cluster.Position{File: file, Pos: uint32(pos), GTIDSet: gs}
}

// CurrentPos is the binlog end of the shared test server.
func CurrentPos(t testing.TB) *cluster.Position { return MasterStatus(t, Connect(t)) }

// Covers reports whether the GTID set have contains want (MariaDB). A committed offset
// covers the end of a workload without ever equalling it when other tests write to the
// same server: the wave also commits past the transactions it filters out, and the end
// position, read after the workload's last transaction, may be another test's.
func Covers(t testing.TB, have, want string) bool {
	t.Helper()
	if have == "" {
		return false
	}
	h, err := mysql.ParseGTIDSet(cluster.FlavorMariaDB, have)
	if err != nil {
		t.Fatalf("offset gtid set %q: %v", have, err)
	}
	w, err := mysql.ParseGTIDSet(cluster.FlavorMariaDB, want)
	if err != nil {
		t.Fatalf("end gtid set %q: %v", want, err)
	}
	return h.Contain(w)
}
