package wave_test

import (
	"context"
	"testing"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/wave"
)

// runWave makes a wave of o and runs it until the returned stop, which closes it and
// fails the test when its Run returned an error. Tests defer stop where the wave must
// close before what they deferred earlier (its bus, its coordinator).
func runWave(t *testing.T, ctx context.Context, o wave.Options) (*wave.Wave, func()) {
	t.Helper()
	wv, err := wave.New(o)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- wv.Run(ctx) }()
	return wv, func() {
		wv.Close()
		if err := <-errc; err != nil {
			t.Errorf("wave Run: %v", err)
		}
	}
}

// memoryBus is an in-process bus and its publisher, closed when the test ends (after
// what the test deferred, its wave's stop among them).
func memoryBus(t *testing.T) (*memory.Bus, bus.Publisher) {
	t.Helper()
	b, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	return b, pub
}
