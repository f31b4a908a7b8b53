//go:build !agentonly

package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv"
)

// TestRemoteWriteFromPrometheusIntegration: a real Prometheus (Debian's 2.42) scrapes a
// real node_exporter (1.5) and remote-writes to the judge of `binlake up`, with no BinLake
// agent on the host: the judge lists the node with the canonical metrics the analyses and
// the placement plugins read, and Prometheus counts no failed send, of samples or of the
// metadata it sends beside them, and has none left pending.
func TestRemoteWriteFromPrometheusIntegration(t *testing.T) {
	t.Parallel()
	exporter := testenv.StartNodeExporter(t)
	s := startUp(t, upOptions{DataDir: t.TempDir(), Node: "rw-up"})
	node := fmt.Sprintf("rw-%d", time.Now().UnixNano())
	prom := testenv.StartPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: [%q]
        labels: {node: %q}
remote_write:
  - url: %s/api/v1/write
    queue_config: {batch_send_deadline: 500ms}
    metadata_config: {send_interval: 2s}
`, exporter, node, s.urls.Judge), nil)

	want := []string{"cpu.util", "cpu.cores", "mem.used_pct", "load.1", "net.rx_bps"}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var got nodesAnswer
		if getJSON(t, "GET", s.urls.Judge+"/v1/nodes", "", &got) != http.StatusOK {
			c.Errorf("GET /v1/nodes failed")
			return
		}
		for _, n := range got.Nodes {
			if n.Node == node {
				for _, m := range want {
					assert.Contains(c, n.Load, m, "node %s's metrics: %v", node, n.Load)
				}
				assert.Greater(c, n.Load["cpu.cores"], 0.0)
				assert.True(c, n.Load["mem.used_pct"] > 0 && n.Load["mem.used_pct"] < 100, "mem.used_pct %v", n.Load["mem.used_pct"])
				return
			}
		}
		c.Errorf("the judge does not list node %s yet", node)
	}, 60*time.Second, 500*time.Millisecond, "node_exporter's metrics through Prometheus's remote write in the judge")

	// The file systems' use, per mount as the agent sends it.
	var detail struct {
		Current struct {
			Series []struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"series"`
		} `json:"current"`
	}
	require.Equal(t, http.StatusOK, getJSON(t, "GET", s.urls.Judge+"/v1/nodes/"+node, "", &detail))
	mounts := 0
	for _, se := range detail.Current.Series {
		if se.Name == "disk.used_pct" && se.Labels["mount"] != "" {
			mounts++
		}
	}
	require.Positive(t, mounts, "no disk.used_pct{mount} in %+v", detail.Current.Series)

	// What the judge holds is what /proc shows: memory and load now, and the CPU's busy
	// share over the same 8 s: the judge's samples between two readings of the node
	// (their count and mean give their sum) against /proc/stat between the moments the
	// samples stand for, within a few points (the scrapes' edges fall up to a second off
	// the readings'). A scrape's cpu.util reaches the judge after it: once the next scrape
	// begins (the rates need every part of it) and the sender's deadline, so each judge
	// reading is taken that much after its /proc reading.
	type seriesNow struct {
		Count      int64
		Mean, Last float64
		LastTS     time.Time
	}
	read := func() map[string]seriesNow {
		var cur struct {
			Current struct {
				Series []struct {
					Name   string            `json:"name"`
					Labels map[string]string `json:"labels"`
					Count  int64             `json:"count"`
					Mean   float64           `json:"mean"`
					Last   float64           `json:"last"`
					LastTS time.Time         `json:"last_ts"`
				} `json:"series"`
			} `json:"current"`
		}
		require.Equal(t, http.StatusOK, getJSON(t, "GET", s.urls.Judge+"/v1/nodes/"+node, "", &cur))
		out := map[string]seriesNow{}
		for _, se := range cur.Current.Series {
			if len(se.Labels) == 0 {
				out[se.Name] = seriesNow{se.Count, se.Mean, se.Last, se.LastTS}
			}
		}
		return out
	}
	lag := min(max(time.Since(read()["cpu.util"].LastTS), 0), 4*time.Second)
	busy0, total0 := procCPU(t)
	time.Sleep(lag)
	a := read()["cpu.util"]
	time.Sleep(8*time.Second - lag)
	busy1, total1 := procCPU(t)
	_, loadBefore := procMemLoad(t)
	time.Sleep(lag)
	got := read()
	memPct, load1 := procMemLoad(t)
	require.InDelta(t, memPct, got["mem.used_pct"].Last, 3, "mem.used_pct against /proc/meminfo")
	// The judge's last load.1 was scraped between the two readings of /proc/loadavg, and
	// on a busy machine the load moves within those seconds (a CI run beside a build: 6.7
	// scraped, 9.45 read after): it stands within a quarter of the range they span.
	lo, hi := min(loadBefore, load1), max(loadBefore, load1)
	tol := max(1.5, hi/4)
	require.True(t, got["load.1"].Last >= lo-tol && got["load.1"].Last <= hi+tol,
		"load.1 %.2f against /proc/loadavg %.2f before and %.2f after (± %.2f)", got["load.1"].Last, loadBefore, load1, tol)
	b := got["cpu.util"]
	require.Greater(t, b.Count-a.Count, int64(4), "cpu.util samples in 8 s of 1 s scrapes")
	judged := (float64(b.Count)*b.Mean - float64(a.Count)*a.Mean) / float64(b.Count-a.Count)
	require.InDelta(t, 100*(busy1-busy0)/(total1-total0), judged, 8, "cpu.util against /proc/stat over the same 8 s")

	// A placement can choose the node: it is live, with the figures the plugins read.
	var placed struct {
		Node string `json:"node"`
	}
	require.Equal(t, http.StatusOK, getJSON(t, "POST", s.urls.Judge+"/v1/placement",
		`{"instance":"rw-test","exclude":["rw-up"],"algorithm":"leastload","dry_run":true}`, &placed))
	require.Equal(t, node, placed.Node)

	// Prometheus sent samples and metadata, and none failed.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := promSelf(t, prom.URL)
		assert.Greater(c, m["prometheus_remote_storage_samples_total"], 0.0)
		assert.Greater(c, m["prometheus_remote_storage_metadata_total"], 0.0, "no metadata sent yet")
	}, 30*time.Second, 500*time.Millisecond, "Prometheus's remote-write counters")
	m := promSelf(t, prom.URL)
	for _, failed := range []string{"prometheus_remote_storage_samples_failed_total", "prometheus_remote_storage_metadata_failed_total"} {
		require.Zero(t, m[failed], failed)
	}
	// A send may be retried: the judge answers 503 when its store has not taken a batch
	// within 4 s, and Prometheus sends it again (a CI run beside the suite's other
	// writers retried 1,500 samples, the store's file on a busy disk). What was retried
	// must then go through: nothing stays pending.
	require.Contains(t, m, "prometheus_remote_storage_samples_pending")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Zero(c, promSelf(t, prom.URL)["prometheus_remote_storage_samples_pending"], "samples pending")
	}, 30*time.Second, 500*time.Millisecond, "Prometheus's samples sent (retried %v)", m["prometheus_remote_storage_samples_retried_total"])
}

// procCPU reads /proc/stat's first line: busy (all but idle and iowait) and total jiffies.
func procCPU(t *testing.T) (busy, total float64) {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	require.NoError(t, err)
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
	for i, v := range f {
		if i >= 8 { // guest and guest_nice are in user and nice already
			break
		}
		n, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// procMemLoad reads the used memory share (as node_exporter's MemAvailable/MemTotal give
// it) and the 1-minute load average.
func procMemLoad(t *testing.T) (memPct, load1 float64) {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	require.NoError(t, err)
	kb := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			kb[strings.TrimSuffix(f[0], ":")], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	memPct = 100 * (1 - kb["MemAvailable"]/kb["MemTotal"])
	b, err = os.ReadFile("/proc/loadavg")
	require.NoError(t, err)
	load1, err = strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	require.NoError(t, err)
	return memPct, load1
}

// promSelf reads Prometheus's own /metrics, each family's series summed.
func promSelf(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			rest = line[strings.LastIndexByte(line, '}')+2:]
		}
		if v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64); err == nil {
			out[name] += v
		}
	}
	require.NoError(t, sc.Err())
	return out
}
