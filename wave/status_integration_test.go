package wave_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestWaveStatusShowsCommittedPositionIntegration: once rows are committed, /status
// shows the committed position, at or past the source's position after those rows, not
// the position the instance started from.
func TestWaveStatusShowsCommittedPositionIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	conn := wavetest.Connect(t)
	db := fmt.Sprintf("wave_i18_status_%d", time.Now().UnixNano()%1e9)
	wavetest.MustExec(t, conn, "CREATE DATABASE "+db)
	t.Cleanup(func() { wavetest.Connect(t).Execute("DROP DATABASE IF EXISTS " + db) })
	wavetest.MustExec(t, conn, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	start := wavetest.CurrentPos(t)
	inst := &cluster.Instance{ID: "status", Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Start: start, Subscriptions: []cluster.Subscription{{Name: "all", Topic: "status.all", Include: []string{db + `\.t`}}}}
	ctx := testenv.Context(t)
	b, _, addr := embedded(t, ctx, inst, 0)

	wavetest.MustExec(t, conn, "INSERT INTO "+db+".t VALUES (1)")
	after := wavetest.CurrentPos(t)
	if got := readBus(t, ctx, b, "status.all", 1); len(got) != 1 {
		t.Fatalf("got %d messages, want the inserted row", len(got))
	}
	// The commit follows the acknowledgement on the committer's next tick (500 ms):
	// read /status until it moves, for at most a bound far above that.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var st struct {
			Instances []wave.InstanceStatus `json:"instances"`
		}
		body := wavetest.HTTPGet(t, "http://"+addr+"/status")
		if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Instances) != 1 {
			t.Fatalf("/status = %s (%v)", body, err)
		}
		p := st.Instances[0].Position
		if !before(p, *after) {
			break // at or past the inserted row's transaction
		}
		if time.Now().After(deadline) {
			t.Fatalf("/status position %s after the row was committed, want at least %s (started at %s)", p, after, start)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
	}
}

// before orders binlog positions; file names are zero-padded, so they sort as strings.
func before(p, q cluster.Position) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	return p.Pos < q.Pos
}
