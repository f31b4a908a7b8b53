package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/loadmodel"
)

// skewed is a cluster whose agents have reported: wave-3 runs f (500 rows/s), wave-1
// runs a (3000) and b (1000), and wave-2, which reports its wave but runs nothing,
// reported last. Returns the judge and when wave-1 reported.
func skewed(t *testing.T) (*Judge, *clock, time.Time) {
	t.Helper()
	j, c := newJudge(t, nil)
	require.NoError(t, j.Ingest(waveBatch("wave-3", c.Now(), 1, map[string]float64{"f": 500}), sourceHTTP))
	c.Add(10 * time.Second)
	w1 := c.Now()
	require.NoError(t, j.Ingest(waveBatch("wave-1", c.Now(), 4, map[string]float64{"a": 3000, "b": 1000}), sourceHTTP))
	c.Add(10 * time.Second)
	require.NoError(t, j.Ingest(waveBatch("wave-2", c.Now(), 0.1, nil), sourceHTTP))
	return j, c, w1
}

func postRebalance(t *testing.T, j *Judge, token, body string) (response, api.RebalanceAnswer) {
	t.Helper()
	r := do(t, j.Handler(), "POST", "/v1/rebalance", token, strings.NewReader(body))
	var ans api.RebalanceAnswer
	if r.status == http.StatusOK {
		require.NoError(t, json.Unmarshal(r.body, &ans), string(r.body))
	}
	return r, ans
}

// TestRebalancePost: the judge costs the request's instances from what their nodes
// report (the floor alone for one no node reports) and plans: the dead wave's instance
// first, then the move that narrows the spread within the band, each with its reason
// and the predicted loads.
func TestRebalancePost(t *testing.T) {
	j, c, w1 := skewed(t)
	body := `{"waves":[{"node":"wave-1","alive":true},{"node":"wave-2","alive":true},{"node":"wave-3","alive":false}],
		"instances":[{"id":"a","node":"wave-1"},{"id":"b","node":"wave-1"},{"id":"c","node":"wave-2"},{"id":"f","node":"wave-3"}]}`
	r, ans := postRebalance(t, j, "", body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	// Costs (floor 100): a 3100, b 1100, c 100 (unmeasured), f 600. Live loads: wave-1
	// 4200, wave-2 100. f fails over to wave-2 (700); the gap 3500 is best narrowed by
	// b (to |3500-2·1100| = 1300, within the band 2000; a would leave 2700).
	require.Equal(t, []api.Move{
		{Instance: "f", From: "wave-3", To: "wave-2", Cost: 600, Reason: api.ReasonFailover, ToLoad: [2]float64{100, 700}},
		{Instance: "b", From: "wave-1", To: "wave-2", Cost: 1100, Reason: api.ReasonSpread, FromLoad: [2]float64{4200, 3100}, ToLoad: [2]float64{700, 1800}},
	}, ans.Moves)
	require.Equal(t, map[string]float64{"wave-1": 4200, "wave-2": 100}, ans.Before)
	require.Equal(t, map[string]float64{"wave-1": 3100, "wave-2": 1800}, ans.After)
	require.Equal(t, 4100.0, ans.SpreadBefore)
	require.Equal(t, 1300.0, ans.SpreadAfter)
	require.True(t, ans.Balanced)
	require.Empty(t, ans.Unmet)
	require.Equal(t, api.RebalanceGoals{MaxUtilisation: 0.7, UtilisationBand: 0.03, UtilisationBalance: 1.08, HardMax: 0, Band: 2000, MaxMoves: 20, CooldownS: 600}, ans.Goals)
	require.Equal(t, api.ModelRows, ans.Model, "no wave reports cpu.cores")
	require.Contains(t, ans.ModelNote, "no cpu.cores from wave-1, wave-2")
	require.Equal(t, []api.InstanceCost{
		{Instance: "a", Node: "wave-1", RowsPerS: 3000, BytesPerS: 600_000, CPUShare: 3, Cost: 3100, Measured: true},
		{Instance: "b", Node: "wave-1", RowsPerS: 1000, BytesPerS: 200_000, CPUShare: 1, Cost: 1100, Measured: true},
		{Instance: "c", Cost: 100},
		{Instance: "f", Node: "wave-3", RowsPerS: 500, BytesPerS: 100_000, CPUShare: 1, Cost: 600, Measured: true},
	}, ans.Costs)
	require.Equal(t, w1, ans.DataAsOf, "the newest batch of the nodes the costs came from (wave-2's, later, gave none)")
	require.Contains(t, string(r.body), `{"instance":"c","rows_per_s":0,"bytes_per_s":0,"cpu_cores":0,"cores_now":0,"cores_peak":0,"cost":100,"measured":false}`)

	// The same cluster with a pinned and b moved a minute ago (within the 10 m cooldown):
	// only the failover can be made, and the answer says why the spread stays.
	body = fmt.Sprintf(`{"waves":[{"node":"wave-1","alive":true},{"node":"wave-2","alive":true},{"node":"wave-3","alive":false}],
		"instances":[{"id":"a","node":"wave-1","pinned":true},{"id":"b","node":"wave-1","moved_at":%q},{"id":"c","node":"wave-2"},{"id":"f","node":"wave-3"}]}`,
		c.Now().Add(-time.Minute).Format(time.RFC3339Nano))
	r, ans = postRebalance(t, j, "", body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Len(t, ans.Moves, 1)
	require.Equal(t, api.ReasonFailover, ans.Moves[0].Reason)
	require.False(t, ans.Balanced)
	require.Contains(t, ans.Unmet, "spread")
	require.Contains(t, ans.Unmet, "wave-1")

	// An instance assigned to no wave yet (an add the balancer has not placed) is placed
	// like a dead wave's: on the least loaded live wave.
	r, ans = postRebalance(t, j, "", `{"waves":[{"node":"wave-1","alive":true},{"node":"wave-2","alive":true}],
		"instances":[{"id":"a","node":"wave-1"},{"id":"new"}]}`)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, []api.Move{{Instance: "new", To: "wave-2", Cost: 100, Reason: api.ReasonFailover, ToLoad: [2]float64{0, 100}}}, ans.Moves)

	// No instance, no wave: an empty plan, as of now, with lists and not nulls.
	r, ans = postRebalance(t, j, "", `{"waves":[],"instances":[]}`)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "no live wave", ans.Unmet)
	require.Equal(t, c.Now(), ans.DataAsOf)
	for _, want := range []string{`"moves":[]`, `"costs":[]`, `"before":{}`} {
		require.Contains(t, string(r.body), want)
	}

	m := do(t, j.Handler(), "GET", "/metrics", "", nil)
	require.Contains(t, string(m.body), `binlake_judge_rebalance_plans_total{source="post"} 4`)
	require.Contains(t, string(m.body), `binlake_judge_rebalance_plans_total{source="get"} 0`)
}

// TestRebalanceAnswersAFitThatCannotSay: a wave whose CPU fell as its work rose fits
// prices at which its work costs nothing, so its own fit's error is infinite. JSON has no
// infinity: the plan and the node's detail still answer, showing work_err -1 (before,
// both answered 500 "encode response" and the wave's balancer fell back to instance
// counts).
func TestRebalanceAnswersAFitThatCannotSay(t *testing.T) {
	j, c := newJudge(t, nil)
	for i := range 60 {
		rows := 1000 + float64(i%10)*300
		for _, b := range []metric.Batch{
			waveBatch("wave-1", c.Now(), 1-rows/20000, map[string]float64{"a": rows}),
			waveBatch("wave-2", c.Now(), 0.2+float64(i%3)*0.01, map[string]float64{"b": 500}),
		} {
			b.Points = append(b.Points, metric.Point{Name: metric.CPUCores, Value: 4})
			require.NoError(t, j.Ingest(b, sourceHTTP))
		}
		c.Add(10 * time.Second)
	}
	r, ans := postRebalance(t, j, "", `{"waves":[{"node":"wave-1","alive":true},{"node":"wave-2","alive":true}],
		"instances":[{"id":"a","node":"wave-1"},{"id":"b","node":"wave-2"}]}`)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Len(t, ans.Waves, 2)
	require.Equal(t, "wave-1", ans.Waves[0].Node)
	require.Equal(t, -1.0, ans.Waves[0].Prices.WorkErr, "wave-1's prices: %+v", ans.Waves[0].Prices)
	// wave-2 reports its CPU, but its work never varied and wave-1's fit lends no pool.
	require.Equal(t, api.ModelRows, ans.Model)
	require.Contains(t, ans.ModelNote, "no prices for wave-2: it needs wave.cpu_cores, and its own work or another wave's varying")
	require.Contains(t, ans.ModelNote, "("+loadmodel.UnpricedNoPool+")", "what failed: the pool, not the CPU's reports")
	require.Equal(t, loadmodel.UnpricedNoPool, ans.Waves[1].Prices.Unpriced)
	require.NotContains(t, ans.ModelNote, loadmodel.UnpricedNoCPU)

	d := do(t, j.Handler(), "GET", "/v1/nodes/wave-1", "", nil)
	require.Equal(t, http.StatusOK, d.status, string(d.body))
	require.Contains(t, string(d.body), `"work_err":-1`)
}

// TestRebalanceCostLookup: an instance's cost comes from the node the request names;
// when that node does not report it, from a node that runs it; else from any node that
// reports it; else the floor alone.
func TestRebalanceCostLookup(t *testing.T) {
	j, c := newJudge(t, nil)
	// m moved from wave-1 to wave-2 this hour: both report it, wave-1 as stopped.
	require.NoError(t, j.Ingest(waveBatch("wave-1", c.Now(), 1, map[string]float64{"x": 10}, "m", "s"), sourceHTTP))
	require.NoError(t, j.Ingest(waveBatch("wave-2", c.Now(), 1, map[string]float64{"m": 20}), sourceHTTP))
	for _, tc := range []struct {
		name, node string
		id         string
		from       string
		rows       float64
	}{
		{"named node reports it", "wave-1", "m", "wave-1", 0},
		{"named node reports it, other node", "wave-2", "m", "wave-2", 20},
		{"named node silent: the node that runs it", "wave-9", "m", "wave-2", 20},
		{"named node silent, nobody runs it: any that reports it", "wave-2", "s", "wave-1", 0},
		{"nobody reports it: the floor", "wave-1", "new", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans := j.PlanRebalance(api.RebalanceRequest{
				Waves:     []api.RebalanceWave{{Node: "wave-1", Alive: true}, {Node: "wave-2", Alive: true}},
				Instances: []api.RebalanceInstance{{ID: tc.id, Node: tc.node}}})
			require.Len(t, ans.Costs, 1)
			got := ans.Costs[0]
			require.Equal(t, tc.from, got.Node)
			require.Equal(t, tc.from != "", got.Measured)
			require.Equal(t, tc.rows, got.RowsPerS)
			require.Equal(t, tc.rows+100, got.Cost)
		})
	}
}

// TestRebalanceGet: the judge plans from its own view: the nodes that report a wave,
// live as the node listings say, and the instances where their agents report them
// running. A dry run that needs no token: asking again gives the same plan.
func TestRebalanceGet(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Token = "s3cret" })
	// a ran on wave-0 earlier this hour and now runs on wave-1; wave-0 has gone silent.
	require.NoError(t, j.Ingest(waveBatch("wave-0", c.Now(), 1, map[string]float64{"f": 500, "a": 2000}), sourceHTTP))
	c.Add(10 * time.Second)
	require.NoError(t, j.Ingest(waveBatch("wave-1", c.Now(), 4, map[string]float64{"a": 3000, "b": 1000}), sourceHTTP))
	c.Add(10 * time.Second)
	w2 := c.Now()
	require.NoError(t, j.Ingest(waveBatch("wave-2", c.Now(), 0.1, nil), sourceHTTP))
	c.Add(5 * time.Second)
	require.NoError(t, j.Ingest(metric.Batch{Node: "host-1", TS: c.Now(), IntervalS: 10, Points: []metric.Point{{Name: metric.CPUUtil, Value: 3}}}, sourceHTTP))
	c.Add(10 * time.Second) // wave-0 is 35 s silent: stale after 3 intervals of 10 s

	r := do(t, j.Handler(), "GET", "/v1/rebalance", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var ans api.RebalanceAnswer
	require.NoError(t, json.Unmarshal(r.body, &ans))
	// a counts once, on the live wave-1. Live loads: wave-1 3100+1100, wave-2 0; host-1
	// is no wave. f (600) fails over to wave-2; b then narrows the gap 3600 to 1400.
	require.Equal(t, []api.Move{
		{Instance: "f", From: "wave-0", To: "wave-2", Cost: 600, Reason: api.ReasonFailover, ToLoad: [2]float64{0, 600}},
		{Instance: "b", From: "wave-1", To: "wave-2", Cost: 1100, Reason: api.ReasonSpread, FromLoad: [2]float64{4200, 3100}, ToLoad: [2]float64{600, 1700}},
	}, ans.Moves)
	require.Equal(t, map[string]float64{"wave-1": 4200, "wave-2": 0}, ans.Before)
	require.Equal(t, map[string]float64{"wave-1": 3100, "wave-2": 1700}, ans.After)
	require.True(t, ans.Balanced)
	require.Equal(t, []api.InstanceCost{
		{Instance: "a", Node: "wave-1", RowsPerS: 3000, BytesPerS: 600_000, CPUShare: 3, Cost: 3100, Measured: true},
		{Instance: "b", Node: "wave-1", RowsPerS: 1000, BytesPerS: 200_000, CPUShare: 1, Cost: 1100, Measured: true},
		{Instance: "f", Node: "wave-0", RowsPerS: 500, BytesPerS: 100_000, CPUShare: 0.2, Cost: 600, Measured: true},
	}, ans.Costs)
	require.Equal(t, w2, ans.DataAsOf, "the newest batch of a wave (host-1's, later, is no wave's)")

	again := do(t, j.Handler(), "GET", "/v1/rebalance", "", nil)
	require.Equal(t, string(r.body), string(again.body), "a dry run changes nothing")
	m := do(t, j.Handler(), "GET", "/metrics", "", nil)
	require.Contains(t, string(m.body), `binlake_judge_rebalance_plans_total{source="get"} 2`)
}

// TestRebalanceGetEmpty: a judge that has heard from no wave plans nothing, as of now.
func TestRebalanceGetEmpty(t *testing.T) {
	j, c := newJudge(t, nil)
	r := do(t, j.Handler(), "GET", "/v1/rebalance", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var ans api.RebalanceAnswer
	require.NoError(t, json.Unmarshal(r.body, &ans))
	require.Empty(t, ans.Moves)
	require.Equal(t, "no live wave", ans.Unmet)
	require.Equal(t, c.Now(), ans.DataAsOf)
}

// TestRebalanceAuth: with a token, POST /v1/rebalance requires it, as POST /v1/placement
// does; GET does not.
func TestRebalanceAuth(t *testing.T) {
	j, _ := newJudge(t, func(o *Options) { o.Token = "s3cret" })
	body := `{"waves":[{"node":"wave-1","alive":true}],"instances":[{"id":"a","node":"wave-1"}]}`
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "s3creT", http.StatusUnauthorized},
		{"right token", "s3cret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, j.Handler(), "POST", "/v1/rebalance", tc.token, strings.NewReader(body))
			require.Equal(t, tc.status, r.status, string(r.body))
			if tc.status == http.StatusUnauthorized {
				code, _ := errorOf(t, r)
				require.Equal(t, "unauthorized", code)
				require.Equal(t, `Bearer realm="binlake-judge"`, r.header.Get("WWW-Authenticate"))
			}
		})
	}
	require.Equal(t, http.StatusOK, do(t, j.Handler(), "GET", "/v1/rebalance", "", nil).status)
}

// listOf is a JSON list of n elements made by elem.
func listOf(n int, elem func(i int) string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(elem(i))
	}
	b.WriteByte(']')
	return b.String()
}

func TestRebalanceBadRequests(t *testing.T) {
	j, _ := newJudge(t, nil)
	wave := func(i int) string { return fmt.Sprintf(`{"node":"w%d","alive":true}`, i) }
	instance := func(i int) string { return fmt.Sprintf(`{"id":"i%d","node":"w1"}`, i) }
	long := strings.Repeat("x", 256)
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"empty body", ``, 400, `empty body: want a JSON object like {"waves":[{"node":"wave-1","alive":true}],"instances":[{"id":"orders","node":"wave-1"}]}`},
		{"blank body", " \n", 400, `empty body: want a JSON object like`},
		{"null", `null`, 400, `malformed rebalance request: want a JSON object like {"waves"`},
		{"array", `[]`, 400, `malformed rebalance request: want a JSON object like`},
		{"unknown field", `{"waves":[],"instances":[],"goals":{}}`, 400, `malformed rebalance request: json: unknown field "goals"`},
		{"unknown wave field", `{"waves":[{"node":"w1","alive":true,"weight":2}]}`, 400, `malformed rebalance request: json: unknown field "weight"`},
		{"malformed", `{"waves":[`, 400, "malformed rebalance request: unexpected EOF"},
		{"trailing data", `{"waves":[]} {}`, 400, "malformed rebalance request: data after the JSON object"},
		{"a field given twice", `{"waves":[{"node":"a","alive":true,"alive":false}]}`, 400, "malformed rebalance request: field waves[0].alive is given twice"},
		{"wrong type", `{"waves":[{"node":"w0","alive":true},{"node":"w1","alive":"yes"}]}`, 400, "malformed rebalance request: field waves[1].alive: a JSON string where a boolean belongs"},
		{"wrong type in an instance", `{"instances":[{"id":"a","node":"w1"},{"id":"b","node":"w1"},{"id":"c","node":7}]}`, 400, "malformed rebalance request: field instances[2].node: a JSON number where a string belongs"},
		{"bad moved_at", `{"instances":[{"id":"a","node":"w1"},{"id":"b","node":"w1","moved_at":"yesterday"}]}`, 400, `malformed rebalance request: instances[1].moved_at "yesterday" is not an RFC 3339 time`},
		{"empty wave node", `{"waves":[{"node":"w1","alive":true},{"alive":true}]}`, 400, "waves[1].node is empty"},
		{"null wave", `{"waves":[null]}`, 400, "waves[0].alive is missing"},
		{"wave without alive", `{"waves":[{"node":"w1","alive":true},{"node":"w2"}]}`, 400, "waves[1].alive is missing: say whether the wave is registered (false moves its instances away)"},
		{"null alive", `{"waves":[{"node":"w1","alive":null}]}`, 400, "waves[0].alive is missing"},
		{"duplicate wave", `{"waves":[{"node":"w1","alive":true},{"node":"w2","alive":false},{"node":"w1","alive":true}]}`, 400, `waves[2]: node "w1" is listed twice (first as waves[0])`},
		{"empty instance id", `{"instances":[{"id":"","node":"w1"}]}`, 400, "instances[0].id is empty"},
		{"long instance node", `{"instances":[{"id":"a","node":"` + long + `"}]}`, 400, "instances[0].node is 256 bytes, at most 255"},
		{"invalid UTF-8 id", "{\"instances\":[{\"id\":\"a\xff\",\"node\":\"w1\"}]}", 400, "malformed rebalance request: instances[0].id: invalid UTF-8"},
		{"invalid UTF-8 node", "{\"waves\":[{\"node\":\"w1\",\"alive\":true},{\"node\":\"\xc3\",\"alive\":true}]}", 400, "malformed rebalance request: waves[1].node: invalid UTF-8"},
		{"a NUL in an id", `{"instances":[{"id":"a\u0000b","node":"w1"}]}`, 400, "instances[0].id: control character U+0000"},
		{"a newline in a node", `{"waves":[{"node":"w1\n","alive":true}]}`, 400, "waves[0].node: control character U+000A"},
		{"duplicate instance", `{"instances":[{"id":"a","node":"w1"},{"id":"a","node":"w2"}]}`, 400, `instances[1]: id "a" is listed twice (first as instances[0])`},
		{"too many waves", `{"waves":` + listOf(MaxRebalanceWaves+1, wave) + `}`, 400, "waves lists 10001 waves, at most 10000"},
		{"too many instances", `{"instances":` + listOf(MaxRebalanceInstances+1, instance) + `}`, 400, "instances lists 100001 instances, at most 100000"},
		{"oversized body", strings.Repeat(" ", MaxRebalanceBytes+1), 413, "request body larger than 33554432 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, j.Handler(), "POST", "/v1/rebalance", "", strings.NewReader(tc.body))
			require.Equal(t, tc.status, r.status, string(r.body))
			code, msg := errorOf(t, r)
			require.Equal(t, map[int]string{400: "invalid", 413: "too_large"}[tc.status], code)
			require.Contains(t, msg, tc.msg)
		})
	}
	// At the limits, the request is planned.
	body := `{"waves":` + listOf(MaxRebalanceWaves, wave) + `,"instances":` + listOf(MaxRebalanceInstances, instance) + `}`
	r := do(t, j.Handler(), "POST", "/v1/rebalance", "", strings.NewReader(body))
	require.Equal(t, http.StatusOK, r.status, string(r.body[:min(len(r.body), 500)]))
}

// rebalanceBodies seed the fuzzer with requests as balancers send them and the shapes
// the decoder must refuse.
var rebalanceBodies = []string{
	`{"waves":[{"node":"wave-1","alive":true},{"node":"wave-2","alive":false}],"instances":[{"id":"orders","node":"wave-1","pinned":true,"moved_at":"2026-11-29T14:00:00Z"}]}`,
	`{"waves":[],"instances":[]}`, `{}`, `{"waves":null}`, `null`, `[]`, ``, `{"waves":[null]}`,
	`{"waves":[{"node":"a","alive":true},{"node":"a","alive":false}]}`, `{"waves":[{"node":"a"}]}`, `{"instances":[{"id":"a","node":""}]}`, `{"Waves":[]}`,
	`{"waves":[]} x`, `{"instances":[{"id":"a","node":"b","moved_at":"2026-13-01T00:00:00Z"}]}`,
	`{"instances":[{"id":"\u00e9","node":"\ud800"}]}`, `{"waves":[{"node":"a","alive":1}]}`,
}

// FuzzDecodeRebalanceRequest: the decoder never panics; what it accepts satisfies every
// check and survives a round trip; what it refuses is a 400 with a message.
func FuzzDecodeRebalanceRequest(f *testing.F) {
	for _, b := range rebalanceBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRebalanceRequest(bytes.NewReader(b))
		if err != nil {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Msg == "" {
				t.Fatalf("%q: error %v is not a 400 with a message", b, err)
			}
			return
		}
		if len(req.Waves) > MaxRebalanceWaves || len(req.Instances) > MaxRebalanceInstances {
			t.Fatalf("%q: accepted %d waves and %d instances", b, len(req.Waves), len(req.Instances))
		}
		nodes, ids := map[string]bool{}, map[string]bool{}
		for _, w := range req.Waves {
			if checkIdent("node", w.Node) != nil || nodes[w.Node] {
				t.Fatalf("%q: accepted wave node %q", b, w.Node)
			}
			nodes[w.Node] = true
		}
		for _, in := range req.Instances {
			if checkIdent("id", in.ID) != nil || (in.Node != "" && checkIdent("node", in.Node) != nil) || ids[in.ID] {
				t.Fatalf("%q: accepted instance %q on %q", b, in.ID, in.Node)
			}
			ids[in.ID] = true
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("%q: re-encode: %v", b, err)
		}
		back, err := DecodeRebalanceRequest(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("%q: its re-encoding %s is refused: %v", b, again, err)
		}
		if len(back.Waves) != len(req.Waves) || len(back.Instances) != len(req.Instances) {
			t.Fatalf("%q: the round trip changed the lists", b)
		}
		for i := range req.Instances {
			if back.Instances[i].ID != req.Instances[i].ID || !back.Instances[i].MovedAt.Equal(req.Instances[i].MovedAt) {
				t.Fatalf("%q: the round trip changed instance %d", b, i)
			}
		}
	})
}

// A wave the judge has no figures of (new, or silent since the judge started) is in the
// answer with prices of source "none", one of the contract's values (it was "").
func TestRebalanceWaveWithoutFigures(t *testing.T) {
	j, _, _ := skewed(t)
	r, ans := postRebalance(t, j, "", `{"waves":[{"node":"unknown-w","alive":true}],"instances":[{"id":"x","node":"wave-1"}]}`)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Len(t, ans.Waves, 1)
	require.Equal(t, "none", ans.Waves[0].Prices.Source)
}
