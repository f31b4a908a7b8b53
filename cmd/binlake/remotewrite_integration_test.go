//go:build !agentonly

package main

import (
	"bufio"
	"fmt"
	"net/http"
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
// metadata it sends beside them.
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

	// Prometheus sent samples and metadata, and none failed.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := promSelf(t, prom.URL)
		assert.Greater(c, m["prometheus_remote_storage_samples_total"], 0.0)
		assert.Greater(c, m["prometheus_remote_storage_metadata_total"], 0.0, "no metadata sent yet")
	}, 30*time.Second, 500*time.Millisecond, "Prometheus's remote-write counters")
	m := promSelf(t, prom.URL)
	for _, failed := range []string{"prometheus_remote_storage_samples_failed_total", "prometheus_remote_storage_metadata_failed_total",
		"prometheus_remote_storage_samples_retried_total"} {
		require.Zero(t, m[failed], failed)
	}
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
