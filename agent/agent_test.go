package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/agent/collector"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// seqCollector numbers its calls, so a test can tell which batches survived.
type seqCollector struct {
	name string
	n    atomic.Int64
	fail atomic.Bool
}

func (c *seqCollector) Name() string { return c.name }

func (c *seqCollector) Collect(context.Context) ([]metric.Point, error) {
	n := c.n.Add(1)
	if c.fail.Load() {
		return nil, errors.New("source unreachable")
	}
	return []metric.Point{{Name: "test.seq", Value: float64(n)}}, nil
}

// judge is an HTTP ingest endpoint that can be taken down: the real HTTP sink talks to it.
type judge struct {
	srv      *httptest.Server
	down     atomic.Bool
	status   atomic.Int32 // answer while down
	mu       sync.Mutex
	batches  []metric.Batch
	attempts atomic.Int64
	auth     atomic.Value
}

func newJudge(t *testing.T) *judge {
	j := &judge{}
	j.status.Store(http.StatusServiceUnavailable)
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.attempts.Add(1)
		j.auth.Store(r.Header.Get("Authorization"))
		if j.down.Load() {
			http.Error(w, `{"error":{"code":"unavailable","message":"down"}}`, int(j.status.Load()))
			return
		}
		body, _ := io.ReadAll(r.Body)
		b, err := metric.Decode(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		j.mu.Lock()
		j.batches = append(j.batches, b)
		j.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func (j *judge) received() []metric.Batch {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]metric.Batch(nil), j.batches...)
}

func testConfig() Config {
	c := DefaultConfig()
	c.Node = "wave-test"
	c.Interval = config.Duration(50 * time.Millisecond)
	c.HTTP.Listen = MetricsListenOff
	return c
}

type running struct {
	a     *Agent
	ticks chan time.Time
	errc  chan error
}

func start(t *testing.T, cfg Config, sink Sink, logs io.Writer, cs ...collector.Collector) *running {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	r := &running{ticks: make(chan time.Time), errc: make(chan error, 1)}
	a, err := New(Options{
		Config: cfg, Sink: sink, Collectors: cs, Ticks: r.ticks,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	r.a = a
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.errc <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.errc:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("agent did not stop")
		}
		require.NoError(t, a.Close())
	})
	// The agent collects once at start; tick counts from there.
	require.Eventuallyf(t, func() bool { return a.Stats().Collected == 1 }, 10*time.Second, 5*time.Millisecond, "collection at start")
	return r
}

// tick makes the agent collect once and waits until the batch is built.
func (r *running) tick(t *testing.T) {
	t.Helper()
	want := r.a.Stats().Collected + 1
	select {
	case r.ticks <- time.Now():
	case err := <-r.errc:
		t.Fatalf("agent stopped: %v", err)
	}
	require.Eventuallyf(t, func() bool { return r.a.Stats().Collected == want }, 10*time.Second, 5*time.Millisecond, "collection %d", want)
}

func seqs(bs []metric.Batch) []float64 {
	var out []float64
	for _, b := range bs {
		for _, p := range b.Points {
			if p.Name == "test.seq" {
				out = append(out, p.Value)
			}
		}
	}
	return out
}

func pointValue(b metric.Batch, name string) (float64, bool) {
	for _, p := range b.Points {
		if p.Name == name && len(p.Labels) == 0 {
			return p.Value, true
		}
	}
	return 0, false
}

// TestSinkDownDropsOldestAndResumes is the fault test: the judge is down for several
// intervals; the agent keeps collecting, holds the newest batches, drops and counts
// exactly the rest, and delivers by itself once the judge is back.
func TestSinkDownDropsOldestAndResumes(t *testing.T) {
	j := newJudge(t)
	cfg := testConfig()
	cfg.Buffer = 3
	seq := &seqCollector{name: "seq"}
	r := start(t, cfg, NewHTTPSink(j.srv.URL+"/v1/metrics", "", nil), nil, seq)

	// The batch collected at start goes through.
	require.Eventuallyf(t, func() bool { return r.a.Stats().Delivered == 1 }, 10*time.Second, 5*time.Millisecond, "first delivery")

	j.down.Store(true)
	const outage = 8
	for range outage {
		r.tick(t)
	}
	// Nothing blocked collection; the buffer holds the 3 newest and exactly 5 went.
	require.Eventuallyf(t, func() bool {
		s := r.a.Stats()
		return s.Pending == 3 && s.Dropped == outage-3 && s.SendErrors > 0
	}, 10*time.Second, 5*time.Millisecond, "3 pending, %d dropped: %+v", outage-3, r.a.Stats())
	require.Equal(t, []float64{1}, seqs(j.received()))
	require.Equal(t, uint64(1+outage), r.a.Stats().Collected)

	// The judge comes back: no tick needed, the sender retries by itself.
	j.down.Store(false)
	require.Eventuallyf(t, func() bool { return r.a.Stats().Delivered == 4 && r.a.Stats().Pending == 0 }, 10*time.Second, 5*time.Millisecond, "backlog delivered: %+v", r.a.Stats())
	require.Equal(t, []float64{1, 7, 8, 9}, seqs(j.received()), "the oldest were dropped, order kept")

	r.tick(t)
	require.Eventuallyf(t, func() bool { return len(j.received()) == 5 }, 10*time.Second, 5*time.Millisecond, "post-recovery batch")
	last := j.received()[4]
	dropped, ok := pointValue(last, DroppedBatches)
	require.True(t, ok)
	require.Equal(t, float64(outage-3), dropped, "the batch reports the exact drop count")
	pending, _ := pointValue(last, BufferLen)
	require.Equal(t, 0.0, pending)
	require.Equal(t, uint64(outage-3), r.a.Stats().Dropped, "no drop after recovery")
}

func TestSinkRefusedConnectionRecovers(t *testing.T) {
	// A judge that is not listening at all, then is.
	j := newJudge(t)
	addr := j.srv.Listener.Addr().String()
	j.srv.Close()
	cfg := testConfig()
	cfg.Buffer = 2
	seq := &seqCollector{name: "seq"}
	r := start(t, cfg, NewHTTPSink("http://"+addr+"/v1/metrics", "", nil), nil, seq)
	for range 4 {
		r.tick(t)
	}
	require.Eventuallyf(t, func() bool { s := r.a.Stats(); return s.Pending == 2 && s.Dropped == 3 }, 10*time.Second, 5*time.Millisecond, "%+v", r.a.Stats())

	j2 := newJudgeOn(t, addr)
	require.Eventuallyf(t, func() bool { return r.a.Stats().Delivered == 2 }, 10*time.Second, 5*time.Millisecond, "delivery after the listener came up")
	require.Equal(t, []float64{4, 5}, seqs(j2.received()))
}

// newJudgeOn serves a judge on a given address (the one a stopped judge had).
func newJudgeOn(t *testing.T, addr string) *judge {
	j := &judge{}
	ts := httptest.NewUnstartedServer(nil)
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.Listener.Close()
		ts.Listener, err = netListen(addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, err)
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b, err := metric.Decode(body)
		require.NoError(t, err)
		j.mu.Lock()
		j.batches = append(j.batches, b)
		j.mu.Unlock()
	})
	ts.Start()
	j.srv = ts
	t.Cleanup(ts.Close)
	return j
}

func TestRejectedBatchIsNotRetried(t *testing.T) {
	j := newJudge(t)
	j.status.Store(http.StatusBadRequest)
	j.down.Store(true)
	cfg := testConfig()
	r := start(t, cfg, NewHTTPSink(j.srv.URL, "", nil), nil, &seqCollector{name: "seq"})
	require.Eventuallyf(t, func() bool { return r.a.Stats().Rejected == 1 }, 10*time.Second, 5*time.Millisecond, "rejection")
	r.tick(t)
	require.Eventuallyf(t, func() bool { return r.a.Stats().Rejected == 2 }, 10*time.Second, 5*time.Millisecond, "second rejection")
	s := r.a.Stats()
	require.Equal(t, uint64(0), s.SendErrors)
	require.Equal(t, int64(2), j.attempts.Load(), "one attempt per batch")
	require.Equal(t, 0, s.Pending)
}

func TestBearerToken(t *testing.T) {
	j := newJudge(t)
	var logs bytes.Buffer
	r := start(t, testConfig(), NewHTTPSink(j.srv.URL, "s3cr3t-token", nil), &logs, &seqCollector{name: "seq"})
	require.Eventuallyf(t, func() bool { return r.a.Stats().Delivered == 1 }, 10*time.Second, 5*time.Millisecond, "delivery")
	require.Equal(t, "Bearer s3cr3t-token", j.auth.Load())
	require.NotContains(t, logs.String(), "s3cr3t")
}

// TestFailingCollectorIsolated: one collector failing neither stops the others nor
// floods the log: one line when it starts failing, one when it recovers; failing at the
// agent's start is said at info and sends no collector_up 0.
func TestFailingCollectorIsolated(t *testing.T) {
	j := newJudge(t)
	var logs testenv.SyncBuffer
	good := &seqCollector{name: "good"}
	bad := &seqCollector{name: "bad"}
	bad.fail.Store(true)
	r := start(t, testConfig(), NewHTTPSink(j.srv.URL, "", nil), &logs, good, bad)
	for range 3 {
		r.tick(t)
	}
	bad.fail.Store(false)
	r.tick(t)
	require.Eventuallyf(t, func() bool { return len(j.received()) == 5 }, 10*time.Second, 5*time.Millisecond, "5 batches")
	bs := j.received()
	require.Equal(t, []float64{1, 2, 3, 4, 5, 5}, seqs(bs), "good every tick; bad only once it recovered")
	errs, _ := pointValue(bs[4], CollectorErrors)
	require.Equal(t, 4.0, errs, "4 failed collections (start + 3 ticks)")
	require.Equal(t, uint64(4), r.a.Stats().CollectorErrors)
	// Each batch says which collector failed in its tick, and says it no longer once it
	// recovered (the cumulative count cannot: an alert on it never resolves).
	var goodUp, badUp []float64
	for _, b := range bs {
		for _, p := range b.Points {
			if p.Name == CollectorUp && p.Labels["collector"] == "good" {
				goodUp = append(goodUp, p.Value)
			}
			if p.Name == CollectorUp && p.Labels["collector"] == "bad" {
				badUp = append(badUp, p.Value)
			}
		}
	}
	require.Equal(t, []float64{1, 1, 1, 1, 1}, goodUp)
	// The start's failure is no 0 and no warning (the wave beside the agent is most
	// often starting too): said at info, and the first tick that fails warns.
	require.Equal(t, []float64{0, 0, 0, 1}, badUp)
	out := logs.String()
	require.Equal(t, 1, strings.Count(out, `msg="collector not answering at start; tried again at the next tick"`), out)
	require.Equal(t, 1, strings.Count(out, `msg="collector failing"`), out)
	require.Less(t, strings.Index(out, "at start"), strings.Index(out, `msg="collector failing"`), out)
	require.Equal(t, 1, strings.Count(out, `msg="collector recovered"`), out)
	require.Contains(t, out, "source unreachable")
}

// TestMemoryBus runs the real collectors on the real ticker into the in-process bus, as
// `binlake up` does, and decodes the messages as alarm and judge will.
func TestMemoryBus(t *testing.T) {
	b, err := memory.New(memory.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cfg := testConfig()
	a, err := New(Options{Config: cfg, Sink: NewBusSink(b, BusSinkOptions{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-errc)
		require.NoError(t, a.Close())
	}()

	// The sink creates the topic with its first batch.
	require.Eventuallyf(t, func() bool { return a.Stats().Delivered > 0 }, 10*time.Second, 5*time.Millisecond, "first batch")
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "test"})
	require.NoError(t, err)
	want := []string{metric.CPUUtil, metric.Load1, metric.Load5, metric.MemUsedPct,
		BufferLen, DroppedBatches, CollectorErrors, CollectorUp, CollectSeconds, RSSBytes}
	sctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	var last map[string]bool
	complete := false
	err = sub.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		batch, err := metric.Decode(m.Value)
		require.NoError(t, err)
		require.Equal(t, "wave-test", string(m.Key))
		require.Equal(t, 0.05, batch.IntervalS)
		last = map[string]bool{}
		for _, p := range batch.Points {
			last[p.Name] = true
			require.Contains(t, PointNames(), p.Name, "every name an agent sends is in PointNames")
		}
		// cpu.util needs two samples at least a jiffy apart: wait for the batch that has it.
		for _, n := range want {
			if !last[n] {
				return nil
			}
		}
		complete = true
		stop()
		return nil
	})
	require.NoError(t, err)
	require.True(t, complete, "no batch with every name; last had %v", last)
}

func TestOwnMetricsEndpoint(t *testing.T) {
	j := newJudge(t)
	cfg := testConfig()
	cfg.HTTP.Listen = "127.0.0.1:0"
	addrc := make(chan string, 1)
	a, err := New(Options{Config: cfg, Sink: NewHTTPSink(j.srv.URL, "", nil), Collectors: []collector.Collector{&seqCollector{name: "seq"}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(addr string) { addrc <- addr }, Ticks: make(chan time.Time)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	addr := <-addrc
	require.Eventuallyf(t, func() bool { return a.Stats().Delivered == 1 }, 10*time.Second, 5*time.Millisecond, "delivery")
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"binlake_agent_buffer_batches 0", "binlake_agent_dropped_batches_total 0",
		"binlake_agent_batches_delivered_total 1", `binlake_agent_collector_errors_total{collector="seq"} 0`,
		"binlake_agent_collect_seconds", "process_resident_memory_bytes",
	} {
		require.Contains(t, string(body), want)
	}
	cancel()
	require.NoError(t, <-errc)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "Close is idempotent")
}

func TestShutdownDrainsBuffer(t *testing.T) {
	j := newJudge(t)
	j.down.Store(true)
	cfg := testConfig()
	seq := &seqCollector{name: "seq"}
	ticks := make(chan time.Time)
	a, err := New(Options{Config: cfg, Sink: NewHTTPSink(j.srv.URL, "", nil), Collectors: []collector.Collector{seq},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ticks: ticks})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	ticks <- time.Now()
	ticks <- time.Now()
	require.Eventuallyf(t, func() bool { return a.Stats().Collected == 3 && a.Stats().SendErrors > 0 }, 10*time.Second, 5*time.Millisecond, "3 batches held")
	cancel()
	j.down.Store(false) // back within the drain window
	require.NoError(t, <-errc)
	require.Equal(t, []float64{1, 2, 3}, seqs(j.received()))
	require.NoError(t, a.Close())
}

// TestShutdownWithTheSinkDownIsBounded: a stop with the sink down for good ends once the
// drain time has passed, however far the sender's backoff has grown (it waited the
// backoff out whole, then again at random: 10–32 s on a 10 s interval, against the
// unit's TimeoutStopSec). The undelivered batches are counted.
func TestShutdownWithTheSinkDownIsBounded(t *testing.T) {
	j := newJudge(t)
	j.down.Store(true)
	cfg := testConfig()
	cfg.Interval = config.Duration(time.Hour) // the backoff grows toward it
	var logs testenv.SyncBuffer
	a, err := New(Options{Config: cfg, Sink: NewHTTPSink(j.srv.URL, "", nil), Drain: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Ticks: make(chan time.Time),
		Collectors: []collector.Collector{&seqCollector{name: "seq"}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	// Five failures: the waits were 0.1, 0.2, 0.4 and 0.8 s, the one now running 1.6 s
	// (±20 %).
	require.Eventuallyf(t, func() bool { return a.Stats().SendErrors >= 5 }, 20*time.Second, time.Millisecond, "five failed sends")
	cancel()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(time.Second):
		t.Fatal("the agent still stopping a second after its 100 ms drain")
	}
	require.Equal(t, 1, a.Stats().Pending, "the batch it could not deliver")
	// Lost with the process: a warning, not news (an outside trial read it at info).
	require.Contains(t, logs.String(), `level=WARN msg="agent stopped"`)
	require.Contains(t, logs.String(), "undelivered=1")
	require.NoError(t, a.Close())
}

// stuckCollector blocks in Collect, ignoring its context, until release is closed: a
// statfs on a hung NFS mount, a /proc read in D state.
type stuckCollector struct {
	release chan struct{}
	calls   atomic.Int64
}

func (c *stuckCollector) Name() string { return "stuck" }

func (c *stuckCollector) Collect(context.Context) ([]metric.Point, error) {
	c.calls.Add(1)
	<-c.release
	return []metric.Point{{Name: "test.stuck", Value: 1}}, nil
}

// TestStuckCollectorIsLeftBehind: a collector whose read never returns (it ignores its
// context) is reported failed at each tick and left behind, not run again until it
// returns, while the others' figures go out every tick and the agent stops on time: the
// tick waited for it, so one stuck read stopped every batch, silently, and SIGTERM too
// (an outside trial).
func TestStuckCollectorIsLeftBehind(t *testing.T) {
	j := newJudge(t)
	var logs testenv.SyncBuffer
	good := &seqCollector{name: "good"}
	stuck := &stuckCollector{release: make(chan struct{})}
	defer close(stuck.release)
	r := start(t, testConfig(), NewHTTPSink(j.srv.URL, "", nil), &logs, good, stuck)
	for range 3 {
		r.tick(t)
	}
	require.Eventuallyf(t, func() bool { return len(j.received()) == 4 }, 10*time.Second, 5*time.Millisecond, "4 batches")
	bs := j.received()
	require.Equal(t, []float64{1, 2, 3, 4}, seqs(bs), "the good collector's figures every tick")
	var stuckUp []float64
	for _, b := range bs[1:] { // the start's failure is said at info, not as a 0
		for _, p := range b.Points {
			if p.Name == CollectorUp && p.Labels["collector"] == "stuck" {
				stuckUp = append(stuckUp, p.Value)
			}
		}
	}
	require.Equal(t, []float64{0, 0, 0}, stuckUp)
	require.Equal(t, int64(1), stuck.calls.Load(), "not run again while its read has not returned")
	require.Contains(t, logs.String(), "has not returned")
}

// partialCollector returns its point with a collector.Partial: one mount of many it
// may not read.
type partialCollector struct{}

func (partialCollector) Name() string { return "host" }

func (partialCollector) Collect(context.Context) ([]metric.Point, error) {
	return []metric.Point{{Name: "test.part", Value: 1}}, &collector.Partial{Err: errors.New("statfs /private/mnt: permission denied")}
}

// TestPartialCollectionIsUp: a collection that went without a part (one mount the agent's
// user may not statfs) keeps its collector up and counts no error, and is said once: one
// private mount made the host collector read failed at every tick while every figure
// came, and the alert said the host went unmeasured (an outside trial).
func TestPartialCollectionIsUp(t *testing.T) {
	j := newJudge(t)
	var logs testenv.SyncBuffer
	r := start(t, testConfig(), NewHTTPSink(j.srv.URL, "", nil), &logs, partialCollector{})
	for range 2 {
		r.tick(t)
	}
	require.Eventuallyf(t, func() bool { return len(j.received()) == 3 }, 10*time.Second, 5*time.Millisecond, "3 batches")
	for _, b := range j.received() {
		for _, p := range b.Points {
			if p.Name == CollectorUp {
				require.Equal(t, 1.0, p.Value, "collector up")
			}
		}
	}
	require.Zero(t, r.a.Stats().CollectorErrors)
	require.Equal(t, 1, strings.Count(logs.String(), "collector left part of its figures out"), logs.String())
}
