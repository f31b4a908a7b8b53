//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceSnapshotOnStoppedInstance: `instance snapshot` on an instance its wave
// holds stopped says what the request does: restart it at the source's end when its
// binlog was purged, nothing until it runs again on another error.
func TestInstanceSnapshotOnStoppedInstance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, zkAddr, root := testCoordinator(t, ctx, "inst-snap")
	registerWaves(t, zkAddr, root, "wave-x")
	for reason, want := range map[string]string{
		wave.ReasonBinlogPurged:    "the instance is stopped on a purged binlog: its leader restarts it at the source's current end with this snapshot",
		wave.ReasonMessageTooLarge: "the instance is stopped (message_too_large), which a snapshot does not mend: the snapshot starts once it runs again",
	} {
		id := strings.ReplaceAll(reason, "_", "-")
		inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: "127.0.0.1:1", User: "u", ServerID: 4248 + uint32(len(id))}, // its own, which add requires
			Subscriptions: []cluster.Subscription{{Name: "all", Topic: "snap.rows"}}}
		if _, err := cluster.AddInstance(ctx, c, inst, "wave-x", nil); err != nil {
			t.Fatal(err)
		}
		st, _ := json.Marshal(cluster.RecordedStatus{Node: "wave-x", State: cluster.StateError, Reason: reason, Error: "…", Since: time.Now().UTC().Format(time.RFC3339)})
		if _, err := c.Put(ctx, cluster.StatusKey(id), st, coord.AnyVersion); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if err := runInstance(ctx, []string{"snapshot", id, "-zk", zkAddr, "-root", root}, &out, &errOut); err != nil {
			t.Fatalf("instance snapshot %s: %v\n%s", id, err, errOut.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("instance snapshot of an instance stopped on %s said:\n%s\nwant %q", reason, out.String(), want)
		}
	}
}
