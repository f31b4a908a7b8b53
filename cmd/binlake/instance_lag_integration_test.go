//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// TestLagOneMeaningIntegration: the wave's binlake_wave_lag_seconds, its /status and
// `binlake instance show` give one lag, on the real MariaDB and ZooKeeper:
//   - idle: after a row whose binlog time is 40 s old, the source says nothing more (its
//     heartbeat): 0 everywhere, and show says caught up;
//   - under load: rows written as if 30 s ago bring the lag to 30 in each reader (the
//     other tests' current rows on the same server bring it to 0 between them);
//   - a sink that stops acknowledging: the lag grows with the time the row waits (a
//     gauge set only when a batch completes would stay where it was), and falls back to
//     0 once the sink takes the rows;
//   - after a snapshot with no new rows, although the last transaction is 40 s old: 0.
func TestLagOneMeaningIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	c, zkAddr, root := testCoordinator(t, ctx, "lag")
	db, exec, conn := testenv.ScratchDatabase(t, "lag")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v INT)")
	ms, err := conn.Execute("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := ms.GetString(0, 0)
	pos, _ := ms.GetUint(0, 1)
	const id, topic = "lagtest", "lag.rows"
	inst := &cluster.Instance{ID: id, Start: &cluster.Position{File: file, Pos: uint32(pos)},
		Source:        cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: topic, Include: []string{db + `\.t`}}}}
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-lag", nil); err != nil {
		t.Fatal(err)
	}
	b := testBus(t)
	mp, _ := b.Publisher()
	gate := &gatedPublisher{Publisher: mp}
	_, addr, _ := startWave(t, ctx, wave.Options{Node: "wave-lag", HTTPAddr: "127.0.0.1:0", Coord: c, Publisher: gate, Topics: b,
		TopicSpec: bus.TopicSpec{Partitions: 1}, PollInterval: 100 * time.Millisecond,
		// The source sends a heartbeat after a heartbeat period without events, and the
		// suite's other tests write to the same server all the time: a short period
		// finds the gaps between their writes (at 1 s "caught up" was never seen
		// under the suite's load, nor at 200 ms once the wave's volume and fault tests
		// ran beside this one). An idle source sends 50 a second: nothing to it.
		Pipeline: wave.PipelineOptions{Heartbeat: 20 * time.Millisecond},
		Password: func(cluster.Source) (config.Secret, error) { return config.Secret(a.Password), nil },
		Logger:   quietLogger()})
	defer gate.open() // before the wave stops (a cleanup): a closed gate would hold its stop
	rows := newTopicReader(t, ctx, b, topic)

	// The three readers of the lag. show is the lag line of `binlake instance show`.
	type reading struct {
		metric, status, shown float64
		show                  string
	}
	read := func() (r reading, ok bool) {
		r.metric, r.status, r.shown = -1, -1, -1
		code, body := getURL(t, "http://"+addr+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		prefix := `binlake_wave_lag_seconds{instance="` + id + `"} `
		for l := range strings.Lines(body) {
			if v, found := strings.CutPrefix(strings.TrimSpace(l), prefix); found {
				r.metric, _ = strconv.ParseFloat(v, 64)
			}
		}
		code, body = getURL(t, "http://"+addr+"/status")
		var st struct{ Instances []wave.InstanceStatus }
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
			t.Fatalf("/status: %d %v %s", code, err, body)
		}
		for _, s := range st.Instances {
			if s.ID == id && s.LagS != nil {
				r.status = *s.LagS
			}
		}
		var out, errOut bytes.Buffer
		if err := runInstance(context.Background(), []string{"show", id, "-zk", zkAddr, "-root", root, "-sample", "0"}, &out, &errOut); err != nil {
			t.Fatalf("instance show: %v %s", err, errOut.String())
		}
		for l := range strings.Lines(out.String()) {
			if rest, found := strings.CutPrefix(l, "lag "); found {
				r.show = strings.TrimSpace(l)
				r.shown, _ = strconv.ParseFloat(strings.Fields(rest)[0], 64)
			}
		}
		return r, r.metric >= 0 && r.status >= 0 && r.shown >= 0
	}
	// await reads the three until want holds for each. A stage that does not get there
	// within stageWait is an error, with its last readings, and the test goes on to the
	// next stage: one run says which of them a capture gets wrong.
	const stageWait = 30 * time.Second
	// say, when set, is what show's lag line must say too. apart: each reader may say so
	// in a reading of its own (see the load below); else all three in one.
	await := func(what string, apart bool, want func(lag float64) bool, say ...string) reading {
		t.Helper()
		var seen []string
		var r reading
		var got [3]bool // metric, /status, show
		for deadline := time.Now().Add(stageWait); ; {
			if ctx.Err() != nil || time.Now().After(deadline) {
				t.Errorf("%s: never seen on all three; the last readings:\n%s", what, strings.Join(seen[max(0, len(seen)-5):], "\n"))
				return r
			}
			var ok bool
			r, ok = read()
			seen = append(seen, fmt.Sprintf("metric %g, /status %g, show %q", r.metric, r.status, r.show))
			said := true
			for _, w := range say {
				said = said && strings.Contains(r.show, w)
			}
			now := [3]bool{want(r.metric), want(r.status), want(r.shown) && said}
			for k := range got {
				got[k] = now[k] || apart && got[k]
			}
			if ok && got[0] && got[1] && got[2] {
				t.Logf("%s: %s", what, seen[len(seen)-1])
				return r
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	zero := func(lag float64) bool { return lag == 0 }

	// Idle: a row the source wrote 40 s ago (as the binlog says), then nothing.
	exec("SET timestamp = UNIX_TIMESTAMP() - 40")
	exec("INSERT INTO " + db + ".t VALUES (1, 1)")
	exec("SET timestamp = DEFAULT")
	rows.await(1)
	// Show says caught up once the source's heartbeat came: other tests' rows on the same
	// server (filtered out here) also bring the lag to 0, without the heartbeat's word.
	await("idle after a 40 s old row, caught up", false, zero, "caught up")

	// Under load: a row every 5 ms, each written as if 30 s ago, a quarter of the source's
	// 20 ms heartbeat period, so that the source sends none while the load lasts. The
	// time is the test's clock
	// (MariaDB runs on this host): UNIX_TIMESTAMP() would read the session's timestamp once
	// set, and each row would be 30 s older than the one before.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for k := 2; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for _, q := range []string{fmt.Sprintf("SET timestamp = %d", time.Now().Unix()-30), fmt.Sprintf("INSERT INTO %s.t VALUES (%d, %d)", db, k, k)} {
				if _, err := conn.Execute(q); err != nil {
					t.Errorf("%s: %v", q, err)
					return
				}
			}
		}
	}()
	stopLoad := sync.OnceFunc(func() { close(stop); <-stopped })
	t.Cleanup(stopLoad) // before the connection closes, when an await fails
	// The suite's other tests write to the same server, their rows current: read (and
	// filtered out) between these, they bring the lag to 0 for a moment, as they should (the
	// binlog is read up to now). In a CI run beside the wave's volume tests the three
	// readers never read 30 s in one reading, so each must say it in one of its own, and
	// show's line then say behind, not caught up.
	r := await("under load 30 s behind", true, func(lag float64) bool { return lag >= 29 && lag <= 35 }, "behind the source")
	if strings.Contains(r.show, "caught up") && r.shown != 0 {
		t.Errorf("instance show's lag line %q says caught up with a lag", r.show)
	}
	stopLoad()
	exec("SET timestamp = DEFAULT")
	await("idle after the load", false, zero)

	// A sink that stops acknowledging: a fresh row waits, and the lag grows with its wait.
	gate.close()
	t0 := time.Now()
	exec("INSERT INTO " + db + ".t VALUES (100000, 1)")
	r = await("sink stalled", false, func(lag float64) bool { return lag >= 4 })
	if limit := time.Since(t0).Seconds() + 3; r.metric > limit || r.status > limit || r.shown > limit {
		t.Errorf("sink stalled %.1f s: lag %+v, want at most the stall and a heartbeat", time.Since(t0).Seconds(), r)
	}
	gate.open()
	await("the sink back", false, zero)

	// After a snapshot, with the last transaction 40 s old and no new rows.
	exec("SET timestamp = UNIX_TIMESTAMP() - 40")
	exec("INSERT INTO " + db + ".t VALUES (200000, 1)")
	exec("SET timestamp = DEFAULT")
	res, err := conn.Execute("SELECT COUNT(*) FROM " + db + ".t")
	if err != nil {
		t.Fatal(err)
	}
	total, _ := res.GetInt(0, 0)
	var out, errOut bytes.Buffer
	if err := runInstance(ctx, []string{"snapshot", id, "-zk", zkAddr, "-root", root}, &out, &errOut); err != nil {
		t.Fatalf("instance snapshot: %v %s", err, errOut.String())
	}
	rows.await(2 * int(total)) // an insert message per row, then a snapshot message per row
	await("after the snapshot", false, zero)
}

// gatedPublisher holds every Publish while closed: a sink that stops acknowledging.
type gatedPublisher struct {
	bus.Publisher
	mu     sync.RWMutex
	closed bool
}

func (g *gatedPublisher) Publish(ctx context.Context, msgs ...bus.Message) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.Publisher.Publish(ctx, msgs...)
}

func (g *gatedPublisher) close() {
	g.mu.Lock()
	g.closed = true
}

func (g *gatedPublisher) open() {
	if g.closed {
		g.closed = false
		g.mu.Unlock()
	}
}

// topicReader counts the messages of a topic of the memory bus as they come.
type topicReader struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	n   int
}

func newTopicReader(t *testing.T, ctx context.Context, b *memory.Bus, topic string) *topicReader {
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: "lag-test"})
	if err != nil {
		t.Fatal(err)
	}
	r := &topicReader{t: t, ctx: ctx}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Subscribe(sctx, func(context.Context, bus.Message) error {
			r.mu.Lock()
			r.n++
			r.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return r
}

func (r *topicReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// await waits until at least n messages came.
func (r *topicReader) await(n int) {
	r.t.Helper()
	for r.count() < n {
		select {
		case <-r.ctx.Done():
			r.t.Fatalf("%d messages on the topic, want %d", r.count(), n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
