package alarm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/history"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// lagWindowPolicy fires on any mean and says the mean it fired on: the page's summary is
// the window the first live point was evaluated on.
const lagWindowPolicy = `policies:
  - name: lag
    metric: wave.lag_s
    condition: avg_over(5m) > 0
    severity: P2
    channels: [c]
    annotations:
      summary: "{{ .Value }}"
`

func lag(v float64) metric.Point { return metric.Point{Name: "wave.lag_s", Value: v} }

// firstPageValue is the value of the first page rcv gets, as the lag policy's summary
// carries it.
func firstPageValue(t *testing.T, rcv *receiver) float64 {
	t.Helper()
	p := rcv.wait(t, 1)
	require.Equal(t, "firing", p[0].Status)
	require.Len(t, p[0].Alerts, 1)
	v, err := strconv.ParseFloat(p[0].Alerts[0].Annotations["summary"], 64)
	require.NoError(t, err)
	return v
}

// A restarted `binlake up` (its in-process bus empty) evaluates a five-minute window a
// minute after its start on the five minutes the judge's store holds, not on the minute
// since (the one-machine trial: the replication-lag policy paged at 92 s where the
// five-minute mean was 58). The store holds the first live batch already (the judge
// stored it before the alarm read): redelivered with its time to the nanosecond, it is
// the same point, not another (the store keeps milliseconds), so the first page is the
// next batch's, on the stored four minutes, that batch and the next. What the store holds
// before the window is trimmed off.
func TestTimeWindowsStartFromTheStoredHistory(t *testing.T) {
	t0 := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "store.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	pts := []store.Point{
		{Node: "wave-1", Name: "wave.lag_s", TS: t0.Add(-400 * time.Second), Value: 1000}, // before the window
		{Node: "wave-1", Name: "wave.lag_s", TS: t0, Value: 100},                          // the first live batch, stored already
		{Node: "wave-2", Name: "cpu.util", TS: t0.Add(-30 * time.Second), Value: 50},      // no policy reads it
	}
	for s := 240; s >= 10; s -= 10 {
		pts = append(pts, store.Point{Node: "wave-1", Name: "wave.lag_s", TS: t0.Add(-time.Duration(s) * time.Second), Value: 40})
	}
	require.NoError(t, st.Write(context.Background(), pts))
	closed, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "closed.db")})
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	for _, tc := range []struct {
		name       string
		hist       History
		want       float64
		read, errs float64
	}{
		// wave-1's 26 batches and wave-2's one, read; the first live batch held already.
		{"with the store's history", history.Store{Store: st, Path: "store.db"}, (24*40 + 100 + 70) / 26.0, 27, 0},
		{"without", nil, 100, 0, 0},
		// Said and counted; the windows start at the stream, as without.
		{"the store failing", history.Store{Store: closed, Path: "closed.db"}, 100, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, sub, c := metricBusAndCoord(t)
			rcv := newReceiver(t)
			_, a := startAlarm(t, Options{
				Policies: parsePolicies(t, lagWindowPolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
				Subscriber: sub, Coordinator: c, EvalInterval: 50 * time.Millisecond, GroupWait: time.Millisecond,
				History: tc.hist, Logger: quiet,
			})
			pub, err := b.Publisher()
			require.NoError(t, err)
			t.Cleanup(func() { pub.Close() })
			for _, lb := range []metric.Batch{batch("wave-1", t0.Add(123456), lag(100)), batch("wave-1", t0.Add(10*time.Second), lag(70))} {
				data, err := metric.Encode(lb)
				require.NoError(t, err)
				require.NoError(t, pub.Publish(context.Background(), bus.Message{Topic: metric.Topic, Key: []byte("wave-1"), Value: data}))
			}
			require.InDelta(t, tc.want, firstPageValue(t, rcv), 1e-9)
			require.Equal(t, tc.read, testutil.ToFloat64(a.m.historyBatches))
			require.Equal(t, tc.errs, testutil.ToFloat64(a.m.historyErrors))
		})
	}
}

// The history is read at a partition's first message, after a gap in its offsets
// (another process handled the messages between), and after the partition was released;
// not for the next message, nor for a redelivered one.
func TestReadBackIsDueAtAPartitionsFirstMessageAndAfterAGap(t *testing.T) {
	r := &readBack{next: map[int]int64{}}
	msg := func(p int, off int64) bus.Message { return bus.Message{Partition: p, Offset: off} }
	for i, c := range []struct {
		m       bus.Message
		release []int
		due     bool
	}{
		{m: msg(0, 40), due: true},
		{m: msg(0, 41)},
		{m: msg(1, 7), due: true}, // another partition's first
		{m: msg(0, 41)},           // redelivered
		{m: msg(0, 39)},           // redelivered from further back
		{m: msg(0, 42)},
		{m: msg(0, 50), due: true}, // 43–49 were handled elsewhere
		{m: msg(1, 8)},
		{release: []int{1}, m: msg(1, 9), due: true},
		{m: msg(0, 51)},
	} {
		r.forget(c.release)
		require.Equal(t, c.due, r.due(c.m), "step %d: %+v", i, c.m)
	}
}

// The read back reaches as far as the policy that looks back longest: its time window, or
// its count window's points before the newest at a minute each, an hour at most; nothing is read for policies that look at their newest point alone.
func TestLookbackCoversTheLongestWindow(t *testing.T) {
	pol := func(cond string) string {
		return "  - name: p" + strconv.Itoa(len(cond)) + "\n    metric: cpu.util\n    condition: " + cond + "\n    severity: P2\n    channels: [c]\n"
	}
	for _, c := range []struct {
		conds []string
		want  time.Duration
	}{
		{[]string{"last > 1"}, 0},
		{[]string{"last > 1", "avg_over(5m) > 1"}, 5 * time.Minute},
		{[]string{"max_over(90s) > 1", "avg_over(5m) > 1"}, 5 * time.Minute},
		{[]string{"all(#3) > 1"}, 2 * time.Minute},
		// The longest a policy needs, not a window and another's count added up.
		{[]string{"diff(#2) > 1", "avg_over(1m) > 1"}, 2 * time.Minute},
		{[]string{"avg(#1000) > 1", "avg_over(30m) > 1"}, time.Hour},
	} {
		y := "policies:\n  - name: dead\n    nodata: 3\n    severity: P0\n    channels: [c]\n" // no condition at all
		for _, cond := range c.conds {
			y += pol(cond)
		}
		e := NewEngine(EngineOptions{Policies: parsePolicies(t, y), Log: &MemoryLog{}, Logger: quiet})
		require.Equal(t, c.want, e.Lookback(), "%v", c.conds)
	}
}

// brokenHistory hands over its batches, then fails, or blocks until its context ends
// (block): a broker lost mid-read, a read that runs out of time or is cut short.
type brokenHistory struct {
	batches []metric.Batch
	block   bool
	reading chan struct{} // closed once the batches are handed over
}

func (h *brokenHistory) ReadBack(ctx context.Context, _ bus.Message, _ time.Duration, fn func(metric.Batch) error) (int, error) {
	for _, b := range h.batches {
		if err := fn(b); err != nil {
			return 0, err
		}
	}
	close(h.reading)
	if h.block {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return 0, errors.New("the broker went away")
}

func (h *brokenHistory) String() string { return "a broken history" }

// A read back that fails midway drops what it read: the windows start from the stream,
// as the warning says, not from the oldest part of their past with a gap up to the live
// point (an outside trial paged on a half-read 30-minute window). One cut short by the
// stop (or the partition's revocation) leaves its message unevaluated, for the process
// that takes it next, which pages on it.
func TestACutShortReadBackLeavesNoHalfWindow(t *testing.T) {
	t0 := time.Now().UTC().Truncate(time.Second)
	var old []metric.Batch
	for s := 290; s >= 200; s -= 10 { // the oldest part of the window only
		old = append(old, batch("wave-1", t0.Add(-time.Duration(s)*time.Second), lag(100)))
	}
	live, err := metric.Encode(batch("wave-1", t0, lag(20)))
	require.NoError(t, err)
	publish := func(b *memory.Bus) {
		pub, err := b.Publisher()
		require.NoError(t, err)
		defer pub.Close()
		require.NoError(t, pub.Publish(context.Background(), bus.Message{Topic: metric.Topic, Key: []byte("wave-1"), Value: live}))
	}

	t.Run("failed", func(t *testing.T) {
		b, sub, c := metricBusAndCoord(t)
		rcv := newReceiver(t)
		h := &brokenHistory{batches: old, reading: make(chan struct{})}
		_, a := startAlarm(t, Options{
			Policies: parsePolicies(t, lagWindowPolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
			Subscriber: sub, Coordinator: c, EvalInterval: 50 * time.Millisecond, GroupWait: time.Millisecond, History: h, Logger: quiet,
		})
		publish(b)
		require.InDelta(t, 20, firstPageValue(t, rcv), 1e-9, "the live point alone, as without a history")
		require.Equal(t, 1.0, testutil.ToFloat64(a.m.historyErrors))
	})

	t.Run("cut short by the stop", func(t *testing.T) {
		b, sub, c := metricBusAndCoord(t)
		rcv := newReceiver(t)
		h := &brokenHistory{batches: old, block: true, reading: make(chan struct{})}
		a, err := New(Options{
			Policies: parsePolicies(t, lagWindowPolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
			Subscriber: sub, Coordinator: c, EvalInterval: 50 * time.Millisecond, GroupWait: time.Millisecond, History: h, Logger: quiet,
		})
		require.NoError(t, err)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		publish(b)
		<-h.reading
		stop()
		require.NoError(t, <-done)
		require.Zero(t, testutil.ToFloat64(a.m.batches), "the message was not evaluated")
		require.Empty(t, rcv.payloads())
		// The next process of the group gets the message again.
		sub2, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: DefaultGroup})
		require.NoError(t, err)
		startAlarm(t, Options{
			Policies: parsePolicies(t, lagWindowPolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
			Subscriber: sub2, Coordinator: c, EvalInterval: 50 * time.Millisecond, GroupWait: time.Millisecond, Logger: quiet,
		})
		require.InDelta(t, 20, firstPageValue(t, rcv), 1e-9)
	})
}

// BenchmarkWarm: one op is one agent batch (55 points) of one of 1,000 nodes read back
// into the windows of the agent policies (Engine.Warm), each node's batches 10 s apart:
// the cost of a partition's history after its decoding.
func BenchmarkWarm(b *testing.B) {
	var evals atomic.Int64
	a := newBenchAlarm(b, &evals)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	batches := make([]metric.Batch, tpNodes)
	for i := range batches {
		batches[i] = agentBatch(fmt.Sprintf("wave-%04d", i), base, i)
	}
	points := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		n := i % tpNodes
		batches[n].TS = base.Add(time.Duration(i/tpNodes) * 10 * time.Second)
		points += a.eng.Warm(batches[n])
	}
	b.StopTimer()
	if points == 0 {
		b.Fatal("no point kept")
	}
	b.ReportMetric(float64(b.N)*float64(len(batches[0].Points))/b.Elapsed().Seconds(), "points/s")
}
