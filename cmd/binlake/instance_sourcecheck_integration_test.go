//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
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
	_, _, conn := testenv.ScratchDatabase(t, "addcheck")
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
		writeFile(t, f, fmt.Sprintf("id: %s\nsource:\n  addr: %s\n  user: %s\n  flavor: mariadb\n  server_id: %d\n%ssubscriptions:\n  - name: all\n    topic: %s.rows\n",
			name, a.Addr, a.User, serverID, extra, name))
		return f
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), args, &out, &errOut)
		return out.String() + errOut.String(), err
	}

	clash := define("clash", own, "")
	out, err := run("add", "--check", "-connect", "-f", clash)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("server_id %d is the source's own", own)) {
		t.Fatalf("add --check -connect under the source's server_id: %v (%s), want it refused, naming it", err, out)
	}
	out, err = run("add", "-zk", zk, "-root", root, "-f", clash)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("instance add: the instance's server_id is taken at the source: server_id %d is the source's own", own)) {
		t.Fatalf("add under the source's server_id: %v (%s), want it refused, naming it", err, out)
	}
	if ids, err := cluster.ListInstances(testenv.Context(t), c); err != nil || len(ids) != 0 {
		t.Fatalf("after the refused add: instances %v (%v), want none stored", ids, err)
	}

	fine := define("fine", uint64(testenv.ReplicaServerID()), "")
	out, err = run("add", "--check", "-connect", "-f", fine)
	if err != nil || strings.Contains(out, "warning") || !strings.Contains(out, "source "+a.Addr+" read from here: binlog settings and server_id") {
		t.Fatalf("add --check -connect on a server_id of its own: %v\n%s\nwant it read from here, without a warning", err, out)
	}

	wrong := filepath.Join(dir, "wrong.password")
	writeFile(t, wrong, "not-the-password\n")
	locked := define("locked", uint64(testenv.ReplicaServerID()), "  password_file: "+wrong+"\n")
	out, err = run("add", "--check", "-connect", "-f", locked)
	if err != nil || !strings.Contains(out, "warning: the source's settings were not checked from here: connect to "+a.Addr) || strings.Contains(out, "read from here") {
		t.Fatalf("add --check -connect with a password the source refuses: %v\n%s\nwant a warning", err, out)
	}
	out, err = run("add", "-zk", zk, "-root", root, "-node", "wave-1", "-f", locked)
	if err != nil || strings.Count(out, "Access denied") != 1 || !strings.Contains(out, "instance locked added, assigned to wave-1") {
		t.Fatalf("add with a password the source refuses: %v\n%s\nwant the instance added, the source's refusal said once (by the start's line)", err, out)
	}
}
