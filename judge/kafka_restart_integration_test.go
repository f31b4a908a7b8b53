package judge

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/store"
)

// ackedBatch is a batch an agent published with the broker's acknowledgement.
type ackedBatch struct {
	node string
	ts   time.Time
}

// restartAgents publishes outageBatch batches for nodes, one every interval, round robin,
// each with a time of its own. A batch whose publish fails is published again, the same
// batch, until the broker acknowledges it, as an agent would.
type restartAgents struct {
	mu       sync.Mutex
	acked    []ackedBatch
	failures int
	stop     chan struct{}
	done     chan struct{}
}

func startRestartAgents(t *testing.T, pub bus.Publisher, nodes []string, interval time.Duration) *restartAgents {
	a := &restartAgents{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		times := batchTimes{}
		tick := time.NewTicker(interval) // the load's pace, not a synchronisation
		defer tick.Stop()
		for seq := int64(0); ; seq++ {
			node := nodes[seq%int64(len(nodes))]
			ts := times.next(node)
			data, err := metric.Encode(outageBatch(node, ts, seq))
			if err != nil {
				t.Errorf("encode: %v", err)
				return
			}
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := pub.Publish(ctx, bus.Message{Topic: metric.Topic, Key: []byte(node), Value: data})
				cancel()
				if err == nil {
					break
				}
				a.mu.Lock()
				a.failures++
				a.mu.Unlock()
				select {
				case <-a.stop:
					return
				case <-tick.C:
				}
			}
			a.mu.Lock()
			a.acked = append(a.acked, ackedBatch{node, ts})
			a.mu.Unlock()
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(a.halt)
	return a
}

// halt stops the agents and waits for them (idempotent).
func (a *restartAgents) halt() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
}

func (a *restartAgents) counts() (acked, failures int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked), a.failures
}

// TestJudgeKafkaRestartIntegration is the judge's side of a Kafka broker restart: a judge
// ingests the metric stream from a broker of its own (testenv.StartKafkaBroker; the shared
// test broker serves other tests meanwhile) through the production subscription
// (config.Bus.Subscribe: a group of its own, from the newest batches on) into
// SQLite. The broker is stopped in the middle of the stream, first with SIGTERM (a
// controlled shutdown), then with SIGKILL (a crash: log recovery on the next start), each
// time for 10 s, and started again on the same data folder and port. Ingest must resume by
// itself and every point an agent published with an acknowledgement must be in the store:
// none lost. Redelivered and republished batches are the same points, which the store
// keeps once (store.Store.Write), so duplicates show only in the judge's ingest count.
func TestJudgeKafkaRestartIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	broker := testenv.StartKafkaBroker(t)
	ctx := testenv.Context(t)
	const (
		perBatch = 10                    // points of an outageBatch
		interval = 50 * time.Millisecond // 20 batches/s
		outage   = 10 * time.Second
		// resumeLimit bounds how long after the broker serves again the judge stores new
		// points: the subscription's retry backoff (at most 5 s, bus.SubscribeWithRetry)
		// plus rejoining the group on a busy machine.
		resumeLimit = 90 * time.Second
	)
	// The subscription's bus and the judge log into the test's output (shown when it
	// fails; Info, as -json runs are verbose): which wait timed out does not say why ingest
	// did not resume. The agents' publisher has a bus of its own, quiet: its retries
	// through the outage are expected.
	logger := testenv.LoggerAt(t, slog.LevelInfo)
	b, err := kafka.New(kafka.Options{Brokers: []string{broker.Addr()}, ClientID: "judge-restart-test", Logger: logger, WriteTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() }) // after the judge has stopped: cleanups run last first
	require.NoError(t, b.CreateTopic(ctx, bus.TopicSpec{Name: metric.Topic, Partitions: metric.TopicPartitions}))
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "binlake-judge-restart-test", StartAt: bus.StartLast})
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	st := openStore(t)
	base, j := readyJudge(t, Options{Store: st, Subscriber: sub, Algorithm: "leastload", Logger: logger})

	pb, err := kafka.New(kafka.Options{Brokers: []string{broker.Addr()}, ClientID: "judge-restart-agents", Logger: quiet, WriteTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { pb.Close() })
	pub, err := pb.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	nodes := []string{"wave-a", "wave-b", "wave-c"}
	agents := startRestartAgents(t, pub, nodes, interval)

	// waitFor polls cond every 20 ms for at most limit and returns how long it took.
	waitFor := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > limit || ctx.Err() != nil {
				acked, failures := agents.counts()
				t.Fatalf("timed out after %s waiting for %s (store %+v; %d batches acknowledged, %d failed publishes)",
					time.Since(start).Round(time.Millisecond), what, j.StoreCounters(), acked, failures)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}

	// The group starts at the newest offsets: the batches that count are those
	// acknowledged once the judge has seen every node, that is once the partitions of
	// their keys have a position.
	waitFor("the judge to see every node", time.Minute, func() bool { return len(j.Incremental().NodeIDs()) == len(nodes) })
	from, _ := agents.counts()
	const mIngested, mSubErrs = `binlake_judge_points_total{source="bus"}`, "binlake_judge_subscribe_errors_total"
	ingestedAtFrom := metricValues(t, metricsOf(t, base), mIngested)[mIngested]

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		written := j.StoreCounters().Written
		waitFor("points stored before the stop", time.Minute, func() bool { return j.StoreCounters().Written >= written+20*perBatch })
		ackedAtStop, failedAtStop := agents.counts()
		stopped := broker.Stop(t, sig)
		time.Sleep(outage) // the outage's length is the point of the test, not a wait for a condition
		started := broker.Start(t)
		acked, failed := agents.counts()
		require.Greater(t, failed, failedAtStop, "no publish failed while the broker was down: the outage did not happen")
		writtenAtUp := j.StoreCounters().Written
		published := waitFor("an agent's first publish after the restart", resumeLimit, func() bool { n, _ := agents.counts(); return n > acked })
		ingested := waitFor("the judge to store points again", resumeLimit, func() bool { return j.StoreCounters().Written > writtenAtUp })
		t.Logf("%v: broker gone %s after the signal, down %s in all (%d batches acknowledged before, %d failed publishes meanwhile); "+
			"after it served again an agent published in %s and the judge stored new points in %s",
			sig, stopped.Round(10*time.Millisecond), (stopped + outage + started).Round(100*time.Millisecond), ackedAtStop,
			failed-failedAtStop, published.Round(10*time.Millisecond), ingested.Round(10*time.Millisecond))
	}

	// A little more stream after the last restart, then every acknowledged batch must
	// arrive.
	more, _ := agents.counts()
	waitFor("more batches after the restarts", time.Minute, func() bool { n, _ := agents.counts(); return n >= more+40 })
	agents.halt()
	acked := agents.acked[from:]
	want := make(map[string]bool, len(acked))
	loMs, hiMs := acked[0].ts.UnixMilli(), acked[0].ts.UnixMilli()
	for _, ab := range acked {
		ms := ab.ts.UnixMilli()
		want[fmt.Sprintf("%s@%d", ab.node, ms)] = true
		loMs, hiMs = min(loMs, ms), max(hiMs, ms)
	}
	lo, hi := time.UnixMilli(loMs), time.UnixMilli(hiMs+1) // Scan's range ends before hi
	stored := func() (found, points int) {
		require.NoError(t, st.Refresh(ctx))
		perKey := map[string]int{}
		require.NoError(t, st.Scan(ctx, lo, hi, func(pts []store.Point) error {
			for _, p := range pts {
				perKey[fmt.Sprintf("%s@%d", p.Node, p.TS.UnixMilli())]++
			}
			return nil
		}))
		for k := range want {
			if n := perKey[k]; n > 0 {
				found++
				points += n
			}
		}
		return found, points
	}
	var found, points int
	waitFor("every acknowledged batch in the store", resumeLimit, func() bool {
		found, points = stored()
		return found == len(want)
	})
	require.Equal(t, len(want)*perBatch, points, "points of the acknowledged batches in the store")

	m := metricValues(t, metricsOf(t, base), mIngested, mSubErrs)
	require.GreaterOrEqual(t, m[mIngested]-ingestedAtFrom, int64(len(want)*perBatch),
		"points the judge ingested from the bus: at least the acknowledged ones")
	_, failures := agents.counts()
	t.Logf("%d batches (%d points) acknowledged from the judge's first sight of every node on: all stored, none lost; "+
		"the judge ingested %d points from the bus meanwhile, %d more than acknowledged (redeliveries, and batches published again "+
		"after a failed attempt that had reached the broker); %d failed publishes retried; %d subscription errors",
		len(want), len(want)*perBatch, m[mIngested]-ingestedAtFrom, m[mIngested]-ingestedAtFrom-int64(len(want)*perBatch), failures, m[mSubErrs])
}

// metricsOf is the judge's /metrics.
func metricsOf(t *testing.T, base string) string {
	t.Helper()
	code, body := get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code, body)
	return body
}
