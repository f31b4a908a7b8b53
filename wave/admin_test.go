package wave

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/testenv"
)

// crashingCoord stands for an admin process that dies after its crashAfter-th write: that
// write and every later one fail without reaching the coordinator.
type crashingCoord struct {
	coord.Coordinator
	crashAfter int

	mu     sync.Mutex
	writes int
}

var errCrashed = errors.New("the admin process died here (injected)")

func (c *crashingCoord) Put(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	c.mu.Lock()
	c.writes++
	n := c.writes
	c.mu.Unlock()
	if n > c.crashAfter {
		return 0, errCrashed
	}
	return c.Coordinator.Put(ctx, key, data, version)
}

// adminCoordinators are the two real coordinators: they differ in what a half-done add
// leaves (ZooKeeper creates the definition's node empty as the assignment's parent).
func adminCoordinators(t *testing.T) map[string]func(t *testing.T) coord.Coordinator {
	return map[string]func(t *testing.T) coord.Coordinator{
		"single": func(t *testing.T) coord.Coordinator {
			c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		},
		"zk": func(t *testing.T) coord.Coordinator {
			addr := testenv.Require(t, testenv.ZooKeeper)
			root := fmt.Sprintf("/binlake-test-admin-%d", time.Now().UnixNano())
			c, err := zk.New(t.Context(), zk.Options{Servers: strings.Split(addr, ","), Root: root, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
}

// TestAddInstanceCrashBetweenWrites: an add that dies between its two writes leaves a
// state that no wave runs in the wrong place, that `instance show` reports, and that
// adding the instance again completes.
func TestAddInstanceCrashBetweenWrites(t *testing.T) {
	for name, open := range adminCoordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := validInstance()
			inst.ID = "half"
			inst.Source.Addr = "127.0.0.1:1" // a runner only has to exist, not to capture
			inst.Start = &Position{File: "bin.000001", Pos: 4}

			if _, err := AddInstance(ctx, &crashingCoord{Coordinator: c, crashAfter: 1}, &inst, "wave-a", nil); !errors.Is(err, errCrashed) {
				t.Fatalf("add with a crash after the first write = %v, want the injected crash", err)
			}

			// A restarted wave: an instance defined but not yet assigned would run on
			// whichever wave wins its election, not on the node it was placed on.
			other, err := New(Options{Node: "wave-b", Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer other.stopRunners()
			other.reconcile(ctx)
			if len(other.runners) != 0 {
				t.Errorf("after the crash, wave-b runs %v, placed on wave-a", slices.Collect(maps.Keys(other.runners)))
			}

			// A restarted admin sees the half-done add and can complete it.
			ids, err := ListInstances(ctx, c)
			if err != nil || !slices.Contains(ids, "half") {
				t.Fatalf("ListInstances = %v, %v: the half-done add is not listed", ids, err)
			}
			info, err := ShowInstance(ctx, c, "half", 0, time.Now)
			if err != nil {
				t.Fatalf("ShowInstance of the half-done add: %v", err)
			}
			if info.State != StateIncomplete || info.Error == "" || info.Assign != "wave-a" {
				t.Errorf("ShowInstance = %+v, want state %q with its assignment and an error saying what to do", info, StateIncomplete)
			}
			if _, err := AddInstance(ctx, c, &inst, "wave-a", nil); err != nil {
				t.Fatalf("adding the instance again after the crash: %v", err)
			}
			info, err = ShowInstance(ctx, c, "half", 0, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if info.Instance == nil || info.Assign != "wave-a" || info.State == StateIncomplete {
				t.Errorf("after the second add: %+v, want the definition assigned to wave-a", info)
			}
			placed, err := New(Options{Node: "wave-a", Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer placed.stopRunners()
			placed.reconcile(ctx)
			if _, ok := placed.runners["half"]; !ok {
				t.Error("wave-a does not run the completed instance")
			}
		})
	}
}

// TestAddInstanceExisting: adding an instance that exists fails and leaves its
// assignment alone.
func TestAddInstanceExisting(t *testing.T) {
	for name, open := range adminCoordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := validInstance()
			if _, err := AddInstance(ctx, c, &inst, "wave-a", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := AddInstance(ctx, c, &inst, "wave-b", nil); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("second add = %v, want already exists", err)
			}
			info, err := ShowInstance(ctx, c, inst.ID, 0, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if info.Assign != "wave-a" {
				t.Errorf("assign = %q after a failed add, want wave-a", info.Assign)
			}
		})
	}
}

// TestMoveInstanceRecordsTheMove: a manual move rewrites the assignment and records the
// move, so the balancer's plans let the instance cool down before moving it again.
func TestMoveInstanceRecordsTheMove(t *testing.T) {
	c := adminCoordinators(t)["single"](t)
	ctx := t.Context()
	inst := &Instance{ID: "orders", Source: Source{Addr: "127.0.0.1:3306", User: "u", Flavor: FlavorMariaDB, ServerID: 7},
		Subscriptions: []Subscription{{Name: "all", Topic: "t"}}}
	if _, err := AddInstance(ctx, c, inst, "wave-1", nil); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UTC()
	if n, err := MoveInstance(ctx, c, "orders", "wave-2", nil); err != nil || n != "wave-2" {
		t.Fatalf("MoveInstance = %q, %v", n, err)
	}
	cl, err := readCluster(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	in := cl.req.Instances[0]
	if in.Node != "wave-2" || in.MovedAt.Before(before) {
		t.Errorf("after the move the balancer reads %+v, want it on wave-2, moved just now", in)
	}
	r, ok := readMoveRecord(ctx, c, "orders")
	if !ok || r.From != "wave-1" || r.To != "wave-2" || r.Reason != "manual" {
		t.Errorf("move record %+v (%v), want wave-1 → wave-2, manual", r, ok)
	}
	// wave-1 and wave-2 are not live: both are listed as dead, the instance an orphan.
	if o := cl.orphans(); len(o) != 1 || o[0] != "orders" {
		t.Errorf("orphans %v, want [orders] (no wave is live)", o)
	}
}
