package alarm

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// TestShardedAlarmsPageOnce: two alarm processes in one consumer group on the real Kafka
// share a shared notification log in ZooKeeper; one stops mid-way and starts again (two
// rebalances). Every violating node pages exactly once, no healthy node pages nodata, and
// every violation's resolution is delivered (issue 18, item 9).
func TestShardedAlarmsPageOnce(t *testing.T) {
	kaddr := testenv.Require(t, testenv.Kafka)
	zaddr := testenv.Require(t, testenv.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	suffix := time.Now().UnixNano()
	topic := fmt.Sprintf("%s.alarmshard-%d", metric.Topic, suffix)
	group := topic + "-alarm"
	root := fmt.Sprintf("/binlake-test-alarmshard-%d", suffix)
	newBus := func() *kafka.Bus {
		b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(kaddr), Logger: quiet, SessionTimeout: 6 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		return b
	}
	pb := newBus()
	require.NoError(t, pb.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: metric.TopicPartitions}))
	rcv := newReceiver(t)
	pols := parsePolicies(t, basePolicy+"    repeat_interval: 4h\n"+`  - name: agent-dead
    nodata: 3
    severity: P0
    channels: [c]
`)
	start := func() (stop func()) {
		c, err := zk.New(ctx, zk.Options{Servers: testenv.HostPorts(zaddr), Root: root})
		require.NoError(t, err)
		sub, err := newBus().Subscriber(bus.SubscribeOptions{Topic: topic, Group: group})
		require.NoError(t, err)
		actx, acancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- Run(actx, Options{Policies: pols, Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
				Subscriber: sub, Coordinator: c, EvalInterval: 100 * time.Millisecond, PositionInterval: 500 * time.Millisecond, Logger: quiet})
		}()
		return func() { acancel(); require.NoError(t, <-done); sub.Close(); c.Close() }
	}
	stopA, stopB := start(), start()
	defer func() { stopB() }()

	pub, err := pb.Publisher()
	require.NoError(t, err)
	var (
		mu       sync.Mutex
		violate  = true
		nodes    []string
		violated = map[string]bool{}
	)
	for i := range 12 {
		n := fmt.Sprintf("wave-%02d", i)
		nodes = append(nodes, n)
		violated[n] = i < 4
	}
	// The agents: every node publishes every second, as agents do, for the whole test.
	pctx, pcancel := context.WithCancel(ctx)
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			mu.Lock()
			v := violate
			mu.Unlock()
			now := time.Now().UTC()
			var msgs []bus.Message
			for _, n := range nodes {
				val := 10.0
				if v && violated[n] {
					val = 95
				}
				data, err := metric.Encode(metric.Batch{Node: n, TS: now, IntervalS: 1, Points: []metric.Point{cpu(val)}})
				if err != nil {
					panic(err)
				}
				msgs = append(msgs, bus.Message{Topic: topic, Key: []byte(n), Value: data})
			}
			if err := pub.Publish(pctx, msgs...); err != nil && pctx.Err() == nil {
				t.Errorf("publish: %v", err)
			}
			select {
			case <-pctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	count := func() (firing, resolved map[string]int, nodata int) {
		firing, resolved = map[string]int{}, map[string]int{}
		for _, p := range rcv.payloads() {
			for _, a := range p.Alerts {
				if a.Labels["reason"] == "nodata" {
					nodata++
					continue
				}
				if a.Status == "firing" {
					firing[a.Labels["node"]]++
				} else {
					resolved[a.Labels["node"]]++
				}
			}
		}
		return
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case <-rcv.seen:
			case <-time.After(90 * time.Second):
				f, r, nd := count()
				t.Fatalf("%s: firing %v resolved %v nodata %d", what, f, r, nd)
			}
		}
	}
	waitFor("first pages", func() bool { f, _, _ := count(); return len(f) == 4 })

	// A stops (its partitions move to B), runs again (they move back), then the
	// violations stop. Between the steps: enough agent ticks for each rebalance.
	settle := func() {
		for range 12 {
			select {
			case <-rcv.seen:
			case <-time.After(time.Second):
			}
		}
	}
	stopA()
	settle()
	stopA = start()
	settle()
	mu.Lock()
	violate = false
	mu.Unlock()
	waitFor("resolutions", func() bool { _, r, _ := count(); return len(r) == 4 })
	settle()
	pcancel()
	<-pubDone
	stopA()

	firing, resolved, nodata := count()
	t.Logf("pages per node: firing %v resolved %v nodata %d", firing, resolved, nodata)
	for _, n := range nodes[:4] {
		require.Equal(t, 1, firing[n], "firing pages of %s", n)
		require.Equal(t, 1, resolved[n], "resolved notices of %s", n)
	}
	require.Len(t, firing, 4, "no healthy node pages")
	require.Zero(t, nodata, "no nodata page")
}
