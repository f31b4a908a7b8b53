package judge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
)

// GET /v1/metric-names lists every name the judge has seen this hour, from any node and
// under any labels, sorted and each once: a sender's own metric is there, a typo not.
func TestMetricNames(t *testing.T) {
	j, clk := newJudge(t, nil)
	r := do(t, j.Handler(), "GET", "/v1/metric-names", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var empty api.MetricNames
	require.NoError(t, json.Unmarshal(r.body, &empty))
	require.Equal(t, []string{}, empty.Names)

	b := load("wave-1", clk.Now(), 50, 60)
	b.Points = append(b.Points, metric.Point{Name: "shop.checkout_errors", Value: 3})
	for _, batch := range []metric.Batch{b, load("wave-2", clk.Now(), 20, 30)} {
		r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, batch)))
		require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	}
	r = do(t, j.Handler(), "GET", "/v1/metric-names", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var got api.MetricNames
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, []string{"cpu.util", "mem.used_pct", "shop.checkout_errors", "wave.tps"}, got.Names)
	require.Equal(t, j.Incremental().Hour(), got.Hour)
}
