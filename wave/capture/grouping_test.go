package capture

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/binlake/binlake/wave/rowenc"
)

// flakyPartitioner fails while down, else sends every key to partition 2.
type flakyPartitioner struct {
	down  bool
	asked int
}

func (p *flakyPartitioner) Partition(_ context.Context, topic string, key []byte) (int, error) {
	p.asked++
	if p.down {
		return 0, errors.New("metadata of " + topic + ": no broker reachable")
	}
	return 2, nil
}

// TestPartitionOf: without a Partitioner rows are not grouped (no Target.Partition);
// with one, each topic's function asks it, and while it cannot tell, says so (the
// Encoder then sends one row per message) with one warning until it can again.
func TestPartitionOf(t *testing.T) {
	if (&Capture{}).partitionOf("t") != nil {
		t.Fatal("a Partition without a Partitioner")
	}
	var logs bytes.Buffer
	p := &flakyPartitioner{}
	c := &Capture{Options: Options{Partitioner: p, Log: slog.New(slog.NewTextHandler(&logs, nil))}}
	f := c.partitionOf("orders")
	if part, ok := f([]byte("k")); part != 2 || !ok {
		t.Fatalf("partition %d, %v; want 2, true", part, ok)
	}
	p.down = true
	for range 3 {
		if _, ok := f([]byte("k")); ok {
			t.Fatal("a partition while the bus cannot tell")
		}
	}
	p.down = false
	if _, ok := f([]byte("k")); !ok {
		t.Fatal("no partition once the bus tells again")
	}
	if n := strings.Count(logs.String(), "partitions of the topic unknown"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "known again"); n != 1 {
		t.Errorf("%d notes of recovery, want 1:\n%s", n, logs.String())
	}
	if p.asked != 5 {
		t.Errorf("asked %d times, want 5", p.asked)
	}
	if c.groupBytes() != rowenc.DefaultGroupBytes {
		t.Errorf("group bytes %d without a message limit", c.groupBytes())
	}
	c.MaxBytes = 1000
	if c.groupBytes() != 1000 {
		t.Errorf("group bytes %d under a limit of 1000", c.groupBytes())
	}
}
