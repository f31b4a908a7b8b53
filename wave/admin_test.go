package wave

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
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

// TestAddInstanceCrashBetweenWrites: an add that dies between its two writes leaves a
// state that no wave runs in the wrong place, that `instance show` reports, and that
// adding the instance again completes.
func TestAddInstanceCrashBetweenWrites(t *testing.T) {
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			inst.ID = "half"
			inst.Source.Addr = "127.0.0.1:1" // a runner only has to exist, not to capture
			inst.Start = &cluster.Position{File: "bin.000001", Pos: 4}

			if _, err := cluster.AddInstance(ctx, &crashingCoord{Coordinator: c, crashAfter: 1}, &inst, "wave-a", nil); !errors.Is(err, errCrashed) {
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
			ids, err := cluster.ListInstances(ctx, c)
			if err != nil || !slices.Contains(ids, "half") {
				t.Fatalf("ListInstances = %v, %v: the half-done add is not listed", ids, err)
			}
			info, err := cluster.ShowInstance(ctx, c, "half", 0, time.Now)
			if err != nil {
				t.Fatalf("ShowInstance of the half-done add: %v", err)
			}
			if info.State != cluster.StateIncomplete || info.Error == "" || info.Assign != "wave-a" {
				t.Errorf("ShowInstance = %+v, want state %q with its assignment and an error saying what to do", info, cluster.StateIncomplete)
			}
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-a", nil); err != nil {
				t.Fatalf("adding the instance again after the crash: %v", err)
			}
			info, err = cluster.ShowInstance(ctx, c, "half", 0, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if info.Instance == nil || info.Assign != "wave-a" || info.State == cluster.StateIncomplete {
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
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-a", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-b", nil); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("second add = %v, want already exists", err)
			}
			info, err := cluster.ShowInstance(ctx, c, inst.ID, 0, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if info.Assign != "wave-a" {
				t.Errorf("assign = %q after a failed add, want wave-a", info.Assign)
			}
		})
	}
}
