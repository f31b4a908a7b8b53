package capture

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestCheckSourceIntegration: on the real MariaDB (binlog on, ROW, FULL), a server_id of
// its own has no problem; the source's own server_id, and that of a capture reading the
// source, are named (the second with the source's error it would meet, server_id_clash).
func TestCheckSourceIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	fresh := testenv.ReplicaServerID()
	s, err := CheckSource(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password, fresh)
	if err != nil || s.ReplicasErr != nil || len(s.Access) > 0 {
		t.Fatalf("CheckSource: %v, replicas: %v, access: %q", err, s.ReplicasErr, s.Access)
	}
	if problems := append(s.BinlogProblems(), s.ServerIDProblems(fresh)...); len(problems) != 0 {
		t.Fatalf("a fresh server_id: problems %q; want none", problems)
	}

	start, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	taken := testenv.ReplicaServerID()
	runTestCapture(t, ctx, a, "checked", taken, []cluster.Subscription{{Name: "none", Topic: "rows", Include: []string{`no_such_db\..*`}}}, start)
	deadline := time.Now().Add(10 * time.Second)
	var problems []string
	for {
		s, err = CheckSource(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password, taken)
		if err != nil {
			t.Fatal(err)
		}
		if problems = s.ServerIDProblems(taken); len(problems) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "already used by a replica of the source") {
		t.Fatalf("the server_id of a running capture: problems %q, want the clash", problems)
	}

	_, _, conn := testenv.ScratchDatabase(t, "srccheck")
	r, err := conn.Execute("SELECT @@server_id")
	if err != nil {
		t.Fatal(err)
	}
	own, _ := r.GetUint(0, 0)
	if problems = s.ServerIDProblems(uint32(own)); len(problems) != 1 || !strings.Contains(problems[0], "is the source's own") {
		t.Fatalf("the source's server_id %d: problems %q; want it named", own, problems)
	}
}

// TestCheckSourceAccessIntegration: on the real MariaDB, a user without the privileges an
// instance needs is told which grant is missing: one with none may not read where the
// binlog ends (REPLICATION CLIENT / BINLOG MONITOR), one without REPLICATION SLAVE may
// not read the binlog (its dump is refused); one with both and REPLICATION MASTER ADMIN
// (to list the replicas) has no problem.
func TestCheckSourceAccessIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	_, exec, _ := testenv.ScratchDatabase(t, "srcaccess")
	user := func(grants string) string {
		name := fmt.Sprintf("binlake_acc%d", time.Now().UnixNano()%1e9)
		exec("CREATE USER '" + name + "'@'%' IDENTIFIED BY 'pw'")
		t.Cleanup(func() { exec("DROP USER IF EXISTS '" + name + "'@'%'") })
		if grants != "" {
			exec("GRANT " + grants + " ON *.* TO '" + name + "'@'%'")
		}
		return name
	}
	// Without SELECT, information_schema hides the captured tables' columns, and MariaDB's
	// JSON columns went out as text without a word (an outside trial).
	const noSelect = "may not SELECT"
	for _, tc := range []struct {
		name, grants string
		want         []string
	}{
		{"no grant", "", []string{noSelect, "may not read where the binlog ends"}},
		{"no REPLICATION SLAVE", "BINLOG MONITOR, REPLICATION MASTER ADMIN", []string{noSelect, "may not read the binlog"}},
		// Replicas unlisted: no dump is tried, and the user's grants say it (the check said
		// nothing, and the waves looped on access_denied).
		{"no REPLICATION SLAVE, replicas unlisted", "BINLOG MONITOR", []string{noSelect, "has no REPLICATION SLAVE among its own grants"}},
		{"the README's grants, replicas unlisted", "SELECT, REPLICATION SLAVE, BINLOG MONITOR", nil},
		{"no SELECT", "REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER ADMIN", []string{noSelect}},
		{"every grant", "SELECT, REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER ADMIN", nil},
	} {
		u := user(tc.grants)
		s, err := CheckSource(ctx, cluster.Source{Addr: a.Addr, User: u, Flavor: cluster.FlavorMariaDB}, "pw", testenv.ReplicaServerID())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ok := len(s.Access) == len(tc.want)
		for i := 0; ok && i < len(tc.want); i++ {
			ok = strings.Contains(s.Access[i], tc.want[i]) && !strings.Contains(s.Access[i], "pw")
		}
		if !ok {
			t.Errorf("%s: access problems %q, want %q (and no password)", tc.name, s.Access, tc.want)
		}
	}
}

// TestIdentifyNamesAWrongFlavorIntegration: a mysql-flavoured instance of the real
// MariaDB fails to identify the server (it has no @@server_uuid) with an error that
// names the flavor to set; it said only "Unknown system variable 'server_uuid'".
func TestIdentifyNamesAWrongFlavorIntegration(t *testing.T) {
	testenv.RequireMySQL(t)
	_, _, conn := testenv.ScratchDatabase(t, "flavor")
	_, err := identify(conn, cluster.FlavorMySQL)
	if err == nil || !strings.Contains(err.Error(), "the instance's flavor is mysql, and the source answers as mariadb") || !strings.Contains(err.Error(), "set source.flavor: mariadb") {
		t.Fatalf("identify as mysql on MariaDB: %v, want the flavor named", err)
	}
	if _, err := identify(conn, cluster.FlavorMariaDB); err != nil {
		t.Fatalf("identify as mariadb: %v", err)
	}
}

// TestDumpDeniedNamesTheGrantIntegration: MariaDB refuses the binlog dump of a user
// without REPLICATION SLAVE with the ERROR 1045 of a wrong password, and the instance sat
// at access_denied with nothing telling the operator what to grant (an outside trial).
// A user who logs in is told to grant REPLICATION SLAVE; a wrong password is not.
func TestDumpDeniedNamesTheGrantIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	_, exec, conn := testenv.ScratchDatabase(t, "dumpdenied")
	name := fmt.Sprintf("binlake_dd%d", time.Now().UnixNano()%1e9)
	exec("CREATE USER '" + name + "'@'%' IDENTIFIED BY 'pw'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS '" + name + "'@'%'") })
	exec("GRANT SELECT, BINLOG MONITOR ON *.* TO '" + name + "'@'%'")
	end, err := positionNow(conn, cluster.FlavorMariaDB)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ pw, want, not string }{
		{"pw", "user " + name + " logs in, but the source refused to send it the binlog (ERROR 1045", ""},
		{"wrong", "ERROR 1045", "REPLICATION SLAVE"},
	} {
		err := tryDump(ctx, Endpoint{Addr: a.Addr, User: name, Password: tc.pw}, cluster.FlavorMariaDB, testenv.ReplicaServerID(), end)
		if err == nil {
			t.Fatalf("a dump as %s: no error", name)
		}
		err = dumpDenied(ctx, Endpoint{Addr: a.Addr, User: name, Password: tc.pw}, ServerError(err))
		var me *mysql.MyError
		if !strings.Contains(err.Error(), tc.want) || tc.not != "" && strings.Contains(err.Error(), tc.not) || !errors.As(err, &me) {
			t.Errorf("password %q: %v, want %q in it (not %q), the server's error kept", tc.pw, err, tc.want, tc.not)
		}
		if tc.pw == "pw" && !strings.HasSuffix(err.Error(), "grant it REPLICATION SLAVE") {
			t.Errorf("%v: want the grant named", err)
		}
	}
}
