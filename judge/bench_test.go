package judge

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// BenchmarkPlacementHTTP is the HTTP load of POST /v1/placement on 127.0.0.1 with 1,000
// live nodes: b.N requests from 8 concurrent clients over keep-alive connections. It
// reports the latency percentiles seen by the clients and the request rate.
func BenchmarkPlacementHTTP(b *testing.B) {
	for _, algo := range []string{"random", "leastload", "p2c", "predictive", "balanced"} {
		b.Run(algo+"/nodes=1000", func(b *testing.B) {
			base, j := readyJudgeB(b, Options{Store: openStoreB(b), Algorithm: algo})
			now := time.Now()
			for i := range 1000 {
				j.Ingest(metric.Batch{Node: fmt.Sprintf("wave-%04d", i), TS: now, IntervalS: 60, Points: []metric.Point{
					{Name: "cpu.util", Value: float64(i % 90)}, {Name: "mem.used_pct", Value: float64((i * 7) % 90)},
					{Name: "load.1", Value: float64(i%8) / 2}, {Name: "wave.tps", Value: float64(i * 3)},
					{Name: "wave.instances", Value: float64(i % 10)}, {Name: "net.rx_bps", Value: float64(i * 1000)},
				}}, sourceHTTP)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			body := []byte(`{"instance":"orders","exclude":["wave-0001"]}`)
			call := func() (time.Duration, error) {
				start := time.Now()
				resp, err := client.Post(base+"/v1/placement", "application/json", bytes.NewReader(body))
				if err != nil {
					return 0, err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return 0, fmt.Errorf("status %d", resp.StatusCode)
				}
				return time.Since(start), err
			}
			if _, err := call(); err != nil {
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
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range next {
						d, err := call()
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						lats = append(lats, d)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			sort.Slice(lats, func(a, c int) bool { return lats[a] < lats[c] })
			if len(lats) > 0 {
				b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "req/s")
			}
		})
	}
}
