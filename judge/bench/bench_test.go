package bench

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/store"
)

func TestMain(m *testing.M) { testenv.RunRemovingBinlake(m) }

// validOptions are the defaults with an executable that exists: the test binary.
func validOptions(t *testing.T) Options {
	t.Helper()
	o := DefaultOptions()
	o.Binary = os.Args[0]
	return o
}

func TestOptionsErrors(t *testing.T) {
	notExec := t.TempDir() + "/plain"
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"bad mode", func(o *Options) { o.Mode = "both" }, `-mode "both": want placement or ingest`},
		{"no binary", func(o *Options) { o.Binary = "" }, "no binlake binary"},
		{"missing binary", func(o *Options) { o.Binary = "/nonexistent/binlake" }, "/nonexistent/binlake"},
		{"binary not executable", func(o *Options) { o.Binary = notExec }, "is not an executable file"},
		{"bad store", func(o *Options) { o.Store = "mysql" }, `-store "mysql": want sqlite or elastic`},
		{"es not a URL", func(o *Options) { o.Store, o.ES = StoreElastic, "127.0.0.1:9200" }, `-es "127.0.0.1:9200"`},
		{"es without host", func(o *Options) { o.Store, o.ES = StoreElastic, "http://" }, `-es "http://"`},
		{"zero nodes", func(o *Options) { o.Nodes = 0 }, "-nodes 0: must be at least 1"},
		{"negative concurrency", func(o *Options) { o.Concurrency = -2 }, "-concurrency -2"},
		{"zero points", func(o *Options) { o.Points = 0 }, "-points 0"},
		{"zero batch", func(o *Options) { o.Batch = 0 }, "-batch 0"},
		{"batch too large", func(o *Options) { o.Batch = 10_001 }, "-batch 10001: a metric batch holds at most 10000"},
		{"zero buffer", func(o *Options) { o.Buffer = 0 }, "-buffer 0"},
		{"zero store batch", func(o *Options) { o.StoreBatch = 0 }, "-store-batch 0"},
		{"negative ingest rate", func(o *Options) { o.IngestRate = -1 }, "-ingest-rate -1"},
		{"buffer below batch", func(o *Options) { o.Mode, o.Buffer, o.Batch = ModeIngest, 50, 100 }, "-buffer 50 is smaller than -batch 100"},
		{"zero duration", func(o *Options) { o.Duration = 0 }, "-duration 0s: must be positive"},
		{"unknown algorithm", func(o *Options) { o.Algorithm = "roundrobin" }, `-algorithm`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions(t)
			tc.edit(&o)
			err := o.validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The defaults are valid as they are, in both modes and with both stores, and an
	// ingest rate of 0 is allowed (no ingest after seeding).
	for _, edit := range []func(*Options){
		func(*Options) {},
		func(o *Options) { o.Mode, o.Store = ModeIngest, StoreElastic },
		func(o *Options) { o.IngestRate = 0 },
	} {
		o := validOptions(t)
		edit(&o)
		if err := o.validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestSummarise(t *testing.T) {
	// 1..1000 ms, shuffled: the nearest-rank percentiles are the values themselves.
	ds := make([]time.Duration, 1000)
	for i := range ds {
		ds[i] = time.Duration((i*7919)%1000+1) * time.Millisecond
	}
	got := summarise(ds)
	want := Latency{N: 1000, Min: time.Millisecond, Mean: 500500 * time.Microsecond,
		P50: 500 * time.Millisecond, P90: 900 * time.Millisecond, P99: 990 * time.Millisecond,
		P999: 999 * time.Millisecond, Max: 1000 * time.Millisecond}
	if got != want {
		t.Errorf("summarise(1..1000 ms) = %+v, want %+v", got, want)
	}
	if got := summarise(nil); got != (Latency{}) {
		t.Errorf("summarise(nil) = %+v, want zero", got)
	}
	one := summarise([]time.Duration{3 * time.Millisecond})
	if one.P50 != 3*time.Millisecond || one.P999 != 3*time.Millisecond || one.Max != 3*time.Millisecond || one.N != 1 {
		t.Errorf("summarise(one) = %+v", one)
	}
	// A tail seen by fewer than 1 % of requests is above p99 but within p99.9.
	tail := make([]time.Duration, 1000)
	for i := range tail {
		tail[i] = time.Millisecond
	}
	for i := range 5 {
		tail[i] = time.Second
	}
	if s := summarise(tail); s.P99 != time.Millisecond || s.P999 != time.Second || s.Max != time.Second {
		t.Errorf("summarise(5 slow of 1000) = %+v: want p99 1 ms, p99.9 and max 1 s", s)
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a ')' is skipped whole; utime 250 + stime 50 ticks.
	line := "4242 (binlake (judge) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 9 0 100 0 0\n"
	got, err := parseProcStat([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseProcStat = %s, %v; want 3s", got, err)
	}
	for _, bad := range []string{"", "4242 binlake S 1", "4242 (binlake) S 1 2 3", "4242 (b) S 1 2 3 4 5 6 7 8 9 10 x 50 0"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 7 3 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("1 (a) b) S"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if d, err := parseProcStat(data); err == nil && d < 0 {
			t.Fatalf("negative CPU time %s from %q", d, data)
		}
	})
}

// TestIngestBatchesAreDistinct checks what the ingest count relies on: the batches of a
// run are valid and no two points share an identity in the store (else the store keeps
// one and the count falls short), including the last, partial batch.
func TestIngestBatchesAreDistinct(t *testing.T) {
	const nodes, batch, points = 7, 30, 1000
	f := newFleet(nodes, batch)
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	total := 0
	for i := 0; i*batch < points; i++ {
		size := min(batch, points-i*batch)
		tick := i / nodes
		b := f.batch(i%nodes, tick, size, base.Add(time.Duration(tick)*time.Millisecond), liveInterval)
		if err := b.Validate(); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if len(b.Points) != size {
			t.Fatalf("batch %d has %d points, want %d", i, len(b.Points), size)
		}
		for _, p := range b.Points {
			id := b.Node + "|" + p.Name + "|" + store.LabelKey(p.Labels) + "|" + b.TS.Format(time.RFC3339Nano)
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

// TestPlacementBatchesCarryPluginMetrics: a seeded node reports every series the
// placement plugins read, and a few nodes sit above the CPU threshold.
func TestPlacementBatchesCarryPluginMetrics(t *testing.T) {
	f := newFleet(1000, len(nodeMetrics))
	over := 0
	for i := range f.nodes {
		b := f.batch(i, 3, len(nodeMetrics), time.Now(), liveInterval)
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, p := range b.Points {
			got[p.Name] = p.Value
		}
		for _, name := range nodeMetrics {
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

// TestWindow: a sender waits while the unsettled points would exceed the window, goes
// on once enough are settled, and is released by close.
func TestWindow(t *testing.T) {
	w := newWindow(100)
	if !w.acquire(60) || !w.acquire(40) {
		t.Fatal("acquire within the window refused")
	}
	got := make(chan bool)
	go func() { got <- w.acquire(30) }()
	w.settle(20) // 100 - 20 + 30 > 100: still waiting
	select {
	case <-got:
		t.Fatal("acquire returned with 110 points unsettled")
	default:
	}
	w.settle(30)
	if !<-got {
		t.Fatal("acquire refused once 30 points settled")
	}
	go func() { got <- w.acquire(100) }()
	w.close()
	if <-got {
		t.Fatal("acquire succeeded after close")
	}
}

// TestNewEnv: the generated config passes the judge's own loader for both stores,
// names where the points go, and close removes the folder.
func TestNewEnv(t *testing.T) {
	for _, st := range []string{StoreSQLite, StoreElastic} {
		o := validOptions(t)
		o.Store = st
		var out strings.Builder
		o.Out = &out
		e, err := newEnv(o)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if !strings.Contains(out.String(), e.config) || !strings.Contains(out.String(), e.store) || e.stored == nil {
			t.Errorf("%s: start line %q does not name the config and the store", st, out.String())
		}
		if st == StoreElastic && (e.drop == nil || !strings.Contains(e.store, "binlake-bench-")) {
			t.Errorf("elastic env %+v: want its own index prefix and a drop", e)
		}
		e.drop = nil // nothing was written to any engine
		if err := e.close(false, &out); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(e.dir); !os.IsNotExist(err) {
			t.Errorf("%s: %s still there after close: %v", st, e.dir, err)
		}
	}
}
