package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var quiet = slog.New(slog.DiscardHandler)

var t0 = time.Date(2026, 11, 29, 14, 10, 0, 0, time.UTC)

func openStore(t *testing.T) *sqlite.Store { return openStoreB(t) }

func openStoreB(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func newJudge(t *testing.T, mod func(*Options)) (*Judge, *clock) {
	t.Helper()
	c := &clock{t: t0}
	o := Options{
		Store: openStore(t), Now: c.Now, Algorithm: "leastload", Logger: quiet,
		Filters: lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90}},
		Plugins: map[string]lbplugins.Settings{"random": {Seed: 1}, "p2c": {Seed: 1}},
	}
	if mod != nil {
		mod(&o)
	}
	j, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, j.Close()) })
	return j, c
}

func encode(t testing.TB, b metric.Batch) []byte {
	t.Helper()
	data, err := metric.Encode(b)
	require.NoError(t, err)
	return data
}

func load(node string, ts time.Time, cpu, mem float64) metric.Batch {
	return metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{
		{Name: "cpu.util", Value: cpu}, {Name: "mem.used_pct", Value: mem},
		{Name: "wave.tps", Value: 10, Labels: map[string]string{"instance": "orders"}},
	}}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, h http.Handler, method, path, token string, body io.Reader) response {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func errorOf(t *testing.T, r response) (code, msg string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "error body %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	return e.Error.Code, e.Error.Message
}

func TestPlacementOverHTTP(t *testing.T) {
	j, c := newJudge(t, nil)
	h := j.Handler()
	for _, b := range []metric.Batch{load("wave-1", t0, 70, 60), load("wave-2", t0, 20, 30), load("wave-3", t0, 95, 10)} {
		r := do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b)))
		require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	}
	c.Add(2 * time.Second)
	r := do(t, h, "POST", "/v1/placement", "", strings.NewReader(`{"instance":"orders","exclude":["wave-9"]}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &raw))
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"algorithm", "candidates", "data_as_of", "filtered", "node", "reservation", "scores"}, keys,
		"the compact answer (judge/api/openapi.json)")

	var resp struct {
		Node, Algorithm string
		Candidates      int
		Scores          []struct {
			Node  string
			Score float64
			Parts map[string]float64
		}
		Filtered    map[string]int
		DataAsOf    time.Time `json:"data_as_of"`
		Reservation api.Reservation
	}
	require.NoError(t, json.Unmarshal(r.body, &resp))
	require.Equal(t, "wave-2", resp.Node)
	require.Equal(t, "leastload", resp.Algorithm)
	require.Equal(t, 2, resp.Candidates)
	require.Equal(t, map[string]int{"over_threshold": 1}, resp.Filtered)
	require.Len(t, resp.Scores, 2)
	require.Equal(t, "wave-2", resp.Scores[0].Node)
	require.Contains(t, resp.Scores[0].Parts, "cpu")
	require.Equal(t, t0, resp.DataAsOf)
	// The reservation holds the fleet's typical instance (the median of the three waves'
	// orders, 10 rows/s each), in no cores: no wave reports its CPU to price it.
	require.Equal(t, api.Reservation{Instance: "orders", Node: "wave-2", At: c.Now(), ExpiresAt: c.Now().Add(DefaultReservationTTL),
		Expected: api.Work{RowsPerS: 10}}, resp.Reservation)

	// explain=all lists every filtered node with its reason.
	r = do(t, h, "POST", "/v1/placement?explain=all", "", strings.NewReader(`{"instance":"orders","dry_run":true}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var all struct {
		FilteredNodes []lbplugins.Filtered `json:"filtered_nodes"`
		Reservation   *api.Reservation
	}
	require.NoError(t, json.Unmarshal(r.body, &all))
	require.Equal(t, []lbplugins.Filtered{{Node: "wave-3", Reason: "over threshold: cpu.util 95 > 90"}}, all.FilteredNodes)
	require.Nil(t, all.Reservation, "a dry run reserves nothing")

	// The algorithm can be chosen per request.
	r = do(t, h, "POST", "/v1/placement", "", strings.NewReader(`{"instance":"orders","algorithm":"balanced"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"algorithm":"balanced"`)

	// GET /v1/nodes shows the current load, GET /v1/nodes/{id} the series.
	r = do(t, h, "GET", "/v1/nodes", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var nodes struct{ Nodes []nodeSummary }
	require.NoError(t, json.Unmarshal(r.body, &nodes))
	require.Len(t, nodes.Nodes, 3)
	require.Equal(t, 20.0, nodes.Nodes[1].Load["cpu.util"])
	require.True(t, nodes.Nodes[1].Live)

	r = do(t, h, "GET", "/v1/nodes/wave-2", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var d struct {
		Current struct {
			Series []seriesJSON
		}
		Historical any
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.Len(t, d.Current.Series, 3)
	require.Equal(t, "wave.tps", d.Current.Series[2].Name)
	require.Equal(t, map[string]string{"instance": "orders"}, d.Current.Series[2].Labels)
	require.Nil(t, d.Historical, "no historical refresh yet")

	// Stale after 3 intervals: 503 naming the reasons.
	c.Add(time.Minute)
	r = do(t, h, "POST", "/v1/placement", "", strings.NewReader(`{"instance":"orders"}`))
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	code, msg := errorOf(t, r)
	require.Equal(t, "unavailable", code)
	require.Equal(t, "no live node can take the instance: all 3 nodes filtered (wave-1: stale: no batch for 1m2s (limit 3 intervals of 10s); wave-2: stale: no batch for 1m2s (limit 3 intervals of 10s); wave-3: stale: no batch for 1m2s (limit 3 intervals of 10s))", msg)

	// The status page lists the nodes and the last placements.
	r = do(t, h, "GET", "/", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	page := string(r.body)
	for _, want := range []string{"wave-1", "wave-2", "wave-3", "orders", "balanced", "no live node can take the instance", "stale"} {
		require.Contains(t, page, want)
	}
	require.NotContains(t, page, "<script")
	require.NotContains(t, page, "http://", "no external assets")
}

func TestAPIBadInput(t *testing.T) {
	j, _ := newJudge(t, func(o *Options) { o.Token = "s3cret" })
	h := j.Handler()
	j.Ingest(load("wave-1", t0, 10, 10), sourceHTTP)
	const tok = "s3cret"
	big := `{"instance":"` + strings.Repeat("x", MaxPlacementBytes) + `"}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
		code, msg                       string
	}{
		{"malformed JSON", "POST", "/v1/placement", tok, `{"instance":`, 400, "invalid", "malformed placement request: unexpected EOF"},
		{"not an object", "POST", "/v1/placement", tok, `[1,2]`, 400, "invalid", `malformed placement request: a JSON array where an object like {"instance":"orders"} belongs`},
		{"wrong field type", "POST", "/v1/placement", tok, `{"instance":7}`, 400, "invalid", "malformed placement request: field instance: a JSON number where a string belongs"},
		{"negative hint", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"bytes_per_s":-5}}`, 400, "invalid", "expected.bytes_per_s -5: want a number of bytes/s from 0 to 1e+12"},
		{"huge hint", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"rows_per_s":2e12}}`, 400, "invalid", "expected.rows_per_s 2e+12: want a number of rows/s from 0 to 1e+12"},
		{"hint out of range", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"rows_per_s":1e999}}`, 400, "invalid", "malformed placement request: field expected.rows_per_s: number 1e999 is out of range"},
		{"empty hint", "POST", "/v1/placement", tok, `{"instance":"a","expected":{}}`, 400, "invalid", "expected gives neither rows_per_s nor bytes_per_s: give one or both (binlog_bytes_per_s besides), or leave expected out"},
		{"binlog alone", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"binlog_bytes_per_s":5}}`, 400, "invalid", "expected gives neither rows_per_s nor bytes_per_s: give one or both (binlog_bytes_per_s besides), or leave expected out"},
		{"negative binlog hint", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"bytes_per_s":5,"binlog_bytes_per_s":-1}}`, 400, "invalid", "expected.binlog_bytes_per_s -1: want a number of bytes/s from 0 to 1e+12"},
		{"hint as a string", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"rows_per_s":"5"}}`, 400, "invalid", "malformed placement request: field expected.rows_per_s: a JSON string where a number belongs"},
		{"hint as a list", "POST", "/v1/placement", tok, `{"instance":"a","expected":[5]}`, 400, "invalid", "malformed placement request: field expected: a JSON array where an object belongs"},
		{"unknown hint field", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"rows":5}}`, 400, "invalid", `malformed placement request: json: unknown field "rows"`},
		{"empty body", "POST", "/v1/placement", tok, ``, 400, "invalid", `empty body: want a JSON object like {"instance":"orders"}`},
		{"unknown field", "POST", "/v1/placement", tok, `{"instance":"a","node":"x"}`, 400, "invalid", `malformed placement request: json: unknown field "node"`},
		{"trailing data", "POST", "/v1/placement", tok, `{"instance":"a"} {}`, 400, "invalid", "malformed placement request: data after the JSON object"},
		{"an unknown query parameter", "POST", "/v1/placement?tpo=3", tok, `{"instance":"a"}`, 400, "invalid", `unknown query parameter "tpo" (this endpoint takes explain, top)`},
		{"a query parameter given twice", "POST", "/v1/placement?top=3&top=4", tok, `{"instance":"a"}`, 400, "invalid", `query parameter "top" is given 2 times: give it once`},
		{"a field given twice", "POST", "/v1/placement", tok, `{"instance":"a","top":1,"instance":"b"}`, 400, "invalid", "malformed placement request: field instance is given twice"},
		{"a hint field given twice", "POST", "/v1/placement", tok, `{"instance":"a","expected":{"bytes_per_s":1,"bytes_per_s":2}}`, 400, "invalid", "malformed placement request: field expected.bytes_per_s is given twice"},
		{"no instance", "POST", "/v1/placement", tok, `{"exclude":["a"]}`, 400, "invalid", "instance is empty"},
		{"empty exclusion", "POST", "/v1/placement", tok, `{"instance":"a","exclude":[""]}`, 400, "invalid", "exclude[0] is empty"},
		{"a NUL in the instance", "POST", "/v1/placement", tok, `{"instance":"a\u0000"}`, 400, "invalid", "instance: control character U+0000"},
		{"an escape in an exclusion", "POST", "/v1/placement", tok, `{"instance":"a","exclude":["b","\u001b[31m"]}`, 400, "invalid", "exclude[1]: control character U+001B"},
		{"a DEL in the algorithm", "POST", "/v1/placement", tok, `{"instance":"a","algorithm":"random\u007f"}`, 400, "invalid", "algorithm: control character U+007F"},
		{"invalid UTF-8 instance", "POST", "/v1/placement", tok, "{\"instance\":\"a\xff\"}", 400, "invalid", "malformed placement request: instance: invalid UTF-8"},
		{"invalid UTF-8 exclusion", "POST", "/v1/placement", tok, "{\"instance\":\"a\",\"exclude\":[\"b\",\"\xc3(\"]}", 400, "invalid", "malformed placement request: exclude[1]: invalid UTF-8"},
		{"oversized body", "POST", "/v1/placement", tok, big, 413, "too_large", "request body larger than 1048576 bytes"},
		{"unknown algorithm", "POST", "/v1/placement", tok, `{"instance":"a","algorithm":"roundrobin"}`, 400, "invalid", `unknown algorithm "roundrobin" (known: balanced, leastload, p2c, predictive, random, utilisation)`},
		{"missing token", "POST", "/v1/placement", "", `{"instance":"a"}`, 401, "unauthorized", "missing or wrong bearer token"},
		{"wrong token", "POST", "/v1/placement", "s3creT", `{"instance":"a"}`, 401, "unauthorized", "missing or wrong bearer token"},
		{"wrong token on metrics", "POST", "/v1/metrics", "nope", `{}`, 401, "unauthorized", "missing or wrong bearer token"},
		{"bad batch", "POST", "/v1/metrics", tok, `{"node":"x"`, 400, "invalid", ""},
		{"oversized batch", "POST", "/v1/metrics", tok, strings.Repeat(" ", MaxMetricsBytes+1), 413, "too_large", "request body larger than 1048576 bytes"},
		{"unknown node", "GET", "/v1/nodes/wave-9", "", ``, 404, "not_found", `unknown node "wave-9"`},
		{"unknown path", "GET", "/v2/things", "", ``, 404, "not_found", "no such endpoint: /v2/things"},
		{"wrong method", "GET", "/v1/placement", "", ``, 405, "method_not_allowed", "GET is not allowed on /v1/placement (it takes POST)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, tc.method, tc.path, tc.token, strings.NewReader(tc.body))
			require.Equal(t, tc.status, r.status, string(r.body))
			code, msg := errorOf(t, r)
			require.Equal(t, tc.code, code)
			if tc.msg != "" {
				require.Equal(t, tc.msg, msg)
			} else {
				require.NotEmpty(t, msg)
			}
			if tc.status == 401 {
				require.Equal(t, `Bearer realm="binlake-judge"`, r.header.Get("WWW-Authenticate"))
			}
		})
	}
	// Reads need no token; the right token is accepted.
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/v1/nodes", "", nil).status)
	require.Equal(t, http.StatusOK, do(t, h, "POST", "/v1/placement", tok, strings.NewReader(`{"instance":"a"}`)).status)

	// Undecodable batches were counted, and so were the refused placements.
	r := do(t, h, "GET", "/metrics", "", nil)
	require.Contains(t, string(r.body), `binlake_judge_decode_errors_total{source="http"} 2`)
	refused := 0
	for _, tc := range cases {
		if tc.method == "POST" && strings.HasPrefix(tc.path, "/v1/placement") && (tc.status == http.StatusBadRequest || tc.status == http.StatusRequestEntityTooLarge) {
			refused++
		}
	}
	require.Contains(t, string(r.body), fmt.Sprintf(`binlake_judge_placements_total{algorithm="unknown",result="invalid"} %d`, refused))
}

func TestPluginsAndHealth(t *testing.T) {
	j, _ := newJudge(t, nil)
	r := do(t, j.Handler(), "GET", "/v1/plugins", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var out struct {
		Default string
		Plugins []pluginInfo
	}
	require.NoError(t, json.Unmarshal(r.body, &out))
	require.Equal(t, "leastload", out.Default)
	var names []string
	for _, p := range out.Plugins {
		names = append(names, p.Name)
		require.NotEmpty(t, p.Description)
		require.Equal(t, p.Name == "leastload", p.Default)
	}
	require.Equal(t, []string{"balanced", "leastload", "p2c", "predictive", "random", "utilisation"}, names)

	r = do(t, j.Handler(), "GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), `"status":"ok"`)
	r = do(t, j.Handler(), "HEAD", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status, "a load balancer's probe")
}

func TestNewRejects(t *testing.T) {
	st := openStore(t)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no store", Options{}, "judge: no store"},
		{"unknown default", Options{Store: st, Algorithm: "x"}, `judge: default algorithm: unknown algorithm "x" (known: balanced, leastload, p2c, predictive, random, utilisation)`},
		{"settings for unknown plugin", Options{Store: st, Plugins: map[string]lbplugins.Settings{"y": {}}}, `judge: plugins: unknown algorithm "y" (known: balanced, leastload, p2c, predictive, random, utilisation)`},
		{"bad weights", Options{Store: st, Plugins: map[string]lbplugins.Settings{"leastload": {Weights: map[string]float64{"gpu": 1}}}}, `judge: plugin leastload: unknown weight "gpu" (known: cpu, instances, load, memory, network, tps)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			require.EqualError(t, err, tc.want)
		})
	}
}

// Every route the router serves is in the committed OpenAPI document and vice versa.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	j, _ := newJudge(t, nil)
	served, documented, err := httpapi.RouteDiff(j.Handler(), api.OpenAPI)
	require.NoError(t, err)
	require.Equal(t, documented, served)

	r := do(t, j.Handler(), "GET", "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, api.OpenAPI, r.body)
}

// failingStore wraps a real store and fails everything while down is set, as an engine
// outage would.
type failingStore struct {
	store.Store
	mu   sync.Mutex
	down bool
}

var errEngineDown = errors.New("engine down")

func (f *failingStore) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errEngineDown
	}
	return nil
}
func (f *failingStore) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }
func (f *failingStore) Write(ctx context.Context, p []store.Point) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Store.Write(ctx, p)
}
func (f *failingStore) Stats(ctx context.Context, q store.Query) (store.Stats, error) {
	if err := f.err(); err != nil {
		return store.Stats{}, err
	}
	return f.Store.Stats(ctx, q)
}
func (f *failingStore) Profile(ctx context.Context, q store.Query) (store.HourProfile, error) {
	if err := f.err(); err != nil {
		return store.HourProfile{}, err
	}
	return f.Store.Profile(ctx, q)
}
func (f *failingStore) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.Nodes(ctx, from, to)
}

// readyJudge runs a judge on 127.0.0.1:0 and returns its base URL.
func readyJudge(t *testing.T, o Options) (string, *Judge) { return readyJudgeB(t, o) }

func readyJudgeB(t testing.TB, o Options) (string, *Judge) {
	t.Helper()
	base, j, stop := startJudge(t, o)
	t.Cleanup(stop)
	return base, j
}

// startJudge runs a judge on 127.0.0.1:0 as its process would, until stop (which waits
// for Run to return, the judge closed) or the test's end, and returns its base URL once
// it has restored its state: the tests ask the judge through its Go API too, which does
// not wait for the restore.
func startJudge(t testing.TB, o Options) (base string, j *Judge, stop func()) {
	t.Helper()
	base, j, stop = launchJudge(t, o, 10*time.Second)
	if ch := j.Restoring(); ch != nil {
		<-ch
	}
	return base, j, stop
}

// launchJudge runs a judge on 127.0.0.1:0 as startJudge does and returns as soon as its
// API serves, which must be within serve.
func launchJudge(t testing.TB, o Options, serve time.Duration) (base string, j *Judge, stop func()) {
	t.Helper()
	o.Listen = "127.0.0.1:0"
	if o.Logger == nil {
		o.Logger = quiet
	}
	addrc := make(chan string, 1)
	o.Ready = func(a string) { addrc <- a }
	j, err := New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case a := <-addrc:
		return "http://" + a, j, stop
	case err := <-done:
		done <- err // for stop
		t.Fatalf("judge stopped: %v", err)
	case <-time.After(serve):
		t.Fatalf("the judge's API did not serve within %s of its start", serve)
	}
	return "", nil, stop
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The store failing (writes and queries) does not stop placements: they read only the
// in-memory analyses. Failed writes are counted and retried; when the store is back,
// what was buffered meanwhile is written, and nothing is lost.
func TestPlacementWhileStoreFails(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	base, j := readyJudge(t, Options{Store: fs, Algorithm: "leastload", HistoricalEvery: time.Second,
		Buffer: store.BufferOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}})
	start := time.Now()
	for i := range 20 { // distinct times: a point's identity includes its time
		require.NoError(t, j.Ingest(load(fmt.Sprintf("wave-%d", i%4), start.Add(time.Duration(i)*time.Millisecond), float64(10*(i%4)), 40), sourceHTTP))
	}
	require.Eventually(t, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, "binlake_judge_store_write_errors_total") && !strings.Contains(m, "binlake_judge_store_write_errors_total 0\n")
	}, 15*time.Second, 10*time.Millisecond, "failed writes counted")
	require.Eventually(t, func() bool { _, f, _ := j.Historical().Counts(); return f > 0 }, 15*time.Second, 10*time.Millisecond, "a failed historical refresh")
	for range 5 {
		code, body := post(t, base+"/v1/placement", `{"instance":"orders"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"node":"wave-0"`)
	}
	require.Nil(t, j.Historical().Snapshot())
	_, m := get(t, base+"/metrics")
	require.Contains(t, m, "binlake_judge_store_points_buffered 60\n", "20 batches of 3 points wait")
	require.Contains(t, m, "binlake_judge_store_points_written_total 0\n")
	_, h := get(t, base+"/healthz")
	require.Contains(t, h, `"status":"ok"`)
	require.Contains(t, h, `"buffered":60,"dropped":0,"written":0`)

	fs.setDown(false)
	require.NoError(t, j.Ingest(load("wave-0", start.Add(time.Second), 5, 5), sourceHTTP))
	require.Eventually(t, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, "binlake_judge_store_points_written_total 63\n")
	}, 15*time.Second, 10*time.Millisecond, "writes resumed")
	_, m = get(t, base+"/metrics")
	require.Contains(t, m, "binlake_judge_store_points_buffered 0\n")
	require.Contains(t, m, "binlake_judge_store_points_dropped_total 0\n")
	s, err := fs.Stats(context.Background(), store.Query{Node: "wave-0", Name: "cpu.util", From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(6), s.Count, "5 batches of wave-0 during the outage and 1 after")
}

// With http_overflow drop, past its capacity the buffer drops the oldest points and
// counts them, in /metrics, /healthz and on the status page; placements go on.
func TestStoreBufferOverflow(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, _ := newJudge(t, func(o *Options) {
		o.Store = fs
		o.Buffer = store.BufferOptions{Capacity: 10, Overflow: store.OverflowDrop, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	})
	h := j.Handler()
	// One batch of 18 points into room for 10: one buffer write, so exactly the 8
	// oldest go whatever the writer is doing.
	b := metric.Batch{Node: "wave-1", TS: t0, IntervalS: 10}
	for i := range 18 {
		b.Points = append(b.Points, metric.Point{Name: "wave.tps", Value: float64(i), Labels: map[string]string{"instance": fmt.Sprintf("i%02d", i)}})
	}
	r := do(t, h, "POST", "/v1/metrics", "", bytes.NewReader(encode(t, b)))
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	c := j.StoreCounters()
	c.Errors = 0 // how many retries happened so far depends on timing
	require.Equal(t, store.BufferCounters{Buffered: 10, Capacity: 10, Dropped: 8}, c)
	r = do(t, h, "GET", "/metrics", "", nil)
	require.Contains(t, string(r.body), "binlake_judge_store_points_dropped_total 8\n")
	r = do(t, h, "GET", "/healthz", "", nil)
	require.Contains(t, string(r.body), `"store":{"buffered":10,"dropped":8,"written":0,`)
	r = do(t, h, "GET", "/", "", nil)
	require.Contains(t, string(r.body), `10 points buffered · 0 written · <span class="err">8 dropped</span>`)
	// Once the writer has tried the 10 (they are in flight, out of the ring), wave-2's 3
	// points fit beside them. Before that they would push 3 of them out: on a loaded
	// machine the writer may not have run yet.
	require.Eventually(t, func() bool { return j.StoreCounters().Errors > 0 }, 15*time.Second, 10*time.Millisecond, "a first write attempt")
	require.NoError(t, j.Ingest(load("wave-2", t0, 10, 10), sourceHTTP))
	r = do(t, h, "POST", "/v1/placement", "", strings.NewReader(`{"instance":"orders"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	// The store comes back: the newest points are written, the oldest never are.
	fs.setDown(false)
	require.Eventually(t, func() bool { return j.StoreCounters().Written == 13 }, 15*time.Second, 10*time.Millisecond, "the buffer written")
	for i, want := range map[int]int64{0: 0, 7: 0, 8: 1, 17: 1} {
		s, err := fs.Stats(context.Background(), store.Query{Node: "wave-1", Name: "wave.tps",
			Labels: map[string]string{"instance": fmt.Sprintf("i%02d", i)}, From: t0, To: t0.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, want, s.Count, "instance i%02d", i)
	}
}

// Stopping the judge writes what is buffered; afterwards ingest is refused with 503.
func TestRunWritesBufferOnStop(t *testing.T) {
	fs := &failingStore{Store: openStore(t), down: true}
	j, err := New(Options{Store: fs, Logger: quiet, Listen: "127.0.0.1:0",
		Buffer: store.BufferOptions{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, CloseTimeout: time.Minute}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	for i := range 5 {
		require.NoError(t, j.Ingest(load("wave-1", t0.Add(time.Duration(i)*time.Second), 10, 10), sourceHTTP))
	}
	require.Eventually(t, func() bool { return j.StoreCounters().Errors > 0 }, 15*time.Second, 10*time.Millisecond, "a failed write")
	cancel()
	// Run closes the buffer and drains it into a store that still fails; it comes back.
	require.Eventually(t, func() bool { return j.buf.Write(context.Background(), nil) != nil }, 15*time.Second, 10*time.Millisecond, "the buffer closing")
	fs.setDown(false)
	require.NoError(t, <-done)
	c := j.StoreCounters()
	require.Equal(t, int64(15), c.Written)
	require.Zero(t, c.Dropped)
	require.Zero(t, c.Buffered)
	s, err := fs.Stats(context.Background(), store.Query{Node: "wave-1", Name: "mem.used_pct", From: t0, To: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(5), s.Count)

	err = j.Ingest(load("wave-1", t0.Add(time.Minute), 10, 10), sourceHTTP)
	require.ErrorIs(t, err, store.ErrClosed)
	r := do(t, j.Handler(), "POST", "/v1/metrics", "", bytes.NewReader(encode(t, load("wave-1", t0.Add(2*time.Minute), 10, 10))))
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	code, msg := errorOf(t, r)
	require.Equal(t, "unavailable", code)
	require.Equal(t, "the judge is stopping", msg)
	require.NoError(t, j.Close(), "idempotent")
}

// A batch published on the bus is analysed, listed and used for placement; a garbage
// message is counted and skipped without stopping the subscription.
func TestIngestThroughMemoryBus(t *testing.T) {
	b, sub := memoryMetricsBus(t, 2)
	ctx := context.Background()
	st := openStore(t)
	base, _ := readyJudge(t, Options{Store: st, Subscriber: sub, Algorithm: "leastload"})

	pub, err := b.Publisher()
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, pub.Publish(ctx,
		bus.Message{Topic: metric.Topic, Key: []byte("junk"), Value: []byte("not json")},
		bus.Message{Topic: metric.Topic, Key: []byte("wave-1"), Value: encode(t, load("wave-1", now, 80, 50))},
		bus.Message{Topic: metric.Topic, Key: []byte("wave-2"), Value: encode(t, load("wave-2", now, 15, 20))},
	))
	require.Eventually(t, func() bool {
		_, body := get(t, base+"/v1/nodes")
		return strings.Contains(body, `"node":"wave-1"`) && strings.Contains(body, `"node":"wave-2"`)
	}, 15*time.Second, 10*time.Millisecond, "both nodes listed")
	code, body := post(t, base+"/v1/placement", `{"instance":"orders"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"node":"wave-2"`)

	_, m := get(t, base+"/metrics")
	require.Contains(t, m, `binlake_judge_decode_errors_total{source="bus"} 1`)
	require.Contains(t, m, `binlake_judge_batches_total{source="bus"} 2`)
	require.Contains(t, m, "go_goroutines")
	require.Contains(t, m, "binlake_judge_placement_seconds_bucket")

	// The points reached the store.
	require.Eventually(t, func() bool {
		s, err := st.Stats(ctx, store.Query{Node: "wave-2", Name: "cpu.util", From: now.Add(-time.Minute), To: now.Add(time.Minute)})
		return err == nil && s.Count == 1 && s.Avg == 15
	}, 15*time.Second, 10*time.Millisecond, "points stored")
}

// With a relay (binlake up), a posted batch goes onto the metric topic and the judge
// takes it from there, as every other consumer of the topic does (another group reads
// it too); a bad batch is still a 400 and reaches nobody.
func TestPostedBatchesRelayedToTheBus(t *testing.T) {
	b, err := memory.New(memory.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	require.NoError(t, b.CreateTopic(ctx, bus.TopicSpec{Name: metric.Topic, Partitions: 1}))
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "judge-test", StartAt: bus.StartFirst})
	require.NoError(t, err)
	other, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "alarm-test", StartAt: bus.StartFirst})
	require.NoError(t, err)
	pub, err := b.Publisher()
	require.NoError(t, err)
	base, _ := readyJudge(t, Options{Store: openStore(t), Subscriber: sub, Relay: pub, Algorithm: "leastload"})

	now := time.Now().UTC().Truncate(time.Millisecond)
	code, body := post(t, base+"/v1/metrics", `{"node":"remote","ts":"`+now.Format(time.RFC3339Nano)+`","interval_s":10,"points":[{"name":"cpu.cores","value":-4}]}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = post(t, base+"/v1/metrics", string(encode(t, load("remote", now, 30, 40))))
	require.Equal(t, http.StatusAccepted, code, body)

	seen := make(chan string, 4)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go other.Subscribe(sctx, func(_ context.Context, m bus.Message) error { seen <- string(m.Key); return nil })
	select {
	case k := <-seen:
		require.Equal(t, "remote", k, "the other group got the posted batch, keyed by its node")
	case <-time.After(10 * time.Second):
		t.Fatal("the other group got nothing")
	}
	select {
	case k := <-seen:
		t.Fatalf("a second message %q: the bad batch reached the bus", k)
	case <-time.After(200 * time.Millisecond):
	}
	require.Eventually(t, func() bool {
		_, body := get(t, base+"/v1/nodes")
		return strings.Contains(body, `"node":"remote"`)
	}, 15*time.Second, 10*time.Millisecond, "the judge took it from the bus")
	_, m := get(t, base+"/metrics")
	require.Contains(t, m, `binlake_judge_batches_total{source="bus"} 1`)
}

func FuzzDecodePlacementRequest(f *testing.F) {
	for _, s := range []string{
		`{"instance":"orders","exclude":["wave-2"],"algorithm":"leastload"}`,
		`{"instance":"orders"}`, `{"instance":"orders","exclude":[`, `{"instance":""}`, `null`, `[]`,
		`{"instance":"a"} x`, `{"instance":"\ud800"}`, ``, `{"instance":"a\u0000"}`, "{\"instance\":\"a\xff\"}",
		`{"instance":"orders","expected":{"bytes_per_s":52341.5}}`, `{"instance":"orders","expected":{"rows_per_s":-1}}`,
		`{"instance":"orders","expected":{}}`, `{"instance":"orders","expected":{"rows_per_s":1e400,"bytes_per_s":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodePlacementRequest(bytes.NewReader(data))
		if err != nil {
			var ae *httpapi.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Msg == "" {
				t.Fatalf("error %v is not a 400 with a message", err)
			}
			return
		}
		if checkIdent("instance", req.Instance) != nil || len(req.Exclude) > maxExclude {
			t.Fatalf("accepted an invalid request %+v", req)
		}
		for _, e := range req.Exclude {
			if checkIdent("exclude", e) != nil {
				t.Fatalf("accepted the exclusion %q in %q", e, data)
			}
		}
		if !utf8.Valid(data) { // only within a string: encoding/json took it as U+FFFD
			t.Fatalf("accepted invalid UTF-8 in %q", data)
		}
		if h := req.Expected; h != nil {
			if h.RowsPerS == nil && h.BytesPerS == nil {
				t.Fatalf("accepted an empty hint in %q", data)
			}
			for _, v := range []*float64{h.RowsPerS, h.BytesPerS} {
				if v != nil && !(*v >= 0 && *v <= maxRate) {
					t.Fatalf("accepted the rate %v in %q", *v, data)
				}
			}
		}
	})
}

// TestStatusPageLoadColumns: the status page's load columns show each node's reported
// values under the canonical metric names (cpu, memory, load, network, TPS, instances);
// wave.tps here is per instance only, so the node-level column is empty.
func TestStatusPageLoadColumns(t *testing.T) {
	j, c := newJudge(t, nil)
	b := load("wave-1", c.Now(), 37.5, 61.5)
	b.Points = append(b.Points, metric.Point{Name: metric.Load1, Value: 2.5}, metric.Point{Name: metric.NetRxBps, Value: 1500},
		metric.Point{Name: metric.NetTxBps, Value: 2500}, metric.Point{Name: metric.WaveInstances, Value: 4})
	require.NoError(t, j.Ingest(b, "test"))
	r := do(t, j.Handler(), "GET", "/", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), "<td>37.5</td><td>61.5</td><td>2.5</td><td>1500.0</td><td>2500.0</td><td>–</td><td>4</td>")
}

// Batches from the bus that cannot be decoded are warned of (nobody else learns of them):
// once a minute while they keep coming, naming the error; posted ones answer 400 and
// stay at debug.
func TestUndecodableBusBatchesAreWarnedOf(t *testing.T) {
	var logs testenv.SyncBuffer
	b, sub := memoryMetricsBus(t, 1)
	ctx := context.Background()
	base, _ := readyJudge(t, Options{Store: openStore(t), Subscriber: sub, Algorithm: "leastload",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	pub, err := b.Publisher()
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, pub.Publish(ctx, bus.Message{Topic: metric.Topic, Key: []byte("x"), Value: []byte(`{"node":"wave-1","ts":"soon"}`)}))
	}
	code, _ := post(t, base+"/v1/metrics", "not json")
	require.Equal(t, http.StatusBadRequest, code)
	require.Eventually(t, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, `binlake_judge_decode_errors_total{source="bus"} 3`)
	}, 10*time.Second, 10*time.Millisecond)
	warned := strings.Count(logs.String(), "level=WARN msg=\"skipping a metric batch that cannot be decoded or validated")
	require.Equal(t, 1, warned, "one warning for three batches within a minute:\n%s", logs.String())
	require.Contains(t, logs.String(), `is not an RFC 3339 timestamp`, "the warning names what was wrong")
}

// memoryMetricsBus is an in-process bus with the metrics topic in partitions, and a
// subscription to it from its first message, as a judge's.
func memoryMetricsBus(t *testing.T, partitions int) (*memory.Bus, bus.Subscriber) {
	t.Helper()
	b, err := memory.New(memory.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.CreateTopic(context.Background(), bus.TopicSpec{Name: metric.Topic, Partitions: partitions}))
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "judge-test", StartAt: bus.StartFirst})
	require.NoError(t, err)
	return b, sub
}
