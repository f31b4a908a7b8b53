//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceAddFixesStart: `instance add` of an instance without a start fixes where it
// begins at the add, not at a wave's first connection: the source's end, stored as the
// start, when add can read the source; else the add's time, and says which.
func TestInstanceAddFixesStart(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, zkAddr, root := testCoordinator(t, ctx, "inst-start")
	dir := t.TempDir()
	for id, addr := range map[string]string{"near": a.Addr, "far": "127.0.0.1:1"} {
		writeFile(t, filepath.Join(dir, id+".yaml"), "id: "+id+"\nsource:\n  addr: "+addr+"\n  user: "+a.User+
			"\n  flavor: mariadb\n  server_id: 4247\nsubscriptions:\n  - name: all\n    topic: "+id+".rows\n")
	}
	add := func(id string) (string, *cluster.Instance) {
		t.Helper()
		var out, errOut bytes.Buffer
		before := time.Now()
		err := runInstance(ctx, []string{"add", "-zk", zkAddr, "-root", root, "-node", "wave-later", "-force", "-f", filepath.Join(dir, id+".yaml")}, &out, &errOut)
		if err != nil {
			t.Fatalf("instance add %s: %v\n%s", id, err, errOut.String())
		}
		inst, err := cluster.GetInstance(ctx, c, id)
		if err != nil {
			t.Fatal(err)
		}
		if inst.Start == nil && (inst.AddedAt < before.Unix() || inst.AddedAt > time.Now().Unix()) {
			t.Fatalf("%s stored with neither a start nor the add's time: %+v", id, inst)
		}
		return out.String(), inst
	}

	out, inst := add("near")
	if inst.Start == nil || !strings.HasPrefix(inst.Start.File, "binlog.") || inst.Start.GTIDSet == "" || inst.AddedAt != 0 {
		t.Fatalf("near: stored start %v, added_at %d; want the source's end, with its GTID set", inst.Start, inst.AddedAt)
	}
	if want := "start: " + inst.Start.String() + ", the source's end now"; !strings.Contains(out, want) {
		t.Fatalf("near: add said:\n%s\nwant %q", out, want)
	}

	out, inst = add("far")
	if inst.Start != nil {
		t.Fatalf("far: stored start %v, want none (the source cannot be read)", inst.Start)
	}
	if !strings.Contains(out, "start: the source could not be read from here (connect to 127.0.0.1:1") ||
		!strings.Contains(out, "the first wave to connect begins at the start of the binlog file the source was writing at") {
		t.Fatalf("far: add said:\n%s", out)
	}
}
