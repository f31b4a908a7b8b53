package wave

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
)

// A wave logs "wave stopping" as it begins to stop and "wave stopped" once its captures
// have ended, in that order (it used to log no "stopped" line at all).
func TestRunLogsStopLinesInOrder(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var log testenv.SyncBuffer
	ready := make(chan struct{})
	w, err := New(Options{Node: "wave-a", Coord: c, Publisher: nopPublisher{}, Logger: testenv.StopOrderLogger(&log),
		Ready: func(string) { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-ready
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	testenv.RequireStopLines(t, log.String(), "wave")
}

// TestRunSaysWhoHoldsItsName: a second wave started under a running wave's node name
// warns that the name is held (a wave that just ended, or another running under it),
// and, the name still held when its wait ends, fails saying another wave runs under
// it. It logged only "still registered by a previous session" at info, and then an
// error that named no cause.
func TestRunSaysWhoHoldsItsName(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	defer func(d time.Duration) { registerWait = d }(registerWait)
	registerWait = 300 * time.Millisecond
	ready := make(chan struct{})
	first, err := New(Options{Node: "wave-a", Coord: c, Publisher: nopPublisher{}, Logger: testenv.Logger(t), Ready: func(string) { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	<-ready

	var log testenv.SyncBuffer
	second, err := New(Options{Node: "wave-a", Coord: c, Publisher: nopPublisher{}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	err = second.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "node name wave-a is still registered after 300ms: another wave runs under this name (give this one a node of its own)") {
		t.Errorf("the second wave's Run: %v, want it to name the wave holding its name", err)
	}
	if !strings.Contains(log.String(), `level=WARN msg="node name already registered: by a wave that ended within the coordinator's session timeout`) {
		t.Errorf("the second wave's log:\n%s\nwant a warning that its name is held", log.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the first wave's Run: %v", err)
	}
}
