package wave_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/sink"
)

// testLogger is the shared test logger (testenv.Logger).
var testLogger = testenv.Logger

// instanceFor defines an instance on the test MariaDB reading w's database: orders to one
// topic, items and logs to another, and every delete also to a third.
func instanceFor(t testing.TB, w *workload, id, prefix string, start *cluster.Position) *cluster.Instance {
	a := testenv.RequireMySQL(t)
	db := strings.ReplaceAll(w.db, ".", `\.`)
	return &cluster.Instance{
		ID: id,
		Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB,
			ServerID: testenv.ReplicaServerID()},
		Start: start,
		Subscriptions: []cluster.Subscription{
			{Name: "orders", Topic: prefix + ".orders", Include: []string{db + `\.t_orders`}},
			{Name: "rest", Topic: prefix + ".rest", Include: []string{db + `\.t_.*`}, Exclude: []string{db + `\.t_orders`}},
			{Name: "deletes", Topic: prefix + ".deletes", Include: []string{db + `\..*`}, Events: []string{rowenc.TypeDelete}},
		},
	}
}

// readLines reads the file sink's output until want messages arrived for the workload's
// database (or the deadline).
func readFileSink(t testing.TB, path string, db string, want int, deadline time.Duration) map[string][]received {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		out := map[string][]received{}
		n := 0
		f, err := os.Open(path)
		if err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				var l sink.Line
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("file sink line is not JSON: %v", err)
				}
				r := decode(t, l.Topic, []byte(l.Key), l.Message, false)
				if r.database != db {
					continue
				}
				out[l.Topic] = append(out[l.Topic], r)
				n++
			}
			f.Close()
		}
		if n >= want || time.Now().After(end) {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWaveEmbeddedIntegration is the embedded shape: coord/single, the file sink, the real
// MariaDB. Rows arrive exactly, a graceful restart resumes from the committed offset with
// no duplicate and nothing missing, and /metrics carries the agent's names.
func TestWaveEmbeddedIntegration(t *testing.T) {
	w := newWorkload(t, 1)
	start := wavetest.CurrentPos(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "rows.jsonl")
	ctx := testenv.Context(t) // no fixed budget: the workload slows down with the machine

	inst := instanceFor(t, w, "emb", "emb", start)
	runWave := func(first bool) (*wave.Wave, string, func()) {
		c, err := single.New(single.Options{Path: filepath.Join(dir, "coord.json")})
		if err != nil {
			t.Fatal(err)
		}
		if first {
			if _, err := cluster.AddInstance(ctx, c, inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
		}
		pub, err := sink.OpenFile(sink.FileOptions{Path: out})
		if err != nil {
			t.Fatal(err)
		}
		addrc := make(chan string, 1)
		wv, err := wave.New(wave.Options{Node: "wave-1", HTTPAddr: "127.0.0.1:0", Coord: c, Publisher: pub,
			PollInterval: 200 * time.Millisecond, Logger: testLogger(t),
			Pipeline: wave.PipelineOptions{CommitInterval: 100 * time.Millisecond, RetryBackoff: 200 * time.Millisecond},
			Ready:    func(a string) { addrc <- a }})
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- wv.Run(ctx) }()
		var addr string
		select {
		case addr = <-addrc:
		case err := <-errc:
			t.Fatalf("wave: %v", err)
		}
		return wv, addr, func() {
			wv.Close()
			if err := <-errc; err != nil {
				t.Errorf("wave Run: %v", err)
			}
			pub.Close()
			c.Close()
		}
	}

	wv, addr, stop := runWave(true)

	w.run(3000, 300)
	part1 := w.expected([]string{tOrders}, nil)
	got := readFileSink(t, out, w.db, w.expected([]string{tOrders, tItems, tLogs}, nil)+w.expected([]string{tOrders, tItems, tLogs}, []string{rowenc.TypeDelete}), 60*time.Second)
	if d := w.verify(t, got["emb.orders"], []string{tOrders}, nil); d != 0 {
		t.Errorf("orders: %d duplicates in a run without faults", d)
	}
	w.verify(t, got["emb.rest"], []string{tItems, tLogs}, nil)
	w.verify(t, got["emb.deletes"], []string{tOrders, tItems, tLogs}, []string{rowenc.TypeDelete})
	t.Logf("part 1: %d order messages", part1)

	// Metrics: the names the agent's wave collector reads.
	body := wavetest.HTTPGet(t, "http://"+addr+"/metrics")
	for _, name := range []string{`binlake_wave_rows_published_total{instance="emb"}`, `binlake_wave_instances_led 1`,
		`binlake_wave_lag_seconds{instance="emb"}`, "go_goroutines", "go_sched_pauses_total_gc_seconds"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if st := wv.Status(); len(st) != 1 || st[0].State != cluster.StateRunning {
		t.Errorf("status = %+v, want one running instance", st)
	}

	// Graceful restart: the final commit covers everything acknowledged, so the second
	// run must neither repeat nor miss a row.
	stop()
	before := countLines(t, out)
	w.run(w.count+2000, 250)
	_, _, stop = runWave(false)
	defer stop()
	want := w.expected([]string{tOrders, tItems, tLogs}, nil) + w.expected([]string{tOrders, tItems, tLogs}, []string{rowenc.TypeDelete})
	got = readFileSink(t, out, w.db, want, 60*time.Second)
	dups := w.verify(t, got["emb.orders"], []string{tOrders}, nil)
	dups += w.verify(t, got["emb.rest"], []string{tItems, tLogs}, nil)
	w.verify(t, got["emb.deletes"], []string{tOrders, tItems, tLogs}, []string{rowenc.TypeDelete})
	if dups != 0 {
		t.Errorf("%d duplicates after a graceful restart (lines before restart %d)", dups, before)
	}
}

func countLines(t testing.TB, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestWaveMemoryBusIntegration runs the wave on the in-process bus (the embedded shape
// with a bus instead of a file) and reads the topics through a bus subscriber.
func TestWaveMemoryBusIntegration(t *testing.T) {
	w := newWorkload(t, 2)
	start := wavetest.CurrentPos(t)
	dir := t.TempDir()
	c, err := single.New(single.Options{Path: filepath.Join(dir, "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, pub := memoryBus(t)
	ctx := testenv.Context(t) // no fixed budget: the workload slows down with the machine
	inst := instanceFor(t, w, "mem", "mem", start)
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-m", nil); err != nil {
		t.Fatal(err)
	}
	w.run(2000, 200)
	_, stop := runWave(t, ctx, wave.Options{Node: "wave-m", Coord: c, Publisher: pub, Topics: b,
		TopicSpec: bus.TopicSpec{Partitions: 3}, PollInterval: 200 * time.Millisecond, Logger: testLogger(t)})
	defer stop()
	read := func(topic string, want int) []received {
		for b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 3}) != nil {
		}
		s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: "verify"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var out []received
		sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
		defer scancel()
		err = s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
			out = append(out, decode(t, topic, m.Key, m.Value, false))
			if len(out) >= want {
				return errDone
			}
			return nil
		})
		if err != nil && !errors.Is(err, errDone) {
			t.Fatal(err)
		}
		return out
	}
	got := read("mem.orders", w.expected([]string{tOrders}, nil))
	if d := w.verify(t, got, []string{tOrders}, nil); d != 0 {
		t.Errorf("%d duplicates", d)
	}
	got = read("mem.rest", w.expected([]string{tItems, tLogs}, nil))
	w.verify(t, got, []string{tItems, tLogs}, nil)
	// Keys: a row's key is db.table:[pk], so its changes share a partition.
	for _, r := range got {
		if want := fmt.Sprintf("%s.%s:[%s]", w.db, r.table, r.id); r.key != want {
			t.Fatalf("key %q, want %q", r.key, want)
		}
	}
}

var errDone = errors.New("done")
