package benchkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// TestBatchesAreDistinct checks what the ingest count relies on: the batches of a
// run are valid and no two points share an identity in the store (else the store keeps
// one and the count falls short), including the last, partial batch.
func TestBatchesAreDistinct(t *testing.T) {
	const nodes, batch, points = 7, 30, 1000
	f := NewFleet(nodes, batch)
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	total := 0
	for i := 0; i*batch < points; i++ {
		size := min(batch, points-i*batch)
		tick := i / nodes
		b := f.Batch(i%nodes, tick, size, base.Add(time.Duration(tick)*time.Millisecond), 10*time.Second)
		if err := b.Validate(); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if len(b.Points) != size {
			t.Fatalf("batch %d has %d points, want %d", i, len(b.Points), size)
		}
		for _, p := range b.Points {
			id := b.Node + "|" + p.Name + "|" + fmt.Sprint(p.Labels) + "|" + b.TS.Format(time.RFC3339Nano)
			if seen[id] {
				t.Fatalf("batch %d repeats point %s", i, id)
			}
			seen[id] = true
		}
		total += size
	}
	if total != points {
		t.Fatalf("%d points in the batches, want %d", total, points)
	}
}

// TestBatchesCarryPluginMetrics: a seeded node reports every series the
// placement plugins read, and a few nodes sit above the CPU threshold.
func TestBatchesCarryPluginMetrics(t *testing.T) {
	f := NewFleet(1000, len(NodeMetrics))
	over := 0
	for i := range f.nodes {
		b := f.Batch(i, 3, len(NodeMetrics), time.Now(), 10*time.Second)
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, p := range b.Points {
			got[p.Name] = p.Value
		}
		for _, name := range NodeMetrics {
			if _, ok := got[name]; !ok {
				t.Fatalf("node %d lacks %s", i, name)
			}
		}
		if got["cpu.util"] > 90 {
			over++
		}
	}
	if over == 0 || over > 100 {
		t.Errorf("%d of 1000 nodes above 90 %% CPU, want a few", over)
	}
}

// TestAppendJSONAsEncode: AppendJSON writes the bytes metric.Encode gives the batch
// Batch builds, with the overridden value in place (an override past the batch's end
// changes nothing), after whatever buf held.
func TestAppendJSONAsEncode(t *testing.T) {
	f := NewFleet(30, 100)
	ts := time.Date(2026, 12, 1, 10, 0, 0, 123_000_000, time.FixedZone("X", 3600))
	buf := []byte("kept")
	for i := range 30 {
		for _, size := range []int{1, 8, 9, 57, 100} {
			setK := (i*7 + size) % (size + 1) // sometimes past the last point: none replaced
			b := f.Batch(i, i*3, size, ts.Add(time.Duration(i)*time.Millisecond), 10*time.Second)
			if setK < size {
				b.Points[setK].Value = 1.5e12
			}
			want, err := metric.Encode(b)
			if err != nil {
				t.Fatal(err)
			}
			buf = f.AppendJSON(buf[:4], i, i*3, size, b.TS, 10*time.Second, Override{Point: setK, Value: 1.5e12})
			if string(buf[4:]) != string(want) || string(buf[:4]) != "kept" {
				t.Fatalf("node %d, %d points, point %d set:\n%s\nwant\n%s", i, size, setK, buf, want)
			}
		}
	}
}
