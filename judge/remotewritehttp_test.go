package judge

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/remotewrite"
	"github.com/binlake/binlake/judge/store"
)

// cpuScrape is one node_exporter scrape of host h at ts (one CPU, idle and user seconds)
// plus its memory, as Prometheus remote-writes it.
func cpuScrape(h string, ts time.Time, idle, user float64) []byte {
	return remotewrite.Encode(cpuSeries(h, ts, idle, user))
}

// cpuSeries is cpuScrape's series.
func cpuSeries(h string, ts time.Time, idle, user float64) []remotewrite.Series {
	l := func(name string, kv ...string) []remotewrite.Label {
		ls := []remotewrite.Label{{Name: "__name__", Value: name}, {Name: "instance", Value: h + ":9100"}, {Name: "job", Value: "node"}}
		for i := 0; i < len(kv); i += 2 {
			ls = append(ls, remotewrite.Label{Name: kv[i], Value: kv[i+1]})
		}
		return ls
	}
	at := func(v float64) []remotewrite.Sample {
		return []remotewrite.Sample{{Value: v, TimestampMs: ts.UnixMilli()}}
	}
	return []remotewrite.Series{
		{Labels: l("node_cpu_seconds_total", "cpu", "0", "mode", "idle"), Samples: at(idle)},
		{Labels: l("node_cpu_seconds_total", "cpu", "0", "mode", "user"), Samples: at(user)},
		{Labels: l("node_memory_MemTotal_bytes"), Samples: at(4e9)},
		{Labels: l("node_memory_MemAvailable_bytes"), Samples: at(3e9)},
		{Labels: l("node_boot_time_seconds"), Samples: at(1.6e9)},
	}
}

// POST /api/v1/write: node_exporter's series become the node's canonical metrics in the
// current-hour analysis, counted by what became of them.
func TestRemoteWriteIngests(t *testing.T) {
	j, _ := newJudge(t, nil)
	h := j.Handler()
	// 10 s later: 7 of 10 s busy; its rates go out as the third scrape begins.
	for i, s := range [][2]float64{{100, 100}, {103, 107}, {104, 108}} {
		r := do(t, h, "POST", "/api/v1/write", "", bytes.NewReader(cpuScrape("wave-9", t0.Add(time.Duration(i)*10*time.Second), s[0], s[1])))
		require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	}
	n, ok := j.Incremental().Node("wave-9")
	require.True(t, ok, "the judge does not know wave-9")
	last := map[string]float64{}
	for _, s := range n.Series {
		last[s.Name] = s.Last
	}
	require.InDelta(t, 70, last["cpu.util"], 1e-9)
	require.InDelta(t, 25, last["mem.used_pct"], 1e-9)
	require.InDelta(t, 1, last["cpu.cores"], 1e-9)
	m := string(do(t, h, "GET", "/metrics", "", nil).body)
	require.Contains(t, m, `binlake_judge_remote_write_samples_total{result="mapped"} 12`)
	require.Contains(t, m, `binlake_judge_remote_write_samples_total{result="dropped"} 3`)
	// Each scrape's gauges, and the first two scrapes whole (cores and rates).
	require.Contains(t, m, `binlake_judge_batches_total{source="remote_write"} 5`)
}

func TestRemoteWriteAnswers(t *testing.T) {
	tok := "s3cret"
	j, _ := newJudge(t, func(o *Options) { o.Token = config.Secret(tok) })
	h := j.Handler()
	metadataOnly := snappy.Encode(nil, []byte{0x1a, 0x02, 0x12, 0x00}) // one MetricMetadata
	for _, c := range []struct {
		name, token string
		body        []byte
		status      int
		msg         string
	}{
		{"no token", "", cpuScrape("h", t0, 1, 1), 401, "missing or wrong bearer token"},
		{"metadata only", tok, metadataOnly, 204, ""},
		{"not snappy", tok, []byte("\xff\xff\xff\xff\xff\xff"), 400, "not snappy-compressed"},
		{"not a WriteRequest", tok, snappy.Encode(nil, []byte{0x08, 0x01}), 400, "field 1 has wire type 0"},
		{"too large", tok, bytes.Repeat([]byte{0}, MaxRemoteWriteBytes+1), 413, "request body larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, h, "POST", "/api/v1/write", c.token, bytes.NewReader(c.body))
			require.Equal(t, c.status, r.status, string(r.body))
			require.True(t, strings.Contains(string(r.body), c.msg), "%s: %s", c.msg, r.body)
		})
	}
}

// TestRemoteWriteRefusedBatchIs400: a request holding a node's samples the judge refuses
// (dated 11 minutes ahead of its clock: a Prometheus host whose clock runs ahead) stores
// the other nodes' and answers 400 naming the refused node, and the judge warns; it
// answered 204 and logged at debug, so such a Prometheus fed nothing and saw no failure
// (an outside trial).
func TestRemoteWriteRefusedBatchIs400(t *testing.T) {
	var logs testenv.SyncBuffer
	j, _ := newJudge(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	h := j.Handler()
	body := remotewrite.Encode(append(cpuSeries("good", t0, 1, 1), cpuSeries("ahead", t0.Add(11*time.Minute), 1, 1)...))
	r := do(t, h, "POST", "/api/v1/write", "", bytes.NewReader(body))
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	require.Contains(t, string(r.body), `remote write: stored 2 batches and refused 1: node \"ahead\": ts `)
	require.Contains(t, string(r.body), "ahead of the judge's clock")
	_, ok := j.Incremental().Node("good")
	require.True(t, ok, "the good node's batch was not stored")
	_, ok = j.Incremental().Node("ahead")
	require.False(t, ok, "the refused node's batch was taken")
	require.Contains(t, string(do(t, h, "GET", "/metrics", "", nil).body), `binlake_judge_decode_errors_total{source="remote_write"} 1`)
	require.Contains(t, logs.String(), `level=WARN msg="skipping a metric batch that cannot be decoded or validated`)
	require.Contains(t, logs.String(), "source=remote_write")
}

// TestRemoteWriteSlots: at most remoteWriteSlots requests are read at once (one at the
// limits took 500 MB: an outside trial sent three); one that finds no slot free within
// its wait is answered 503, which Prometheus retries, and is read once one is.
func TestRemoteWriteSlots(t *testing.T) {
	j, _ := newJudge(t, nil)
	h := j.Handler()
	j.rwWait = 50 * time.Millisecond
	for range remoteWriteSlots {
		j.rwSlots <- struct{}{} // requests being read
	}
	r := do(t, h, "POST", "/api/v1/write", "", bytes.NewReader(cpuScrape("h", t0, 1, 1)))
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	require.Contains(t, string(r.body), "2 requests are being read; send again later")
	require.NotEmpty(t, r.header.Get("Retry-After"))
	<-j.rwSlots
	r = do(t, h, "POST", "/api/v1/write", "", bytes.NewReader(cpuScrape("h", t0, 1, 1)))
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
}

// A full store buffer answers 503, which Prometheus retries; nothing is dropped.
func TestRemoteWriteBackPressure(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{Capacity: 1, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	r := do(t, j.Handler(), "POST", "/api/v1/write", "", bytes.NewReader(cpuScrape("h", t0, 1, 1)))
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	require.Zero(t, j.StoreCounters().Dropped)
}

// TestRemoteWriteRefusesOtherMessages: a remote write 2.0 request (its message named in
// the Content-Type) or one encoded otherwise than snappy is answered 415, as the 2.0
// spec has a receiver that does not take it answer, so that the sender falls back to
// 1.0; it was answered 204 and its samples dropped unseen. 1.0 named explicitly, or with
// no Content-Type, is taken.
func TestRemoteWriteRefusesOtherMessages(t *testing.T) {
	j, _ := newJudge(t, nil)
	h := j.Handler()
	post := func(node, contentType, encoding string) response {
		req := httptest.NewRequest("POST", "/api/v1/write", bytes.NewReader(cpuScrape(node, t0, 1, 1)))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return response{rec.Code, rec.Header(), rec.Body.Bytes()}
	}
	for _, c := range []struct {
		node, contentType, encoding string
		status                      int
		msg                         string
	}{
		{"v2", "application/x-protobuf;proto=io.prometheus.write.v2.Request", "snappy", 415, `proto "io.prometheus.write.v2.Request": this receiver takes remote write 1.0 (prometheus.WriteRequest) only`},
		{"zstd", "application/x-protobuf", "zstd", 415, `Content-Encoding "zstd": this receiver takes snappy only`},
		{"json", "application/json", "snappy", 415, "this receiver takes application/x-protobuf"},
		{"v1-named", "application/x-protobuf; proto=prometheus.WriteRequest", "snappy", 204, ""},
		{"v1-plain", "application/x-protobuf", "snappy", 204, ""},
		{"no-headers", "", "", 204, ""},
	} {
		r := post(c.node, c.contentType, c.encoding)
		require.Equal(t, c.status, r.status, "%s: %s", c.node, r.body)
		if c.status != 204 {
			code, msg := errorOf(t, r)
			require.Equal(t, "unsupported_media_type", code)
			require.Contains(t, msg, c.msg)
		}
	}
	require.ElementsMatch(t, []string{"v1-named", "v1-plain", "no-headers"}, j.Incremental().NodeIDs(), "the refused requests left nothing")
}

// The routes that take no query parameter refuse one, as POST /v1/placement refuses an
// unknown one: GET /v1/nodes?node=x answered every node.
func TestRoutesWithoutParametersRefuseThem(t *testing.T) {
	j, _ := newJudge(t, nil)
	h := j.Handler()
	for _, path := range []string{"/v1/nodes?node=x", "/v1/nodes/x?foo", "/v1/rebalance?dry=1", "/v1/metric-names?x=1", "/v1/plugins?a=b"} {
		r := do(t, h, "GET", path, "", nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", path, r.body)
		_, msg := errorOf(t, r)
		require.Contains(t, msg, "this endpoint takes none", path)
	}
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/v1/nodes", "", nil).status)
}
