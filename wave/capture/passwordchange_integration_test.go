package capture

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestPasswordChangedUnderARunningCaptureIntegration: the password of a running
// capture's user changes and its binlog connection is killed. The reconnect error the
// capture reports (the instance's state through the backoff) holds the source's access
// refusal, which the stale connection's cleanup met, not only the killed connection's
// EOF: the state read "reconnecting, error" with io.ReadFull's EOF for the whole backoff
// (an outside trial).
func TestPasswordChangedUnderARunningCaptureIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_pwchange", "(id INT PRIMARY KEY)")
	user := fmt.Sprintf("binlake_pw%d", time.Now().UnixNano()%1e9)
	exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'first'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	exec("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '" + user + "'@'%'")
	exec("GRANT SELECT ON " + db + ".* TO '" + user + "'@'%'")

	out := make(chan Item, 64)
	inst := &cluster.Instance{ID: "pwchange", Source: cluster.Source{Addr: a.Addr, User: user, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()}}
	filter, err := cluster.NewFilter([]cluster.Subscription{{Name: "s", Topic: "s", Include: []string{db + `\.t`}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []error
	c, err := New(Options{Inst: inst, Password: "first", Filter: filter, Out: out,
		Log: slog.New(slog.DiscardHandler), BackoffMin: 2 * time.Second, BackoffMax: 4 * time.Second, EventQueue: 64, Heartbeat: time.Second,
		OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }}, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.sc.close)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.Run(cctx)

	exec("INSERT INTO " + db + ".t VALUES (1)")
	select {
	case <-out: // running: its connection is up
	case <-ctx.Done():
		t.Fatal("no row from the capture")
	}
	exec("ALTER USER '" + user + "'@'%' IDENTIFIED BY 'second'")
	exec("KILL USER '" + user + "'") // its binlog connection among them
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		first := append([]error(nil), reported...)
		mu.Unlock()
		if len(first) > 0 {
			if !isAccessDenied(first[0]) || !strings.Contains(first[0].Error(), "the source now refuses the login") {
				t.Fatalf("the first error reported after the kill: %v; want the access refusal with it", first[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no error reported within 20 s of the kill")
		}
	}
}
