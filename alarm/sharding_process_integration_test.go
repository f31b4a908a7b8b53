package alarm

// A real crash of one of two `binlake alarm` processes sharing a consumer group (issue
// 18, item 9, tried from outside): SIGKILL leaves the group nothing but a member that
// stops heartbeating, so its partitions sit unread until the session times out, and its
// ZooKeeper session, dispatcher queue and last commits end without a goodbye.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// processRig is what the tests of real `binlake alarm` processes on the test services
// share: a topic of the test's own (metric.TopicPartitions partitions) and its consumer
// group, a ZooKeeper root, a publisher onto the topic, the coordinator, a client for the
// group's state, the webhook receiver, and the alarm.yaml every process of the test runs.
type processRig struct {
	ctx          context.Context
	topic, group string
	pub          bus.Publisher
	zc           *zk.Coordinator
	kc           *kafkago.Client
	rcv          *receiver
	cfg          string
}

// newProcessRig sets the rig up, named after the test, for a scenario of at most timeout.
func newProcessRig(t *testing.T, name string, timeout time.Duration) *processRig {
	return newProcessRigOn(t, name, timeout, metric.TopicPartitions)
}

// newProcessRigOn is newProcessRig with a topic of the given partition count.
func newProcessRigOn(t *testing.T, name string, timeout time.Duration, partitions int) *processRig {
	t.Helper()
	kaddr := testenv.Require(t, testenv.Kafka)
	zaddr := testenv.Require(t, testenv.ZooKeeper)
	testenv.BinlakeBinary(t) // built before the clock of the scenario starts
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	r := &processRig{ctx: ctx, rcv: newReceiver(t)}
	var root string
	r.topic, r.group, root = shardNames(name)
	brokers := testenv.HostPorts(kaddr)
	b, err := kafka.New(kafka.Options{Brokers: brokers, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.CreateTopic(ctx, bus.TopicSpec{Name: r.topic, Partitions: partitions}))
	r.pub, err = b.Publisher()
	require.NoError(t, err)
	r.zc, err = zk.New(ctx, zk.Options{Servers: testenv.HostPorts(zaddr), Root: root})
	require.NoError(t, err)
	t.Cleanup(func() { r.zc.Close() })
	r.kc = &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second}
	// The bus section has no session timeout: the group notices a crashed process after
	// the bus's default, 10 s. The coordinator's is the default, 10 s, too: the alarm
	// holds nothing ephemeral there (the notification log and the node book are plain
	// nodes), and a shorter one makes its client drop the connection when ZooKeeper
	// stalls for a few seconds on a loaded machine (2.7 s at 4 s, seen in CI), and a log
	// the alarm cannot read is a page it sends anyway: a duplicate the verdicts count.
	r.cfg = fmt.Sprintf(`log: {level: info, format: text}
http: {listen: "127.0.0.1:0"}
bus: {kind: kafka, brokers: [%s], topic: %s, group: %s}
coordinator: {kind: zk, servers: [%s], root: %s, session_timeout: 10s}
evaluation: {interval: 200ms}
notify: {group_wait: 500ms, min_backoff: 100ms}
channels:
  c: {kind: webhook, url: "%s"}
`, strings.Join(brokers, ", "), r.topic, r.group, strings.Join(testenv.HostPorts(zaddr), ", "), root, r.rcv.srv.URL)
	return r
}

// alarmProc is one running `binlake alarm` and its API.
type alarmProc struct {
	*testenv.Proc
	api string
}

var servingLine = regexp.MustCompile(`alarm serving on (http://\S+) `)

func startAlarmProc(t *testing.T, name, cfg, pols string) *alarmProc {
	t.Helper()
	dir := t.TempDir()
	cfgPath, polPath := filepath.Join(dir, "alarm.yaml"), filepath.Join(dir, "policies.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	require.NoError(t, os.WriteFile(polPath, []byte(pols), 0o600))
	p := testenv.StartBinlake(t, name, nil, "alarm", "--config", cfgPath, "--policies", polPath)
	return &alarmProc{Proc: p, api: p.WaitOutput(t, servingLine, 60*time.Second)[1]}
}

// firing lists the nodes whose alerts the process's API shows firing.
// firing lists the nodes of p's firing alerts; t is a test or, in a wait, one look.
func (p *alarmProc) firing(t require.TestingT) []string {
	resp, err := http.Get(p.api + "/v1/alerts?state=firing")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct{ Alerts []AlertView }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var out []string
	for _, a := range body.Alerts {
		out = append(out, a.Labels["node"])
	}
	return out
}

// TestShardedAlarmProcessesKill9: two `binlake alarm` processes in one group, ZooKeeper
// holding the shared notification log; one is killed with SIGKILL while its violating
// nodes fire, and started again once the other took its partitions over. Every violating
// node pages exactly once, no node pages nodata, every resolution is delivered.
func TestShardedAlarmProcessesKill9(t *testing.T) {
	r := newProcessRig(t, "alarmkill", 3*time.Minute)
	ctx, topic, group, rcv, cfg := r.ctx, r.topic, r.group, r.rcv, r.cfg
	nflog := &CoordLog{C: r.zc}
	procA := startAlarmProc(t, "alarm-a", cfg, shardPolicies)
	procB := startAlarmProc(t, "alarm-b", cfg, shardPolicies)
	kc, pub := r.kc, r.pub
	waitMembers(t, ctx, kc, group, 2)

	nodes, violating := shardNodes(12, metric.TopicPartitions, 4)
	agents := startFleet(t, ctx, pub, topic, nodes, violating)
	rcv.waitPages(t, "first pages", func(pg pages) bool { return len(pg.firing) == len(violating) })
	// The pages are delivered; wait until the log says so too, so the kill cannot fall
	// between a delivery and its record (that page would be resent after its lease, by
	// design).
	waitLog(t, ctx, nflog, len(violating))
	moved := procA.firing(t)
	require.NotEmpty(t, moved, "alarm A evaluates some violating nodes (every partition has one)")

	killed := time.Now()
	procA.Kill(t)
	waitMembers(t, ctx, kc, group, 1)
	rebalanced := time.Since(killed)
	t.Logf("group rebalanced %v after the kill; A's violating nodes %v", rebalanced.Round(100*time.Millisecond), moved)
	// The group notices the crash after the bus's session timeout (10 s) and then
	// rebalances: three of them is the most a crashed process's partitions may wait.
	require.LessOrEqual(t, rebalanced, 30*time.Second, "the group took A's partitions away")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, procB.firing(c), len(violating), "alerts firing on B")
	}, waitLimit, waitTick, "B took A's alerts over")
	watch(5 * time.Second) // nodata: 3 s of silence

	procA = startAlarmProc(t, "alarm-a2", cfg, shardPolicies)
	waitMembers(t, ctx, kc, group, 2)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		a, b := procA.firing(c), procB.firing(c)
		assert.True(c, len(a) > 0 && len(a)+len(b) == len(violating), "last: A fires %v, B fires %v; want %d in all, some on A", a, b, len(violating))
	}, waitLimit, waitTick, "A took its share back")
	watch(5 * time.Second)

	agents.heal()
	rcv.waitPages(t, "resolutions", func(pg pages) bool { return len(pg.resolved) == len(violating) })
	watch(5 * time.Second)
	pg := rcv.pages() // as the observation ends: silent agents would page nodata (3 intervals on)
	agents.stop()
	for _, p := range []*alarmProc{procA, procB} {
		require.NoError(t, p.Exited(), "the alarm processes keep running")
	}
	requirePagedOnce(t, pg, violating, agents)
}

// The process tests wait up to waitLimit for a state, looking every waitTick.
const waitLimit, waitTick = 60 * time.Second, 100 * time.Millisecond

// waitMembers waits until the group is stable with n members.
func waitMembers(t *testing.T, ctx context.Context, kc *kafkago.Client, group string, n int) {
	t.Helper()
	require.EventuallyWithTf(t, func(c *assert.CollectT) {
		gr, err := kc.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{group}})
		require.NoError(c, err)
		require.Len(c, gr.Groups, 1)
		g := gr.Groups[0]
		assert.True(c, g.GroupState == "Stable" && len(g.Members) == n, "last: %s with %d members", g.GroupState, len(g.Members))
	}, waitLimit, waitTick, "group %s stable with %d members", group, n)
}

// waitLog waits until the notification log holds n delivered pages.
func waitLog(t *testing.T, ctx context.Context, l NotificationLog, n int) {
	t.Helper()
	require.EventuallyWithTf(t, func(c *assert.CollectT) {
		es, err := l.Load(ctx)
		require.NoError(c, err)
		done := 0
		for _, e := range es {
			if e.Sent > 0 && !e.pending() {
				done++
			}
		}
		assert.Equal(c, n, done, "last: %d entries, %d delivered", len(es), done)
	}, waitLimit, waitTick, "%d delivered pages in the notification log", n)
}
