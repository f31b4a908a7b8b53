package wave

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// flakyCoord is a coordinator whose reads of chosen keys fail, as ZooKeeper's do while
// the session reconnects.
type flakyCoord struct {
	coord.Coordinator
	mu      sync.Mutex
	failGet map[string]error
}

func (f *flakyCoord) Get(ctx context.Context, key string) (coord.Value, error) {
	f.mu.Lock()
	err := f.failGet[key]
	f.mu.Unlock()
	if err != nil {
		return coord.Value{}, err
	}
	return f.Coordinator.Get(ctx, key)
}

func (f *flakyCoord) setFail(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.failGet, key)
		return
	}
	f.failGet[key] = err
}

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...bus.Message) error { return nil }
func (nopPublisher) Close() error                                  { return nil }

// TestReconcileKeepsRunnersOnReadErrors: a failed read of an instance's definition or
// assignment leaves its runner running; only NotFound (the instance was removed) stops it.
func TestReconcileKeepsRunnersOnReadErrors(t *testing.T) {
	for _, key := range []string{cluster.InstanceKey("x"), cluster.AssignKey("x")} {
		t.Run(key, func(t *testing.T) {
			base, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
			if err != nil {
				t.Fatal(err)
			}
			defer base.Close()
			c := &flakyCoord{Coordinator: base, failGet: map[string]error{}}
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			inst.ID = "x"
			inst.Source.Addr = "127.0.0.1:1" // the runner's capture keeps reconnecting: it only has to exist
			inst.Start = &cluster.Position{File: "bin.000001", Pos: 4}
			if _, err := cluster.AddInstance(ctx, c, &inst, "me", nil); err != nil {
				t.Fatal(err)
			}
			w, err := New(Options{Node: "me", Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.stopRunners()

			w.reconcile(ctx)
			first, ok := w.runners["x"]
			if !ok {
				t.Fatal("no runner for the instance")
			}
			c.setFail(key, errors.New("zk: connection closed (injected)"))
			w.reconcile(ctx)
			if w.runners["x"] != first {
				t.Fatalf("a failed read of %s stopped or replaced the runner", key)
			}
			select {
			case <-first.done:
				t.Fatal("the runner ended after a failed read")
			default:
			}

			c.setFail(key, nil)
			// The removal withdraws the definition and waits for the runner to let go,
			// which it does at the wave's next poll.
			removed := make(chan error, 1)
			go func() { removed <- cluster.RemoveInstance(ctx, c, "x") }()
			for {
				if v, err := c.Get(ctx, cluster.InstanceKey("x")); err == nil && len(v.Data) == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			w.reconcile(ctx)
			if _, ok := w.runners["x"]; ok {
				t.Fatal("the runner of an instance being removed still runs")
			}
			<-first.done
			if err := <-removed; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReconcileSaysWhatItFoundToRun: a wave's first look at the instances says how many
// it runs, and that it runs none when the others run them all (a wave back after its
// failover logged only "wave running", which read as running what it ran before).
func TestReconcileSaysWhatItFoundToRun(t *testing.T) {
	for _, tc := range []struct {
		node, want string
	}{
		{"me", `msg="instances to run" component=wave node=me count=1 of=1`},
		{"back", `msg="no instance for this wave to run: the other waves run them; binlake instance rebalance -apply gives it a share (balancer.auto is off)"`},
	} {
		t.Run(tc.node, func(t *testing.T) {
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			inst.Source.Addr = "127.0.0.1:1"
			inst.Start = &cluster.Position{File: "bin.000001", Pos: 4}
			c := coordWith(t, inst)
			var logs testenv.SyncBuffer
			w, err := New(Options{Node: tc.node, Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer w.stopRunners()
			w.reconcile(ctx)
			w.reconcile(ctx)
			if got := logs.String(); strings.Count(got, tc.want) != 1 {
				t.Errorf("log after two looks:\n%s\nwant %q once", got, tc.want)
			}
		})
	}
}

// A source that cannot be reached when the wave starts leading its instance (here a new
// one, whose start position is read from the source) counts in
// binlake_wave_source_errors_total at each attempt, as its failures after a start do:
// BinlakeWaveSourceErrors never fired for a source down from the start (outside trial:
// 43 failed attempts, the counter at 0).
func TestSourceDownFromTheStartCounts(t *testing.T) {
	ctx := t.Context()
	inst := wavetest.ValidInstance()
	inst.Source.Addr = "127.0.0.1:1"
	c := coordWith(t, inst)
	w, err := New(Options{Node: "me", Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.stopRunners()
	w.reconcile(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for testutil.ToFloat64(w.m.reconnects.WithLabelValues(inst.ID)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("source errors %v after 20 s of an unreachable source, want 2 or more", testutil.ToFloat64(w.m.reconnects.WithLabelValues(inst.ID)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// coordWith is a coordinator (coord/single, closed when t ends) holding inst, assigned
// to wave "me".
func coordWith(t *testing.T, inst cluster.Instance) coord.Coordinator {
	t.Helper()
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := cluster.AddInstance(t.Context(), c, &inst, "me", nil); err != nil {
		t.Fatal(err)
	}
	return c
}
