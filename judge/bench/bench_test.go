package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/testenv"
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
		{"unknown bus", func(o *Options) { o.Bus = "zk" }, `-bus "zk": want http, remote-write or kafka`},
		{"remote write for placements", func(o *Options) { o.Bus = BusRemoteWrite }, "-bus remote-write: only with -mode ingest"},
		{"kafka for placements", func(o *Options) { o.Bus = BusKafka }, "-bus kafka: only with -mode ingest"},
		{"kafka without brokers", func(o *Options) { o.Mode, o.Bus, o.Brokers = ModeIngest, BusKafka, nil }, "-brokers: at least one"},
		{"kafka broker without port", func(o *Options) { o.Mode, o.Bus, o.Brokers = ModeIngest, BusKafka, []string{"kafka"} }, `-brokers: "kafka" is not host:port`},
		{"kafka without partitions", func(o *Options) { o.Mode, o.Bus, o.Partitions = ModeIngest, BusKafka, 0 }, "-partitions 0"},
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
		func(o *Options) { o.Mode, o.Bus = ModeIngest, BusKafka },
	} {
		o := validOptions(t)
		edit(&o)
		if err := o.validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
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
		e, err := newEnv(context.Background(), o)
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

// TestReportUnits: the JSON report states rates per second, latencies in milliseconds
// and CPU in cores over the window, from the run's raw figures; a judge whose CPU could
// not be read has null, and a placement run without errors an empty object, not null.
func TestReportUnits(t *testing.T) {
	r := &Result{
		Placement: &PlacementResult{Nodes: 10, Clients: 4, Algorithm: "leastload", Answers: 5000, AnswerBytes: 600_000,
			Latency: benchkit.Latency{P50: 1500 * time.Microsecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond,
				P999: 4 * time.Millisecond, Max: 9 * time.Millisecond, Mean: 1600 * time.Microsecond},
			Elapsed: 2 * time.Second, Ingest: IngestRate{Target: 100, Points: 150, Batches: 20, Elapsed: 2 * time.Second}},
		JudgeCPU: -1, BenchCPU: time.Second, Window: 2 * time.Second,
	}
	b, err := json.Marshal(r.Report())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := got["placement"].(map[string]any)
	for _, c := range []struct {
		what string
		got  any
		want any
	}{
		{"mode", got["mode"], "placement"},
		{"req_per_s", p["req_per_s"], 2500.0},
		{"bytes_per_answer", p["bytes_per_answer"], 120.0},
		{"latency p99.9", p["latency_ms"].(map[string]any)["p99.9"], 4.0},
		{"latency p50", p["latency_ms"].(map[string]any)["p50"], 1.5},
		{"ingest_points_per_s", p["ingest_points_per_s"], 75.0},
		{"bench_cpu_cores", got["bench_cpu_cores"], 0.5},
		{"judge_cpu_cores", got["judge_cpu_cores"], nil},
		{"errors", fmt.Sprint(p["errors"]), "map[]"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v (report %s)", c.what, c.got, c.want, b)
		}
	}
	if _, ok := got["ingest"]; ok {
		t.Errorf("a placement run's report has an ingest section: %s", b)
	}
	r = &Result{Ingest: &IngestResult{Store: "sqlite", Via: "http", Points: 1000, Elapsed: 500 * time.Millisecond, Stored: 1000},
		JudgeCPU: 250 * time.Millisecond, Window: 500 * time.Millisecond}
	rep := r.Report()
	if rep.Mode != ModeIngest || rep.Ingest.PointsPerS != 2000 || rep.JudgeCPUCores == nil || *rep.JudgeCPUCores != 0.5 || rep.Placement != nil {
		t.Errorf("ingest report %+v (ingest %+v): want mode ingest, 2000 points/s, the judge at 0.5 cores", rep, rep.Ingest)
	}
}
