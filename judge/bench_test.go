package judge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/httpload"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/judgetest/wavefleet"
)

// fleetBatch is node i's batch: the host and wave figures the plugins read.
func fleetBatch(i int, ts time.Time) metric.Batch {
	return metric.Batch{Node: fmt.Sprintf("wave-%04d", i), TS: ts, IntervalS: 60, Points: []metric.Point{
		{Name: "cpu.util", Value: float64(i % 90)}, {Name: "mem.used_pct", Value: float64((i * 7) % 90)},
		{Name: "load.1", Value: float64(i%8) / 2}, {Name: "cpu.cores", Value: 8}, {Name: "wave.tps", Value: float64(i * 3)},
		{Name: "wave.instances", Value: float64(i % 10)}, {Name: "net.rx_bps", Value: float64(i * 1000)},
		{Name: "net.tx_bps", Value: float64(i * 500)},
	}}
}

// ingestFleet feeds every node's batch round and round at batchesPerSec until stop
// closes, as the agents of a fleet do; it returns how many batches it sent.
func ingestFleet(j *Judge, nodes, batchesPerSec int, stop <-chan struct{}) func() int {
	var (
		wg   sync.WaitGroup
		sent int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for range batchesPerSec / 100 {
				j.Ingest(fleetBatch(n%nodes, time.Now()), sourceHTTP)
				n++
				sent++
			}
		}
	}()
	return func() int { wg.Wait(); return sent }
}

// BenchmarkPlaceWhileIngesting is one leastload placement decision with its default
// answer, while the fleet's batches keep arriving (2,000 batches/s of 8 points) and the
// snapshot is rebuilt every 200 ms. The placements are dry runs: a fleet's real
// placements are minutes apart, and tens of thousands of reservations pending at once
// would measure a cluster that does not exist (BenchmarkPlacementHTTP reserves). It
// reports the latency percentiles of Judge.Place; allocations are those of the whole
// process (ingest included), so the decision's own are in lbplugins' BenchmarkDecide.
func BenchmarkPlaceWhileIngesting(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("leastload/nodes=%d", nodes), func(b *testing.B) {
			j, err := New(Options{Store: openStoreB(b), Algorithm: "leastload", Logger: quiet, SnapshotEvery: DefaultSnapshotEvery,
				CapacityEvery: DefaultCapacityEvery})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Close() })
			now := time.Now()
			for i := range nodes {
				j.Ingest(fleetBatch(i, now), sourceHTTP)
			}
			stop := make(chan struct{})
			sent := ingestFleet(j, nodes, 2000, stop)
			req := api.PlacementRequest{Instance: "orders", Exclude: []string{"wave-0001"}, DryRun: true}
			if _, err := j.Place(req); err != nil {
				b.Fatalf("placement before timing: %v", err)
			}
			lats := make([]time.Duration, 0, b.N)
			start := time.Now()
			b.ResetTimer()
			for b.Loop() {
				t := time.Now()
				if _, err := j.Place(req); err != nil {
					b.Fatal(err)
				}
				lats = append(lats, time.Since(t))
			}
			b.StopTimer()
			elapsed := time.Since(start)
			close(stop)
			batches := sent()
			reportLatencies(b, lats)
			b.ReportMetric(float64(batches)/elapsed.Seconds(), "batches/s")
		})
	}
}

func reportLatencies(b *testing.B, lats []time.Duration) {
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lats[len(lats)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkPlacementHTTP is the HTTP load of POST /v1/placement on 127.0.0.1 with 1,000
// live nodes: b.N requests from 8 concurrent keep-alive clients in this process. It
// reports the latency percentiles seen by the clients, the request rate and the bytes of
// an answer. Placements reserve capacity (and, since no node ever reports the instances,
// pile up reservations on every node), except in the dry_run case. The clients are
// httpload connections (one TCP connection each, as wrk's); client=net-http runs the
// same load through net/http's Client, whose transport costs about as much CPU per
// request as the judge's answer, for comparison.
func BenchmarkPlacementHTTP(b *testing.B) {
	type poster func(body []byte) (int, int, error) // status, answer bytes
	clients := map[string]func(b *testing.B, base string) func() poster{
		"httpload": func(b *testing.B, base string) func() poster {
			host := strings.TrimPrefix(base, "http://")
			return func() poster {
				c, err := httpload.Dial(host, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { c.Close() })
				var answer []byte
				return func(body []byte) (int, int, error) {
					code, got, err := c.Post("/v1/placement", body, answer[:0])
					answer = got
					return code, len(got), err
				}
			}
		},
		"net-http": func(b *testing.B, base string) func() poster {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			return func() poster {
				return func(body []byte) (int, int, error) {
					resp, err := hc.Post(base+"/v1/placement", "application/json", bytes.NewReader(body))
					if err != nil {
						return 0, 0, err
					}
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.StatusCode, int(n), err
				}
			}
		},
	}
	for _, c := range []struct{ algo, mode, dryRun, client string }{
		{"leastload", "reserve", "", "httpload"}, {"leastload", "dry_run", `,"dry_run":true`, "httpload"},
		{"leastload", "dry_run", `,"dry_run":true`, "net-http"},
		{"random", "reserve", "", "httpload"}, {"p2c", "reserve", "", "httpload"},
		{"predictive", "reserve", "", "httpload"}, {"balanced", "reserve", "", "httpload"},
		{"utilisation", "reserve", "", "httpload"}, {"utilisation", "dry_run", `,"dry_run":true`, "httpload"},
	} {
		algo, dryRun := c.algo, c.dryRun
		b.Run(algo+"/"+c.mode+"/client="+c.client+"/nodes=1000", func(b *testing.B) {
			base, j := readyJudgeB(b, Options{Store: openStoreB(b), Algorithm: algo, SnapshotEvery: DefaultSnapshotEvery,
				CapacityEvery: DefaultCapacityEvery})
			now := time.Now()
			if algo == "utilisation" { // waves whose work the load model prices
				for _, batch := range pricedFleet(1000, now) {
					j.Ingest(batch, sourceHTTP)
				}
			} else {
				for i := range 1000 {
					j.Ingest(fleetBatch(i, now), sourceHTTP)
				}
			}
			// The fleet's first batches reach the store before timing, so that the
			// benchmark measures placements rather than the store's first writes.
			if err := j.buf.Refresh(context.Background()); err != nil {
				b.Fatal(err)
			}
			newPoster := clients[c.client](b, base)
			hint := ""
			if algo == "utilisation" { // as binlake instance add sends it, with rows too
				hint = `,"expected":{"rows_per_s":300,"bytes_per_s":50000}`
			}
			// An instance of its own per placement: the judge keeps one reservation per
			// instance, and the reserving runs measure nodes that carry pending ones.
			bodies := make([][]byte, 1<<16)
			for i := range bodies {
				bodies[i] = fmt.Appendf(nil, `{"instance":"orders-%05d","exclude":["wave-0001"]%s%s}`, i, hint, dryRun)
			}
			var size, sent atomic.Int64
			call := func(post poster) (time.Duration, error) {
				body := bodies[(sent.Add(1)-1)%int64(len(bodies))]
				start := time.Now()
				code, n, err := post(body)
				if err != nil {
					return 0, err
				}
				if code != http.StatusOK {
					return 0, fmt.Errorf("status %d", code)
				}
				size.Store(int64(n))
				return time.Since(start), nil
			}
			if _, err := call(newPoster()); err != nil {
				b.Fatalf("placement before timing: %v", err)
			}
			const clients = 8
			var (
				mu   sync.Mutex
				lats = make([]time.Duration, 0, b.N)
				wg   sync.WaitGroup
				next = make(chan struct{}, b.N)
			)
			for range b.N {
				next <- struct{}{}
			}
			close(next)
			posters := make([]poster, clients)
			for i := range posters {
				posters[i] = newPoster()
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for _, post := range posters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mine := make([]time.Duration, 0, b.N/clients+1)
					defer func() { mu.Lock(); lats = append(lats, mine...); mu.Unlock() }()
					for range next {
						d, err := call(post)
						if err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, d)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if len(lats) != b.N {
				b.Fatalf("%d of %d placements answered", len(lats), b.N)
			}
			reportLatencies(b, lats)
			b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(size.Load()), "bytes/answer")
		})
	}
}

// BenchmarkIngestHandler is POST /v1/metrics through the judge's handler without the
// network: decode, analysis, store buffer and the SQLite store behind it, batches of 100
// points from 1,000 nodes, until every point is written (a batch the full buffer refused
// is sent again a millisecond later). It reports points/s. The batches are posted by 64
// senders at once, as a fleet's agents post theirs: the judge answers a batch once the
// store has it, so one sender waits for every write (one sync each), while concurrent
// ones share the buffer's writes.
func BenchmarkIngestHandler(b *testing.B) {
	j, err := New(Options{Store: openStoreB(b), Algorithm: "leastload", Logger: quiet, SnapshotEvery: DefaultSnapshotEvery})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	h := j.Handler()
	bodies := make([][]byte, 1000)
	start := time.Now().Add(-time.Hour)
	for i := range bodies {
		batch := fleetBatch(i, start)
		for k := range 92 {
			batch.Points = append(batch.Points, metric.Point{Name: "wave.tps", Value: float64(k),
				Labels: map[string]string{"instance": fmt.Sprintf("db-%02d", k)}})
		}
		bodies[i] = encode(b, batch)
	}
	var next atomic.Int64
	b.ResetTimer()
	t0 := time.Now()
	b.SetParallelism(32) // × GOMAXPROCS senders
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := int(next.Add(1) - 1)
			// Each round of 1,000 batches is a new second, so that every point is new.
			body := bytes.Replace(bodies[n%1000], []byte(start.Format("2006-01-02T15:04:05")), []byte(start.Add(time.Duration(n/1000)*time.Second).Format("2006-01-02T15:04:05")), 1)
			for {
				req, _ := http.NewRequest("POST", "/v1/metrics", bytes.NewReader(body))
				rec := &discardWriter{h: http.Header{}}
				h.ServeHTTP(rec, req)
				if rec.code == http.StatusAccepted {
					break
				}
				if rec.code != http.StatusServiceUnavailable {
					b.Errorf("status %d", rec.code)
					return
				}
				time.Sleep(time.Millisecond) // the store buffer is full: an agent retries later
			}
		}
	})
	if err := j.buf.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*100)/time.Since(t0).Seconds(), "points/s")
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(c int)           { w.code = c }

// pricedFleet is n waves whose agents reported 40 rounds, 10 s apart until now, of the
// figures the load model prices work from (wavefleet): 4 to 32 cores, two instances
// each, prices that differ from wave to wave.
func pricedFleet(n int, now time.Time) []metric.Batch {
	waves := make([]wavefleet.Wave, n)
	for i := range waves {
		waves[i] = wavefleet.Wave{Node: fmt.Sprintf("wave-%04d", i), Cores: float64(int(4) << (i % 4)), UtilPct: float64(10 + i%60),
			Row: 1e-4 * (1 + float64(i%5)/4), Byte: 1e-9 * (1 + float64(i%3)/2),
			Instances: map[string]float64{fmt.Sprintf("db-%04d-a", i): float64(100 + i%900), fmt.Sprintf("db-%04d-b", i): float64(50 + i%300)}}
	}
	return wavefleet.Batches(waves, 40, now)
}

// BenchmarkSnapshotBuild is one build of the placement snapshot (what a placement after
// new batches pays, at most every placement.snapshot_every, while the others answer
// from the previous one): the nodes' views, every plugin's Prepare, the reservations
// rebased, and the waves' capacities in the load model (cores, prices, peak), computed
// anew ("computed": at most every placement.capacity_every; fitted prices cached) or
// taken from the last computation ("reused": the builds in between). "refit" forgets
// the cached fits first: the computation after a restart, or when every wave's minute
// to refit came at once.
func BenchmarkSnapshotBuild(b *testing.B) {
	for _, nodes := range []int{1000} {
		for _, mode := range []string{"reused", "computed", "refit"} {
			b.Run(fmt.Sprintf("nodes=%d/capacities=%s", nodes, mode), func(b *testing.B) {
				every := time.Duration(0)
				if mode == "reused" {
					every = time.Hour
				}
				j, err := New(Options{Store: openStoreB(b), Algorithm: "utilisation", Logger: quiet, CapacityEvery: every})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { j.Close() })
				for _, batch := range pricedFleet(nodes, time.Now()) {
					j.Ingest(batch, sourceHTTP)
				}
				// The store's writer done, so that it takes no CPU from the builds timed.
				if err := j.buf.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
				j.building.Lock()
				defer j.building.Unlock()
				if s := j.rebuild(); s.Views[0].Capacity == nil || !s.Views[0].Capacity.Priced {
					b.Fatalf("wave-0000 has no prices: %+v", s.Views[0].Capacity)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if mode == "refit" {
						b.StopTimer()
						j.model.Refit()
						b.StartTimer()
					}
					j.rebuild()
				}
			})
		}
	}
}
