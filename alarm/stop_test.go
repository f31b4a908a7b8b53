package alarm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// runAlarm runs an alarm in the background; stop cancels it and returns Run's error.
func runAlarm(t *testing.T, o Options) (a *Alarm, stop func() error) {
	t.Helper()
	a, err := New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return a, stop
}

func encode(t testing.TB, node string, at time.Time, interval float64, pts ...metric.Point) []byte {
	t.Helper()
	data, err := metric.Encode(metric.Batch{Node: node, TS: at, IntervalS: interval, Points: pts})
	require.NoError(t, err)
	return data
}

// An ordinary stop (a deploy's SIGTERM) sends the resolution of an alert that healed
// just before it, although its group_wait has not passed: the stop path sends every
// group at once (issue 34, item 2).
func TestStopSendsAWaitingResolution(t *testing.T) {
	rcv := newReceiver(t)
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	a, stop := runAlarm(t, Options{Policies: parsePolicies(t, basePolicy), Coordinator: c, Logger: quiet,
		Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)}, GroupWait: 2 * time.Second})
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", time.Now(), 10, cpu(95))))
	p := rcv.wait(t, 1)
	require.Equal(t, "firing", p[0].Status)
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", time.Now(), 10, cpu(10))))
	require.NoError(t, stop()) // within the resolution's group_wait
	p = rcv.payloads()
	require.Len(t, p, 2, "the resolution went out before the process stopped")
	require.Equal(t, "resolved", p[1].Status)
}

// A node that falls silent just before its alarm process stops pages nodata from the
// next process, which never reads a batch of it: the node book carries it over (issue
// 34, item 3).
func TestNodataForANodeSilentBeforeARestart(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	rr := newRestartRig(t, 0.5)
	publish := func(node string) { rr.publish(node, time.Now()) }
	start, rcv := rr.start, rr.rcv
	stopA := start()
	for range 6 {
		publish("wave-1")
		publish("wave-2")
		time.Sleep(500 * time.Millisecond)
	}
	// wave-2 falls silent; half an interval later its alarm process stops.
	publish("wave-1")
	time.Sleep(250 * time.Millisecond)
	require.NoError(t, stopA())
	require.Empty(t, rcv.payloads(), "not silent long enough to page yet")

	stopB := start()
	for range 8 { // 4 s: wave-2 is silent for 3 of its intervals after 1.5 s
		publish("wave-1")
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, stopB())
	require.Equal(t, []string{"firing wave-2 nodata"}, rr.paged())
}

// hungCoord is a coordinator whose reads and writes of keys under prefix never answer
// (a ZooKeeper that hangs): they return only when their context ends.
type hungCoord struct {
	coord.Coordinator
	prefix string
}

func (h hungCoord) Get(ctx context.Context, key string) (coord.Value, error) {
	if strings.HasPrefix(key, h.prefix) {
		<-ctx.Done()
		return coord.Value{}, ctx.Err()
	}
	return h.Coordinator.Get(ctx, key)
}

func (h hungCoord) Put(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	if strings.HasPrefix(key, h.prefix) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return h.Coordinator.Put(ctx, key, data, version)
}

// A stop with the notification log hung (ten claims queued, each of whose writes would
// wait 10 s) ends within the shutdown timeout and says what it left (issue 34, item 5).
func TestStopIsBoundedWhenTheLogHangs(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	var logs testenv.SyncBuffer
	a, stop := runAlarm(t, Options{Policies: parsePolicies(t, basePolicy), Coordinator: hungCoord{c, DefaultLogPrefix},
		Channels: map[string]notify.Notifier{"c": webhookChannel(t, newReceiver(t).srv.URL)},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)), ShutdownTimeout: 2 * time.Second})
	for i := range 10 {
		require.NoError(t, a.ObserveRaw(encode(t, fmt.Sprintf("wave-%d", i), time.Now(), 10, cpu(95))))
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // the old stop waited 10 s for each queued write
		t.Fatal("the stop did not end within its shutdown timeout")
	}
	require.Contains(t, logs.String(), "alarm stopped with work left")
	require.Contains(t, logs.String(), "unwritten_evaluations=")
}

// A restart of a process that reads the whole stream (the in-process bus of binlake up)
// does not page nodata for the nodes whose senders were cut off by the restart itself:
// an agent posting to up's judge buffers while the process is down and delivers within
// its next interval after the start. The start holds nodata for one interval, as
// catching up after a consumption gap does; a node still silent then pages.
func TestNodataWaitsOneIntervalAfterARestart(t *testing.T) {
	t.Parallel() // as TestNodataForANodeSilentBeforeARestart
	rr := newRestartRig(t, 1)
	publish, start := rr.publish, rr.start
	stopA := start()
	for range 3 {
		publish("wave-1", time.Now())
		publish("wave-2", time.Now())
		time.Sleep(time.Second)
	}
	require.NoError(t, stopA())
	down := time.Now()
	time.Sleep(4 * time.Second) // down for 4 of the nodes' intervals (nodata: 3)

	stopB := start()
	time.Sleep(300 * time.Millisecond) // wave-1's agent delivers what it buffered, within an interval
	for at := down; at.Before(time.Now()); at = at.Add(time.Second) {
		publish("wave-1", at)
	}
	for range 3 { // wave-2 stays silent: it pages once the hold is over
		time.Sleep(time.Second)
		publish("wave-1", time.Now())
	}
	require.NoError(t, stopB())
	require.Equal(t, []string{"firing wave-2 nodata"}, rr.paged())
}

// restartRig is an alarm process on the in-process bus (4 partitions) and a
// notification log on disk that start runs again and again, as restarts do, paging a
// webhook receiver for the base and nodata policies; the nodes' batches (publish) each
// say interval seconds.
type restartRig struct {
	t        *testing.T
	mb       *memory.Bus
	pub      bus.Publisher
	rcv      *receiver
	dir      string
	pols     []*policy.Policy
	interval float64
}

func newRestartRig(t *testing.T, interval float64) *restartRig {
	mb, err := memory.New(memory.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { mb.Close() })
	require.NoError(t, mb.CreateTopic(context.Background(), bus.TopicSpec{Name: metric.Topic, Partitions: 4}))
	pub, err := mb.Publisher()
	require.NoError(t, err)
	return &restartRig{t: t, mb: mb, pub: pub, rcv: newReceiver(t), dir: t.TempDir(),
		pols: parsePolicies(t, basePolicy+nodataPolicy), interval: interval}
}

// publish sends a batch of node's, dated at.
func (r *restartRig) publish(node string, at time.Time) {
	require.NoError(r.t, r.pub.Publish(context.Background(), bus.Message{Topic: metric.Topic, Key: []byte(node),
		Value: encode(r.t, node, at, r.interval, cpu(10))}))
}

// start runs a process; stop ends it.
func (r *restartRig) start() (stop func() error) {
	c := openCoord(r.t, r.dir)
	sub, err := r.mb.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "alarm"})
	require.NoError(r.t, err)
	_, stopRun := runAlarm(r.t, Options{Policies: r.pols, Coordinator: c, Subscriber: sub, Logger: quiet,
		Channels: map[string]notify.Notifier{"c": webhookChannel(r.t, r.rcv.srv.URL)}, EvalInterval: 50 * time.Millisecond,
		BookInterval: time.Hour /* only the stop writes it */})
	return func() error { err := stopRun(); sub.Close(); c.Close(); return err }
}

// paged is every alert the receiver got: status, node and reason.
func (r *restartRig) paged() []string {
	var out []string
	for _, p := range r.rcv.payloads() {
		for _, al := range p.Alerts {
			out = append(out, al.Status+" "+al.Labels["node"]+" "+al.Labels["reason"])
		}
	}
	return out
}
