package wave_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestRemoveInstanceInErrorStateIntegration: removing an instance that its wave holds in
// the error state (its binlog purged) while the wave keeps running removes all of it, on
// every try: the wave does not take the instance back half-way through the removal and
// start it again as a "first start" from the source's current end (which would skip
// the rows in between without a word), and the removal does not fail on the children
// the wave creates meanwhile.
func TestRemoveInstanceInErrorStateIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			base := open(t)
			c := &offsetWrites{Coordinator: base}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			b, pub := memoryBus(t)
			wv, stop := runWave(t, ctx, wave.Options{Node: "wave-r", Coord: c, Publisher: pub, Topics: b,
				TopicSpec: bus.TopicSpec{Partitions: 1}, PollInterval: 100 * time.Millisecond, Logger: testLogger(t)})
			defer stop()

			for try := range 3 {
				id := fmt.Sprintf("purged-%d", try)
				// No start: a wave that found no offset would begin at the source's end.
				inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB,
					ServerID: testenv.ReplicaServerID()}, Subscriptions: []cluster.Subscription{{Name: "all", Topic: "purged.all"}}}
				if _, err := cluster.AddInstance(ctx, c, inst, "wave-r", nil); err != nil {
					t.Fatal(err)
				}
				// The offset of an instance that ran, in a binlog the source no longer has.
				gone, _ := json.Marshal(cluster.Position{File: "binlog.999999", Pos: 4})
				if _, err := c.Put(ctx, cluster.OffsetKey(id), gone, coord.AnyVersion); err != nil {
					t.Fatal(err)
				}
				waitState(t, ctx, wv, id, cluster.StateError)

				c.count(id) // from here on, no term of the wave may write the instance's offset
				if err := cluster.RemoveInstance(ctx, base, id); err != nil {
					t.Fatalf("try %d: remove of an instance in the error state: %v", try, err)
				}
				// The wave polls every 100 ms: give it several polls to take the instance
				// back, if it would.
				time.Sleep(time.Second)
				for _, key := range []string{cluster.InstanceKey(id), cluster.OffsetKey(id), cluster.AssignKey(id)} {
					if v, err := c.Get(ctx, key); !errors.Is(err, coord.ErrNotFound) {
						t.Errorf("try %d: after the remove, %s = %q, %v; want it gone", try, key, v.Data, err)
					}
				}
				if n := c.count(id); n > 0 {
					t.Errorf("try %d: during the remove, the wave wrote the instance's offset %d times (a new term started it again)", try, n)
				}
				if ids, err := cluster.ListInstances(ctx, c); err != nil || slices.Contains(ids, id) {
					t.Errorf("try %d: instances after the remove: %v, %v", try, ids, err)
				}
				for _, st := range wv.Status() {
					if st.ID == id {
						t.Errorf("try %d: the wave still runs the removed instance: %+v", try, st)
					}
				}
				// Its series are gone, counters too: they stayed, and the agent sent the
				// instance's rates at 0 until the wave restarted (an outside trial).
				rec := httptest.NewRecorder()
				wv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				if page := rec.Body.String(); strings.Contains(page, `instance="`+id+`"`) {
					for _, line := range strings.Split(page, "\n") {
						if strings.Contains(line, `instance="`+id+`"`) {
							t.Errorf("try %d: after the remove, /metrics has %s", try, line)
						}
					}
				}
			}
		})
	}
}

// offsetWrites counts the wave's writes of each instance's offset.
type offsetWrites struct {
	coord.Coordinator
	mu     sync.Mutex
	writes map[string]int
}

func (c *offsetWrites) Put(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	c.mu.Lock()
	if c.writes == nil {
		c.writes = map[string]int{}
	}
	c.writes[key]++
	c.mu.Unlock()
	return c.Coordinator.Put(ctx, key, data, version)
}

// count returns the writes of instance id's offset since the last call.
func (c *offsetWrites) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.writes[cluster.OffsetKey(id)]
	delete(c.writes, cluster.OffsetKey(id))
	return n
}

// waitState waits until the wave shows instance id in state.
func waitState(t *testing.T, ctx context.Context, wv *wave.Wave, id, state string) {
	t.Helper()
	for {
		for _, st := range wv.Status() {
			if st.ID == id && st.State == state {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("instance %s never reached state %s: %+v", id, state, wv.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
