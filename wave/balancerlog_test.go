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
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// The balancer's lines name one component, wave.balancer: its logger derived from the
// wave's, which has component=wave, and added component=balancer, so that a failover
// line read "component=wave node=wave-a component=balancer msg=…" (outside trial).
func TestBalancerLogHasOneComponent(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	inst := wavetest.ValidInstance()
	if _, err := cluster.AddInstance(t.Context(), c, &inst, "wave-gone", nil); err != nil {
		t.Fatal(err)
	}
	var log testenv.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := New(Options{Node: "wave-a", Coord: c, Publisher: nopPublisher{}, Logger: logger,
		Balancer: balancer.Options{FailoverGrace: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), "failover: instance assigned") {
		if time.Now().After(deadline) {
			t.Fatalf("no failover line within 20s:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if n := strings.Count(line, " component="); n > 1 {
			t.Errorf("%d components: %s", n, line)
		}
		if strings.Contains(line, "failover: instance assigned") && !strings.Contains(line, " component=wave.balancer node=wave-a ") {
			t.Errorf("the failover line does not say component=wave.balancer node=wave-a: %s", line)
		}
	}
}
