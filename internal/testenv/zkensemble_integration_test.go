package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestZKEnsembleIntegration checks the HA tests' tooling end to end: the ensemble has one
// leader, stopping it makes another member leader, and the stopped member rejoins as a
// follower once started again.
func TestZKEnsembleIntegration(t *testing.T) {
	e, ctx, leader := ensembleAndLeader(t)
	leaders := 0
	for m := 1; m <= len(e.Servers); m++ {
		mode, err := e.Mode(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if mode == "leader" {
			leaders++
		} else if mode != "follower" {
			t.Errorf("member %d mode = %q, want leader or follower", m, mode)
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders, want 1", leaders)
	}

	e.KillMember(t, leader)
	if _, err := e.Mode(ctx, leader); err == nil {
		t.Fatalf("member %d still answers srvr after being killed", leader)
	}
	next, err := e.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("member %d is leader again while it is down", next)
	}

	e.StartMember(t, leader)
	mode, err := e.Mode(ctx, leader)
	if err != nil {
		t.Fatalf("restarted member %d: %v", leader, err)
	}
	if mode != "follower" {
		t.Errorf("restarted member %d mode = %q, want follower (member %d leads)", leader, mode, next)
	}
	if err := e.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
}

// ensembleAndLeader takes the ensemble for the test and returns it, a context for the
// test's waits, and the member that leads.
func ensembleAndLeader(t *testing.T) (*ZKEnsemble, context.Context, int) {
	e := RequireZKEnsemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e, ctx, leader
}

func TestZKEnsembleRejectsBadMember(t *testing.T) {
	e := &ZKEnsemble{Servers: []string{"127.0.0.1:2182", "127.0.0.1:2183", "127.0.0.1:2184"}}
	for _, m := range []int{0, 4, -1} {
		if _, err := e.Mode(context.Background(), m); err == nil {
			t.Errorf("Mode(%d) succeeded, want an out-of-range error", m)
		}
	}
}

// TestZKEnsembleMemberRecoversFromAnEmptyLogIntegration: ZooKeeper 3.8.0 exits at start on
// an empty newest transaction log, which a SIGKILL leaves when it lands as the log is
// created (ZOOKEEPER-2332; it failed a CI run's leader-failure test). zookeeper.sh
// member-start then sets the member's data aside and starts it empty, and it syncs from
// the leader: the member serves again as a follower, with what was committed before.
func TestZKEnsembleMemberRecoversFromAnEmptyLogIntegration(t *testing.T) {
	e, ctx, leader := ensembleAndLeader(t)
	member := leader%len(e.Servers) + 1 // a follower: no election
	// A committed write, so every member has a transaction log to empty.
	conn, _, err := zk.Connect(e.Servers, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := fmt.Sprintf("/binlake-test-recover-%d", time.Now().UnixNano())
	if _, err := conn.Create(path, []byte("committed"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	defer func() { _ = conn.Delete(path, -1) }()

	data := filepath.Join(e.dir, strconv.Itoa(member), "data")
	asideBefore, _ := filepath.Glob(filepath.Join(data, "version-2.unloadable-*"))
	e.KillMember(t, member)
	logs, _ := filepath.Glob(filepath.Join(data, "version-2", "log.*"))
	if len(logs) == 0 {
		t.Fatalf("member %d has no transaction log in %s after a committed write", member, data)
	}
	slices.Sort(logs) // log.<zxid in hex>, the same width within an epoch: the last is the newest
	newest := logs[len(logs)-1]
	if err := os.Truncate(newest, 0); err != nil {
		t.Fatal(err)
	}
	e.StartMember(t, member)

	if mode, err := e.Mode(ctx, member); err != nil || mode != "follower" {
		t.Fatalf("member %d after a start on an empty log: mode %q, %v; want follower", member, mode, err)
	}
	if aside, _ := filepath.Glob(filepath.Join(data, "version-2.unloadable-*")); len(aside) <= len(asideBefore) {
		t.Errorf("member %d serves, but its unloadable data was not set aside in %s", member, data)
	}
	alone, _, err := zk.Connect([]string{e.Servers[member-1]}, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	if _, err := alone.Sync(path); err != nil {
		t.Fatalf("sync through member %d: %v", member, err)
	}
	if got, _, err := alone.Get(path); err != nil || string(got) != "committed" {
		t.Errorf("member %d after recovery: %s = %q, %v; want \"committed\"", member, path, got, err)
	}
}

// testLogger sends the ZooKeeper client's own lines into the test's log.
type testLogger struct{ t testing.TB }

func (l testLogger) Printf(format string, args ...any) {
	l.t.Logf("zookeeper client: "+format, args...)
}
