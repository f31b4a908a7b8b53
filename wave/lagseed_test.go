package wave_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestNewTermKeepsTheLastTermsLag: a term that begins while its source is down (a
// failover to this wave, a restart, a redefinition) starts from the lag its last term
// recorded, and it grows: it had none until its first transaction or heartbeat, so
// /status, show and binlake_wave_lag_seconds had nothing and the lag alert went blind,
// while an instance of the same source in its term since before showed its lag growing
// (an outside trial).
func TestNewTermKeepsTheLastTermsLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := singleCoord(t)
	inst := &cluster.Instance{ID: "seeded", Source: cluster.Source{Addr: testenv.FreeAddr(t), User: "repl", Flavor: cluster.FlavorMariaDB, ServerID: 4242},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "seeded.all"}}}
	// The last term's: an offset, and a record of a wave gone while it reconnected,
	// everything published up to 100 s ago.
	off, _ := json.Marshal(cluster.Position{File: "binlog.000001", Pos: 4})
	if _, err := c.Put(ctx, cluster.OffsetKey(inst.ID), off, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	last := time.Now().Add(-100 * time.Second).Unix()
	rec, _ := json.Marshal(cluster.RecordedStatus{Node: "wave-gone", State: cluster.StateReconnecting, Since: "x", Lag: &cluster.LagState{TS: last}})
	if _, err := c.Put(ctx, cluster.StatusKey(inst.ID), rec, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	_, wv, _ := embeddedOn(t, ctx, c, inst, 0)
	for {
		for _, st := range wv.Status() {
			// Its source never answers: never running (it said running from the term's
			// start, and the alarm resolved the instance's stopped alert on it).
			if st.ID == inst.ID && st.State == cluster.StateRunning {
				t.Fatalf("status %+v: running, with a source that never answered", st)
			}
			if st.ID == inst.ID && st.State == cluster.StateReconnecting {
				if st.LagS == nil || *st.LagS < 100 {
					t.Fatalf("status %+v, lag %v: want the last term's lag, 100 s or more", st, st.LagS)
				}
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("never reconnecting: %+v", wv.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
