package wave

import (
	"context"
	"path/filepath"
	"testing"

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
