//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceAddReadsTheSourceIntegration: on the real MariaDB and ZooKeeper, `instance
// add` refuses an instance under the source's own server_id, naming it, and stores
// nothing; `add --check -connect` says the same before anything is stored, and passes a
// server_id of the instance's own on this source (binlog on, ROW, FULL: no warning); a
// source it cannot log in to is a warning, and the add goes on (the waves read the
// source from their hosts).
func TestInstanceAddReadsTheSourceIntegration(t *testing.T) {
	zk := testenv.Require(t, testenv.ZooKeeper)
	a := testenv.RequireMySQL(t)
	db, exec, conn := testenv.ScratchDatabase(t, "addcheck")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)") // what the subscription takes: a clean check warns of nothing
	r, err := conn.Execute("SELECT @@server_id")
	if err != nil {
		t.Fatal(err)
	}
	own, _ := r.GetUint(0, 0)
	root := fmt.Sprintf("/binlake-add-source-%d", time.Now().UnixNano())
	c := registerWaves(t, zk, root, "wave-1")
	dir := t.TempDir()
	define := func(name string, serverID uint64, extra string) string {
		f := filepath.Join(dir, name+".yaml")
		writeFile(t, f, fmt.Sprintf("id: %s\nsource:\n  addr: %s\n  user: %s\n  flavor: mariadb\n  server_id: %d\n%ssubscriptions:\n  - name: all\n    topic: %s.rows\n    include: ['%s\\.t']\n",
			name, a.Addr, a.User, serverID, extra, name, db))
		return f
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), args, &out, &errOut)
		return out.String() + errOut.String(), err
	}

	clash := define("clash", own, "")
	out, err := run("add", "--check", "-connect", "-f", clash)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("server_id %d is the source's own", own)) || strings.Contains(out, "is valid") {
		t.Fatalf("add --check -connect under the source's server_id: %v (%s), want it refused, naming it, and not called valid", err, out)
	}
	out, err = run("add", "-zk", zk, "-root", root, "-f", clash)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("instance add: the instance's server_id is taken at the source: server_id %d is the source's own", own)) {
		t.Fatalf("add under the source's server_id: %v (%s), want it refused, naming it", err, out)
	}
	if ids, err := cluster.ListInstances(testenv.Context(t), c); err != nil || len(ids) != 0 {
		t.Fatalf("after the refused add: instances %v (%v), want none stored", ids, err)
	}

	mysqlFlavor := filepath.Join(dir, "flavor.yaml")
	writeFile(t, mysqlFlavor, fmt.Sprintf("id: flavor\nsource:\n  addr: %s\n  user: %s\n  server_id: %d\nsubscriptions:\n  - name: all\n    topic: f.rows\n",
		a.Addr, a.User, testenv.ReplicaServerID())) // flavor left out: mysql
	out, err = run("add", "--check", "-connect", "-f", mysqlFlavor)
	if err == nil || !strings.Contains(err.Error(), "source.flavor is mysql, and "+a.Addr+" answers as mariadb") || !strings.Contains(err.Error(), "set flavor: mariadb") {
		t.Fatalf("add --check -connect of a mysql-flavoured instance of a MariaDB: %v (%s), want it refused naming the fix", err, out)
	}

	fine := define("fine", uint64(testenv.ReplicaServerID()), "")
	out, err = run("add", "--check", "-connect", "-f", fine)
	if err != nil || strings.Contains(out, "warning") || !strings.Contains(out, fine+" is valid; source "+a.Addr+" read from here: binlog settings, privileges and server_id") {
		t.Fatalf("add --check -connect on a server_id of its own: %v\n%s\nwant it read from here, without a warning", err, out)
	}

	wrong := filepath.Join(dir, "wrong.password")
	writeFile(t, wrong, "not-the-password\n")
	locked := define("locked", uint64(testenv.ReplicaServerID()), "  password_file: "+wrong+"\n")
	out, err = run("add", "--check", "-connect", "-f", locked)
	if err == nil || !strings.Contains(out, "warning: the source's settings were not checked from here: connect to "+a.Addr) ||
		!strings.Contains(err.Error(), locked+" is valid, but source "+a.Addr+" could not be read from here (above): nothing was checked") {
		t.Fatalf("add --check -connect with a password the source refuses: %v\n%s\nwant a warning, and a failure saying nothing was checked", err, out)
	}
	out, err = run("add", "-zk", zk, "-root", root, "-node", "wave-1", "-f", locked)
	if err != nil || strings.Count(out, "Access denied") != 1 || !strings.Contains(out, "instance locked added, assigned to wave-1") {
		t.Fatalf("add with a password the source refuses: %v\n%s\nwant the instance added, the source's refusal said once (by the start's line)", err, out)
	}
}

// TestInstanceSetReadsTheSourceIntegration: `instance set -f` on an instance whose wave
// reads the source (a binlog dump registered under its server_id, here) is no clash with
// that connection, and leaves it be; a new server_id another replica of the source
// has is refused, and the definition kept.
func TestInstanceSetReadsTheSourceIntegration(t *testing.T) {
	zk := testenv.Require(t, testenv.ZooKeeper)
	a := testenv.RequireMySQL(t)
	root := fmt.Sprintf("/binlake-set-source-%d", time.Now().UnixNano())
	c := registerWaves(t, zk, root, "wave-1")
	dir := t.TempDir()
	db, exec, _ := testenv.ScratchDatabase(t, "setcheck")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)") // what the subscription takes
	own, other := testenv.ReplicaServerID(), testenv.ReplicaServerID()
	define := func(serverID uint32, topic string) string {
		f := filepath.Join(dir, fmt.Sprintf("orders-%d.yaml", serverID))
		writeFile(t, f, fmt.Sprintf("id: orders\nsource:\n  addr: %s\n  user: %s\n  flavor: mariadb\n  server_id: %d\nsubscriptions:\n  - name: all\n    topic: %s\n    include: ['%s\\.t']\n",
			a.Addr, a.User, serverID, topic, db))
		return f
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), args, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := run("add", "-zk", zk, "-root", root, "-node", "wave-1", "-f", define(own, "orders.rows")); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	ownDump := holdDump(t, a, own)
	holdDump(t, a, other)

	out, err := run("set", "orders", "-zk", zk, "-root", root, "-f", define(own, "orders.rows2"))
	if err != nil || !strings.Contains(out, "instance orders changed") || strings.Contains(out, "warning") {
		t.Fatalf("set -f keeping the server_id its wave reads under: %v\n%s\nwant it changed, without a warning", err, out)
	}
	out, err = run("set", "orders", "-zk", zk, "-root", root, "-f", define(other, "orders.rows2"))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("server_id %d is already used by a replica of the source", other)) {
		t.Fatalf("set -f to a server_id another replica has: %v\n%s\nwant it refused", err, out)
	}
	inst, err := cluster.GetInstance(testenv.Context(t), c, "orders")
	if err != nil || inst.Source.ServerID != own || inst.Subscriptions[0].Topic != "orders.rows2" {
		t.Fatalf("after the sets: %+v, %v; want server_id %d and topic orders.rows2", inst, err, own)
	}
	select {
	case err := <-ownDump:
		t.Fatalf("the set ended the instance's binlog connection: %v", err)
	default:
	}
}

// holdDump reads the source's binlog under serverID until the test ends, as a wave's
// capture would; the channel gets the error that ends it early.
func holdDump(t *testing.T, a testenv.MySQLAddr, serverID uint32) <-chan error {
	t.Helper()
	host, port, _ := net.SplitHostPort(a.Addr)
	p, _ := strconv.Atoi(port)
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: serverID, Flavor: cluster.FlavorMariaDB,
		Host: host, Port: uint16(p), User: a.User, Password: a.Password, DisableRetrySync: true, Logger: quietLogger()})
	t.Cleanup(syncer.Close)
	pos, err := capture.CurrentPosition(testenv.Context(t), cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	st, err := syncer.StartSync(mysql.Position{Name: pos.File, Pos: pos.Pos})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for {
			if _, err := st.GetEvent(ctx); err != nil {
				if ctx.Err() == nil {
					ended <- err
				}
				return
			}
		}
	}()
	// Registered once the source lists it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := capture.CheckSource(testenv.Context(t), cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password, 0)
		if err == nil && len(s.ServerIDProblems(serverID)) > 0 {
			return ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("server_id %d never listed among the source's replicas (%v)", serverID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
