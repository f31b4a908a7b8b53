//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
)

// testCoordinator connects to the test ZooKeeper under a root of this run's own
// ("/binlake-<name>-<nanoseconds>"), closed when the test ends.
func testCoordinator(t *testing.T, ctx context.Context, name string) (c *zk.Coordinator, zkAddr, root string) {
	t.Helper()
	zkAddr = testenv.Require(t, testenv.ZooKeeper)
	root = fmt.Sprintf("/binlake-%s-%d", name, time.Now().UnixNano())
	c, err := zk.New(ctx, zk.Options{Servers: strings.Split(zkAddr, ","), Root: root, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, zkAddr, root
}

// testBus is an in-process bus, closed when the test ends (after a wave started later
// on it has stopped: cleanups run last first).
func testBus(t *testing.T) *memory.Bus {
	t.Helper()
	b, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// startWave runs a wave until stop or the test's end, and returns it with its HTTP address
// once it serves (empty without opts.HTTPAddr). stop closes it and checks what Run
// returned; it may be called more than once.
func startWave(t *testing.T, ctx context.Context, opts wave.Options) (wv *wave.Wave, addr string, stop func()) {
	t.Helper()
	addrc := make(chan string, 1)
	if opts.HTTPAddr != "" {
		opts.Ready = func(a string) { addrc <- a }
	}
	wv, err := wave.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- wv.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		wv.Close()
		if err := <-errc; err != nil {
			t.Errorf("wave Run: %v", err)
		}
	})
	t.Cleanup(stop)
	if opts.HTTPAddr == "" {
		return wv, "", stop
	}
	select {
	case addr = <-addrc:
		return wv, addr, stop
	case err := <-errc:
		errc <- err // for stop
		t.Fatalf("wave: %v", err)
	}
	return wv, "", stop
}
