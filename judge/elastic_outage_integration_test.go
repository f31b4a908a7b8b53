package judge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// metricValues reads unlabelled samples from a Prometheus text exposition.
func metricValues(t *testing.T, body string, names ...string) map[string]int64 {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		require.NoError(t, err, "sample %q", sc.Text())
		out[name] = int64(v)
	}
	require.Len(t, out, len(names), "samples %v in /metrics", names)
	return out
}

// TestJudgeElasticOutageIntegration is the issue's acceptance test "engine stopped for
// 30 s while batches flow" on a running judge: agents post batches over HTTP to a judge
// that stores them in the real engine through a proxy; the proxy refuses connections for
// 30 s (3 s with -short). Placements must keep succeeding, the judge must buffer (and,
// past its capacity, drop the oldest points and count them), then write what it buffered.
// At the end the test counts the points in the engine: exactly those the judge says it
// wrote, and with those it says it dropped, exactly those it accepted.
func TestJudgeElasticOutageIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	outage := 30 * time.Second
	if testing.Short() {
		outage = 3 * time.Second
	}
	const (
		perBatch = 10
		every    = 100 * time.Millisecond // 100 points/s
	)
	// Room for two thirds of what the outage produces, so that some points must go.
	capacity := int(outage/every) * perBatch * 2 / 3

	st, proxy := proxiedElasticStore(t, "judge")
	base, j := readyJudge(t, Options{Store: st, Algorithm: "leastload",
		Buffer: store.BufferOptions{Capacity: capacity, MaxBatch: 500, Overflow: store.OverflowDrop, MinBackoff: 100 * time.Millisecond,
			MaxBackoff: time.Second, CloseTimeout: 30 * time.Second}})
	client := &http.Client{Timeout: 10 * time.Second}

	var (
		sent     atomic.Int64 // points of batches the judge accepted
		down     atomic.Bool
		placed   atomic.Int64 // placements answered, and those during the outage
		placedDn atomic.Int64
		lastMu   sync.Mutex
		last     = map[string]int64{} // node → sequence number of its newest batch
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	nodes := []string{"wave-a", "wave-b", "wave-c"}
	require.Len(t, outageBatch("x", time.Now(), 0).Points, perBatch)
	wg.Add(2)
	go func() { // the agents: one batch every 100 ms, round robin over the nodes
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		times := batchTimes{}
		for seq := int64(0); ; seq++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			node := nodes[seq%int64(len(nodes))]
			ts := times.next(node)
			data, err := metric.Encode(outageBatch(node, ts, seq))
			if err != nil {
				t.Errorf("encode: %v", err)
				return
			}
			resp, err := client.Post(base+"/v1/metrics", "application/json", bytes.NewReader(data))
			if err != nil {
				t.Errorf("post batch %d: %v", seq, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Errorf("post batch %d: status %d", seq, resp.StatusCode)
				return
			}
			sent.Add(perBatch)
			lastMu.Lock()
			last[node] = seq
			lastMu.Unlock()
		}
	}()
	go func() { // placements all along, each of which must succeed
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if len(j.Incremental().NodeIDs()) < len(nodes) {
				continue // before every agent has reported once
			}
			resp, err := client.Post(base+"/v1/placement", "application/json", strings.NewReader(`{"instance":"orders"}`))
			if err != nil {
				t.Errorf("placement: %v", err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("placement: status %d: %s", resp.StatusCode, body)
				return
			}
			placed.Add(1)
			if down.Load() {
				placedDn.Add(1)
			}
		}
	}()
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()

	waitFor := func(what string, limit time.Duration, cond func(store.BufferCounters) bool) store.BufferCounters {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			c := j.StoreCounters()
			if cond(c) {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, c)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("points in the engine", time.Minute, func(c store.BufferCounters) bool { return c.Written >= 5*perBatch })

	// The outage.
	proxy.Down()
	down.Store(true)
	start := time.Now()
	errsBefore := j.StoreCounters().Errors
	// From the first failed write on, nothing reaches the engine until it is back.
	atFirstError := waitFor("a failed write", outage, func(c store.BufferCounters) bool { return c.Errors > errsBefore })
	for time.Now().Before(start.Add(outage)) { // the outage's length is the point; /healthz answers all along
		code, body := get(t, base+"/healthz")
		require.Equal(t, http.StatusOK, code, body)
		code, body = get(t, base+"/readyz") // and /readyz says the store is failing
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Contains(t, body, `"reason":"store_failing"`)
		time.Sleep(500 * time.Millisecond)
	}
	during := j.StoreCounters()
	down.Store(false)
	require.NoError(t, proxy.Up())
	t.Logf("outage of %s: %d placements answered meanwhile; at its end %+v", outage, placedDn.Load(), during)
	require.Positive(t, placedDn.Load(), "placements during the outage")
	require.Equal(t, atFirstError.Written, during.Written, "points written while the engine was unreachable")
	require.Greater(t, during.Errors, errsBefore)
	require.GreaterOrEqual(t, during.Buffered, int64(capacity), "the buffer filled up")
	if !testing.Short() {
		require.Positive(t, during.Dropped, "the outage produced more than the capacity of %d points", capacity)
	}

	// Batches keep flowing for a moment after the engine is back, then stop.
	more := sent.Load() + 20*perBatch
	for sent.Load() < more && !t.Failed() {
		time.Sleep(every)
	}
	stopLoad()
	require.False(t, t.Failed(), "agents or placements failed")

	// The judge writes what it buffered: its figures, read from /metrics as an operator
	// would, account for every point it accepted.
	const (
		mBuffered = "binlake_judge_store_points_buffered"
		mWritten  = "binlake_judge_store_points_written_total"
		mDropped  = "binlake_judge_store_points_dropped_total"
		mErrors   = "binlake_judge_store_write_errors_total"
	)
	var m map[string]int64
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, body := get(t, base+"/metrics")
		m = metricValues(t, body, mBuffered, mWritten, mDropped, mErrors)
		if m[mBuffered] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the judge did not write its buffer after the outage: %v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	total := sent.Load()
	t.Logf("sent %d points; written %d, dropped %d, %d failed writes; %d placements in all",
		total, m[mWritten], m[mDropped], m[mErrors], placed.Load())
	require.Equal(t, total, m[mWritten]+m[mDropped], "every accepted point is written or dropped")
	require.GreaterOrEqual(t, m[mWritten]-during.Written, int64(capacity), "the full buffer was written after the outage")
	require.GreaterOrEqual(t, m[mDropped], during.Dropped)
	code, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, "the engine is back: %s", body)
	_, body = get(t, base+"/healthz")
	require.Contains(t, body, fmt.Sprintf(`"store":{"buffered":0,"dropped":%d,"written":%d,"write_errors":%d,"refused":0}`, m[mDropped], m[mWritten], m[mErrors]))

	// Count in the engine what arrived: every point of the run, read back with Scan once
	// the indices are refreshed (a document holds several points).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, st.Refresh(ctx))
	var stored int64
	require.NoError(t, st.Scan(ctx, start.Add(-time.Hour), time.Now().Add(time.Hour), func(pts []store.Point) error {
		stored += int64(len(pts))
		return nil
	}))
	require.Equal(t, m[mWritten], stored, "points in the engine")
	// Dropping takes the oldest: every node's newest batch arrived.
	for _, node := range nodes {
		s, err := st.Stats(ctx, store.Query{Node: node, Name: "go.goroutines", From: start.Add(-time.Hour), To: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, float64(last[node]), s.Max, "newest batch of %s", node)
	}
}

// outageBatch is an agent's batch: ten points, seq in go.goroutines.
func outageBatch(node string, ts time.Time, seq int64) metric.Batch {
	return metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{
		{Name: "cpu.util", Value: float64(20 + 10*(seq%3))}, {Name: "mem.used_pct", Value: 40},
		{Name: "load.1", Value: 0.5}, {Name: "net.rx_bps", Value: 1e6}, {Name: "net.tx_bps", Value: 2e6},
		{Name: "disk.used_pct", Value: 30}, {Name: "wave.instances", Value: 2},
		{Name: "wave.tps", Value: 100, Labels: map[string]string{"instance": "orders"}},
		{Name: "wave.tps", Value: 50, Labels: map[string]string{"instance": "users"}},
		{Name: "go.goroutines", Value: float64(seq)},
	}}
}

// batchTimes hands out an agent's batch times: now, and for each node later than its
// previous batch, since a point's identity includes its time to the millisecond.
type batchTimes map[string]time.Time

func (bt batchTimes) next(node string) time.Time {
	ts := time.Now().UTC().Truncate(time.Millisecond)
	if !ts.After(bt[node]) {
		ts = bt[node].Add(time.Millisecond)
	}
	bt[node] = ts
	return ts
}

// proxiedElasticStore is an Elasticsearch store on the test engine, under a prefix of the
// test's own (name in it), reached through a proxy the test can take down and bring back;
// it retries a request once, briefly. It is closed when the test ends, after the judge
// has stopped (cleanups run last first).
func proxiedElasticStore(t *testing.T, name string) (*elastic.Store, *testenv.Proxy) {
	t.Helper()
	cfg := estest.Config(t)
	u, err := url.Parse(cfg.Addresses[0])
	require.NoError(t, err)
	proxy := testenv.StartProxy(t, u.Host, testenv.Copy)
	cfg.Addresses = []string{"http://" + proxy.Addr()}
	prefix := fmt.Sprintf("binlake-test-%08x-%s-", rand.Uint32(), name)
	estest.CleanupPrefix(t, prefix)
	st, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, Logger: quiet,
		MaxRetries: 1, Backoff: backoff.Schedule(50*time.Millisecond, 200*time.Millisecond)})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st, proxy
}
