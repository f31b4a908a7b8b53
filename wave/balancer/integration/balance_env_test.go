package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// balanceEnv is the setup of the balancer's process tests: a database with one table per
// instance, each instance reading its table into a topic of its own, a ZooKeeper root of
// its own, and writers inserting rows into the tables at set rates.
type balanceEnv struct {
	t       *testing.T
	ctx     context.Context
	c       *zk.Coordinator
	zk      string
	root    string
	brokers string
	db      string
	env     []string
	insts   []*cluster.Instance // instance i reads table t<i> into its own topic
	// balancer is the balancer section of every wave's config.
	balancer string
	// poll, when set, replaces the test waves' 200 ms pipeline.poll_interval.
	poll string
	// hostAgents: the agents report their host too (cpu.cores, cpu.util, host.info),
	// and the judge plans in utilisation, every wave sharing this one host.
	hostAgents bool

	writers sync.WaitGroup
	stop    context.CancelFunc
	// written counts the rows the writers inserted: on a loaded machine an insert can
	// take longer than its 100 ms tick, and the rate written falls short of the one asked.
	written atomic.Int64
}

func newBalanceEnv(t *testing.T, ctx context.Context, name string, n int) *balanceEnv {
	e := &balanceEnv{t: t, ctx: ctx, zk: testenv.Require(t, testenv.ZooKeeper), brokers: testenv.Require(t, testenv.Kafka)}
	a := testenv.RequireMySQL(t)
	stamp := time.Now().UnixNano()
	e.root = fmt.Sprintf("/binlake-test-%s-%d", name, stamp)
	e.db = fmt.Sprintf("bal_%s_%d", name, stamp%1e9)
	c, err := zk.New(ctx, zk.Options{Servers: strings.Split(e.zk, ","), Root: e.root, SessionTimeout: 4 * time.Second, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.c = c
	conn := wavetest.Connect(t)
	wavetest.MustExec(t, conn, "CREATE DATABASE "+e.db)
	t.Cleanup(func() { conn.Execute("DROP DATABASE IF EXISTS " + e.db) })
	if a.Password != "" {
		e.env = append(e.env, "BINLAKE_TEST_SOURCE_PASSWORD="+a.Password)
	}
	for i := range n {
		wavetest.MustExec(t, conn, fmt.Sprintf("CREATE TABLE %s.t%d (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)", e.db, i))
	}
	start := wavetest.CurrentPos(t)
	for i := range n {
		inst := &cluster.Instance{ID: fmt.Sprintf("%s-i%02d", e.db, i),
			Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
			Start:  start,
			Subscriptions: []cluster.Subscription{{Name: "rows", Topic: fmt.Sprintf("%s.t%d", e.db, i),
				Include: []string{fmt.Sprintf(`%s\.t%d`, e.db, i)}}}}
		if a.Password != "" {
			inst.Source.PasswordEnv = "BINLAKE_TEST_SOURCE_PASSWORD"
		}
		e.insts = append(e.insts, inst)
	}
	return e
}

// waitWaves waits until n waves are registered: an instance assigned to a wave that is
// not (yet) is the balancer's to place elsewhere.
func (e *balanceEnv) waitWaves(n int, procs ...*testenv.Proc) {
	e.waitFor(fmt.Sprintf("%d waves registered", n), func() bool {
		ms, err := e.c.Members(e.ctx, cluster.GroupWaves)
		return err == nil && len(ms) == n
	}, procs...)
}

// addAll stores every instance, assigned to node.
func (e *balanceEnv) addAll(node string) {
	for _, inst := range e.insts {
		if _, err := cluster.AddInstance(e.ctx, e.c, inst, node, nil); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *balanceEnv) startWave(node string) *testenv.Proc {
	cfg := wavetest.WaveConfig(node, e.zk, e.root, e.brokers, 4*time.Second)
	if e.poll != "" {
		cfg = strings.Replace(cfg, "poll_interval: 200ms", "poll_interval: "+e.poll, 1)
	}
	return wavetest.StartWave(e.t, node, cfg+e.balancer, e.env)
}

// write inserts rates[i] rows per second into table i (a multiple of 10: a tenth every
// 100 ms) until stopWriting, or the test's end (a test that failed midway included).
func (e *balanceEnv) write(rates []int) {
	ctx, cancel := context.WithCancel(e.ctx)
	e.stop = cancel
	defer e.t.Cleanup(e.stopWriting) // registered after the connections: runs before they close
	for i, r := range rates {
		if r <= 0 {
			continue
		}
		conn := wavetest.Connect(e.t)
		values := strings.TrimSuffix(strings.Repeat("(1),", r/10), ",")
		e.writers.Add(1)
		go func() {
			defer e.writers.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := conn.Execute(fmt.Sprintf("INSERT INTO %s.t%d (v) VALUES %s", e.db, i, values)); err != nil {
					e.t.Errorf("write t%d: %v", i, err)
					return
				}
				e.written.Add(int64(r / 10))
			}
		}()
	}
}

func (e *balanceEnv) stopWriting() {
	if e.stop != nil {
		e.stop()
	}
	e.writers.Wait()
}

// nodes returns, for every instance, what the coordinator's key instances/<id>/<child>
// holds ("assign") or who leads it ("leader"); no entry when nothing. A read that fails
// otherwise (the test's session reconnecting on a loaded machine) is read again: it says
// nothing about the instance.
func (e *balanceEnv) nodes(child string) map[string]string {
	out := map[string]string{}
	for _, inst := range e.insts {
		k := cluster.AssignKey(inst.ID)
		if child == "leader" {
			k = cluster.LeaderKey(inst.ID)
		}
		for {
			var data []byte
			var err error
			if child == "leader" {
				data, err = e.c.Leader(e.ctx, k)
			} else {
				var v coord.Value
				v, err = e.c.Get(e.ctx, k)
				data = v.Data
			}
			if err == nil {
				out[inst.ID] = string(data)
			}
			if err == nil || errors.Is(err, coord.ErrNotFound) || e.ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

// count is how many instances each node has in m.
func count(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, n := range m {
		out[n]++
	}
	return out
}

// allOn reports whether every instance has a value in m, and it is one of nodes.
func (e *balanceEnv) allOn(m map[string]string, nodes ...string) bool {
	for _, inst := range e.insts {
		if !slices.Contains(nodes, m[inst.ID]) {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds, failing the test after 90 s, at the context's end or
// when one of procs exits.
func (e *balanceEnv) waitFor(what string, cond func() bool, procs ...*testenv.Proc) {
	e.t.Helper()
	if !e.within(90*time.Second, cond, procs...) {
		e.t.Fatalf("timed out waiting for %s (assigned %v, leaders %v)", what, e.nodes("assign"), e.nodes("leader"))
	}
}

// within polls cond until it holds (true), or d passes or the context ends (false); it
// fails the test when one of procs exits.
func (e *balanceEnv) within(d time.Duration, cond func() bool, procs ...*testenv.Proc) bool {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		for _, p := range procs {
			if err := p.Exited(); err != nil {
				e.t.Fatal(err)
			}
		}
		if e.ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// checkRows fails the test for every row of table i missing from its topic, and returns
// the longest pause in the topic: the largest difference between the times of the
// first messages of two consecutive rows (the interruption of a move).
func (e *balanceEnv) checkRows(i int) (rows int, pause time.Duration) {
	e.t.Helper()
	conn := wavetest.Connect(e.t)
	r, err := conn.Execute(fmt.Sprintf("SELECT id FROM %s.t%d ORDER BY id", e.db, i))
	if err != nil {
		e.t.Fatal(err)
	}
	var want []string
	for row := range r.Values {
		want = append(want, fmt.Sprint(r.Values[row][0].AsInt64()))
	}
	topic := e.insts[i].Subscriptions[0].Topic
	first := readFirstTimes(e.t, e.ctx, e.brokers, topic, len(want))
	var missing []string
	for _, id := range want {
		if _, ok := first[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		e.t.Errorf("instance %s: %d of %d rows missing from %s, first %v", e.insts[i].ID, len(missing), len(want), topic, missing[:min(5, len(missing))])
		return len(want), 0
	}
	for k := 1; k < len(want); k++ {
		pause = max(pause, first[want[k]].Sub(first[want[k-1]]))
	}
	return len(want), pause
}

// readFirstTimes reads topic until it holds at least want distinct row ids (or the
// context ends) and returns each id's earliest message time.
func readFirstTimes(t *testing.T, ctx context.Context, brokers, topic string, want int) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	if want == 0 {
		return out
	}
	var mu sync.Mutex
	// A transport of its own: the default one caches metadata from before the topic was
	// created.
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafkago.Client{Addr: kafkago.TCP(strings.Split(brokers, ",")...), Transport: tr}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
		t.Fatalf("metadata of %s: %v %+v", topic, err, md)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range md.Topics[0].Partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := wavetest.PartitionReader(brokers, topic, p.ID)
			defer r.Close()
			for {
				m, err := r.ReadMessage(rctx)
				if err != nil {
					return
				}
				if m.Time.IsZero() {
					t.Errorf("%s: a message without a time", topic)
				}
				var msg struct {
					PK json.RawMessage `json:"pk"`
				}
				if err := json.Unmarshal(m.Value, &msg); err != nil {
					t.Errorf("message on %s is not JSON: %v: %.200s", topic, err, m.Value)
					return
				}
				id := wavetest.PKID(msg.PK)
				mu.Lock()
				if at, ok := out[id]; !ok || m.Time.Before(at) {
					out[id] = m.Time
				}
				if len(out) >= want {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return maps.Clone(out)
}

// startJudge serves an in-process judge (SQLite store) planning with rb, and returns the
// balancer section that points the waves at it. Without agents it knows no rates: every
// instance costs rb.InstanceFloor.
func (e *balanceEnv) startJudge(rb judge.RebalanceOptions, extra string) (url, section string) {
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(e.t.TempDir(), "judge.db")})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	j, err := judge.New(judge.Options{Store: st, Rebalance: &rb, Logger: testenv.Logger(e.t)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { j.Close() })
	srv := httptest.NewServer(j.Handler())
	e.t.Cleanup(srv.Close)
	return srv.URL, fmt.Sprintf("balancer:\n  judge: %s\n  interval: 1s\n%s", srv.URL, extra)
}

// balancerMetric sums a metric (every label set) over the live waves' /metrics.
func (e *balanceEnv) balancerMetric(name string) float64 {
	ms, err := e.c.Members(e.ctx, cluster.GroupWaves)
	if err != nil {
		e.t.Fatal(err)
	}
	var total float64
	for _, m := range ms {
		for _, line := range strings.Split(wavetest.HTTPGet(e.t, "http://"+e.addr(m.ID)+"/metrics"), "\n") {
			if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
				f := strings.Fields(line)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err != nil {
					e.t.Fatalf("%s: %v", line, err)
				}
				total += v
			}
		}
	}
	return total
}

// startAgent runs `binlake agent` for node: it scrapes the wave's /metrics every second
// and posts the batches to the judge at judgeURL.
func (e *balanceEnv) startAgent(node, judgeURL string) *testenv.Proc {
	var addr string
	e.waitFor(node+" registered", func() bool {
		ms, err := e.c.Members(e.ctx, cluster.GroupWaves)
		for _, m := range ms {
			var d struct{ Addr string }
			if err == nil && m.ID == node && json.Unmarshal(m.Data, &d) == nil {
				addr = d.Addr
			}
		}
		return addr != ""
	})
	cfg := fmt.Sprintf(`node: %s
interval: 1s
http: {listen: 127.0.0.1:0}
sink:
  kind: http
  http: {url: %s/v1/metrics}
collectors:
  wave: {url: http://%s/metrics}
`, node, judgeURL, addr)
	if e.hostAgents {
		cfg += "  host: {}\n"
	}
	path := filepath.Join(e.t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return testenv.StartBinlake(e.t, "agent-"+node, nil, "agent", "-config", path)
}

// balancerStatus reads the "balancer" part of the balancer wave's /status.
func (e *balanceEnv) balancerStatus() (st struct {
	Leader, Auto bool
	Moves        []balancer.MoveResult
}) {
	l, err := e.c.Leader(e.ctx, cluster.BalancerLeaderKey)
	if err != nil {
		e.t.Fatalf("no balancer: %v", err)
	}
	var body struct{ Balancer json.RawMessage }
	if err := json.Unmarshal([]byte(wavetest.HTTPGet(e.t, "http://"+e.addr(string(l))+"/status")), &body); err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(body.Balancer, &st); err != nil {
		e.t.Fatalf("balancer status %s: %v", body.Balancer, err)
	}
	return st
}

// addr is node's HTTP address, as it registered it.
func (e *balanceEnv) addr(node string) string {
	ms, err := e.c.Members(e.ctx, cluster.GroupWaves)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range ms {
		var d struct{ Addr string }
		if m.ID == node && json.Unmarshal(m.Data, &d) == nil {
			return d.Addr
		}
	}
	e.t.Fatalf("wave %s is not registered", node)
	return ""
}
