package wave

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestCheckSourceSnapshotSightIntegration: an instance with an initial snapshot whose
// user sees none of the subscribed tables (the README's replication grants, no SELECT)
// is warned at add that the snapshot would read nothing; it listed no table and was
// "done" at once. Granted SELECT on the database, or without a snapshot, no warning.
func TestCheckSourceSnapshotSightIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "snapsight")
	exec("CREATE TABLE " + db + ".orders (id INT PRIMARY KEY)")
	user := replicationUser(t, exec, "binlake_snap")
	inst := &cluster.Instance{ID: "snapsight",
		Source:        cluster.Source{Addr: a.Addr, User: user, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "snapsight.rows", Include: []string{db + `\..*`}}},
		Snapshot:      &cluster.SnapshotOptions{Initial: true}}
	sight := func() []string { return warningsOf(t, ctx, inst, "snapshot.initial:") }
	if w := sight(); len(w) != 1 || !strings.Contains(w[0], "user "+user+" sees no table the subscriptions take on "+a.Addr) || !strings.Contains(w[0], "GRANT SELECT") {
		t.Fatalf("snapshot by a user without SELECT: warnings %q, want one saying it would read nothing", w)
	}
	inst.Snapshot = nil
	if w := sight(); len(w) != 0 {
		t.Fatalf("no snapshot: warnings %q, want none about it", w)
	}
	inst.Snapshot = &cluster.SnapshotOptions{Initial: true}
	exec("GRANT SELECT ON " + db + ".* TO '" + user + "'@'%'")
	if w := sight(); len(w) != 0 {
		t.Fatalf("snapshot by a user with SELECT on the database: warnings %q, want none", w)
	}
}

// TestCheckSourceSubscriptionSightIntegration: a subscription that takes no table the
// user sees (a typo in its pattern) is warned of at add, naming it and its patterns; it
// captured nothing, for ever, without a word (an outside trial). One that takes a table
// is not; nor is any when the user may not SELECT (the access warning says that).
func TestCheckSourceSubscriptionSightIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "subsight")
	exec("CREATE TABLE " + db + ".orders (id INT PRIMARY KEY)")
	user := replicationUser(t, exec, "binlake_sub")
	inst := &cluster.Instance{ID: "subsight",
		Source: cluster.Source{Addr: a.Addr, User: user, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "good", Topic: "subsight.good", Include: []string{db + `\.orders`}},
			{Name: "typo", Topic: "subsight.typo", Include: []string{db + `\.ordres`}}}}
	sight := func() []string { return warningsOf(t, ctx, inst, "subscription ") }
	if w := sight(); len(w) != 0 {
		t.Fatalf("a user without SELECT: warnings %q, want none about the subscriptions (it sees no table)", w)
	}
	exec("GRANT SELECT ON " + db + ".* TO '" + user + "'@'%'")
	want := "subscription typo takes no table user " + user + " sees on " + a.Addr + " now (include " + db + `\.ordres)`
	if w := sight(); len(w) != 1 || !strings.HasPrefix(w[0], want) {
		t.Fatalf("warnings %q, want one beginning %q", w, want)
	}
}

// replicationUser makes a user (named prefix and a number, password pw) with the
// replication grants alone, dropped when t ends.
func replicationUser(t *testing.T, exec func(string), prefix string) string {
	user := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1e9)
	exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	exec("GRANT REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER ADMIN ON *.* TO '" + user + "'@'%'")
	return user
}

// warningsOf is CheckSource's warnings for inst (its user's password pw) that begin with
// prefix.
func warningsOf(t *testing.T, ctx context.Context, inst *cluster.Instance, prefix string) []string {
	t.Helper()
	warnings, err := CheckSource(ctx, inst, func(cluster.Source) (config.Secret, error) { return "pw", nil }, false)
	if err != nil {
		t.Fatalf("CheckSource: %v", err)
	}
	var out []string
	for _, w := range warnings {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
