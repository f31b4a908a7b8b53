package capture

import (
	"strings"
	"testing"
	"time"

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
	s, err := CheckSource(ctx, a.Addr, a.User, a.Password)
	if err != nil || s.ReplicasErr != nil {
		t.Fatalf("CheckSource: %v, replicas: %v", err, s.ReplicasErr)
	}
	if problems := append(s.BinlogProblems(), s.ServerIDProblems(fresh)...); len(problems) != 0 {
		t.Fatalf("a fresh server_id: problems %q; want none", problems)
	}

	start, err := CurrentPosition(ctx, a.Addr, a.User, a.Password, cluster.FlavorMariaDB)
	if err != nil {
		t.Fatal(err)
	}
	taken := testenv.ReplicaServerID()
	runTestCapture(t, ctx, a, "checked", taken, []cluster.Subscription{{Name: "none", Topic: "rows", Include: []string{`no_such_db\..*`}}}, start)
	deadline := time.Now().Add(10 * time.Second)
	var problems []string
	for {
		s, err = CheckSource(ctx, a.Addr, a.User, a.Password)
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
