package capture

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestServerIDClashIntegration: on the real MariaDB, two captures with one server_id
// (two instances of a source given the same one) end each other's binlog connection. Each
// reports the source's error as ErrServerIDClash (reason server_id_clash; it was a bare
// ERROR 4052, reason error) and backs off to its longest wait: over 6 s with waits of
// 50 ms up to 2 s, some 12 failed sessions between the two. Before, a session that read
// its first events before it was ended reset the wait to 50 ms: 14 to 35 here, depending
// on which of the two got that far (TestReconnectBackoff pins the rule down).
func TestServerIDClashIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx, cancel := context.WithTimeout(testenv.Context(t), 6*time.Second)
	defer cancel()
	start, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	// A source that writes: an idle one's dump thread notices that it was replaced only
	// at its next event or heartbeat, which would pace the clash by itself.
	db, exec, _ := testenv.ScratchDatabase(t, "clash")
	exec("CREATE TABLE " + db + ".t (id INT AUTO_INCREMENT PRIMARY KEY)")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			exec("INSERT INTO " + db + ".t VALUES ()")
			time.Sleep(10 * time.Millisecond)
		}
	}()
	serverID := testenv.ReplicaServerID()
	var errs, clashes atomic.Int64
	for _, id := range []string{"clash-a", "clash-b"} {
		out := make(chan Item, 1024)
		c := newTestCapture(t, a, id, serverID, out, []cluster.Subscription{{Name: "all", Topic: "rows", Include: []string{`no_such_db\..*`}}}, start)
		c.BackoffMin, c.BackoffMax = 50*time.Millisecond, 2*time.Second
		c.OnError = func(err error) {
			errs.Add(1)
			if errors.Is(err, ErrServerIDClash) {
				clashes.Add(1)
			}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-out:
				case <-ctx.Done():
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			if err := c.Run(ctx); err != nil {
				t.Errorf("%s: Run: %v", id, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("in 6 s: %d failed sessions, %d of them a server_id clash", errs.Load(), clashes.Load())
	if clashes.Load() == 0 {
		t.Errorf("no session ended as a server_id clash (%d failed)", errs.Load())
	}
	// Each waits 50, 100, 200, 400, 800, 1600 ms, then 2 s (±20 %): 6 or 7 attempts in
	// 6 s, each ending the other's session.
	if n := errs.Load(); n > 20 {
		t.Errorf("%d failed sessions in 6 s: the clashing captures did not back off", n)
	}
}
