package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/lbplugins"
)

// wave is a batch of a wave host at a given load running some instances.
func wave(node string, ts time.Time, cpu, instances float64) metric.Batch {
	return metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{
		{Name: "cpu.util", Value: cpu}, {Name: "mem.used_pct", Value: 40},
		{Name: "wave.instances", Value: instances},
	}}
}

// Twenty back-to-back placements onto twenty identical nodes spread one per node: each
// reservation counts on its node until the node reports the instance.
func TestPlacementFeedbackSpreads(t *testing.T) {
	for _, algo := range []string{"leastload", "balanced", "predictive"} {
		t.Run(algo, func(t *testing.T) {
			j, c := newJudge(t, func(o *Options) { o.Algorithm = algo })
			for i := range 20 {
				require.NoError(t, j.Ingest(wave(fmt.Sprintf("wave-%02d", i), t0, 30, 2), sourceHTTP))
			}
			c.Add(time.Second)
			per := map[string]int{}
			for i := range 20 {
				ans, err := j.Place(api.PlacementRequest{Instance: fmt.Sprintf("orders-%d", i)})
				require.NoError(t, err)
				per[ans.Node]++
				require.NotNil(t, ans.Reservation)
				require.Equal(t, float64(3), ans.Reservation.Target, "the node reported 2 and had no other reservation")
			}
			require.Len(t, per, 20, "one instance per node: %v", per)

			// Without feedback (dry runs reserve nothing) every answer is the same node.
			first := ""
			for range 5 {
				ans, err := j.Place(api.PlacementRequest{Instance: "probe", DryRun: true})
				require.NoError(t, err)
				if first == "" {
					first = ans.Node
				}
				require.Equal(t, first, ans.Node)
			}
		})
	}
}

// A reservation ends when its node reports the instance, or after its TTL.
func TestReservationLifetime(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.ReservationTTL = time.Minute })
	h := j.Handler()
	require.NoError(t, j.Ingest(wave("wave-a", t0, 20, 1), sourceHTTP))
	c.Add(time.Second)

	ans, err := j.Place(api.PlacementRequest{Instance: "orders"})
	require.NoError(t, err)
	require.Equal(t, "wave-a", ans.Node)
	ans, err = j.Place(api.PlacementRequest{Instance: "billing"})
	require.NoError(t, err)
	require.Equal(t, "wave-a", ans.Node)
	require.Equal(t, float64(3), ans.Reservation.Target)
	require.Equal(t, 1.0, ans.Scores[0].Pending, "the decision counted the first reservation")

	// GET /v1/nodes/{node} shows them.
	r := do(t, h, "GET", "/v1/nodes/wave-a", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var d struct{ Reservations []api.Reservation }
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.Len(t, d.Reservations, 2)
	require.Equal(t, "orders", d.Reservations[0].Instance)
	require.Equal(t, t0.Add(time.Second+time.Minute), d.Reservations[0].ExpiresAt)

	// The node reports one more instance: the older reservation is fulfilled.
	c.Add(10 * time.Second)
	require.NoError(t, j.Ingest(wave("wave-a", c.Now(), 20, 2), sourceHTTP))
	ans, err = j.Place(api.PlacementRequest{Instance: "probe", DryRun: true})
	require.NoError(t, err)
	require.Len(t, j.Reservations("wave-a"), 1)
	require.Equal(t, "billing", j.Reservations("wave-a")[0].Instance)

	// The other one never shows up: it expires after its TTL.
	c.Add(time.Minute)
	require.NoError(t, j.Ingest(wave("wave-a", c.Now(), 20, 2), sourceHTTP))
	_, err = j.Place(api.PlacementRequest{Instance: "probe", DryRun: true})
	require.NoError(t, err)
	require.Empty(t, j.Reservations("wave-a"))
	require.Zero(t, j.res.size.Load())
}

// A reservation ends once its node reports the instance running, or once it expires,
// with no placement to come: the judge sweeps them as batches arrive. They stayed
// listed until the next placement, with none for as long as their TTL (2 minutes).
func TestReservationEndsWithoutAPlacement(t *testing.T) {
	_, j := readyJudge(t, Options{Store: openStore(t), Algorithm: "leastload", ReservationTTL: time.Minute})
	report := func(running ...string) {
		rows := map[string]float64{"users": 100}
		for _, id := range running {
			rows[id] = 50
		}
		b := waveBatch("wave-a", time.Now(), 0.5, rows)
		b.Points = append(b.Points, metric.Point{Name: metric.WaveInstances, Value: float64(len(rows))})
		require.NoError(t, j.Ingest(b, sourceHTTP))
	}
	report()
	ans, err := j.Place(api.PlacementRequest{Instance: "orders"})
	require.NoError(t, err)
	require.Equal(t, "wave-a", ans.Node)
	require.Len(t, j.Reservations("wave-a"), 1)

	report()
	time.Sleep(1500 * time.Millisecond) // a sweep or more
	require.Len(t, j.Reservations("wave-a"), 1, "its node does not run it yet")
	report("orders")
	require.Eventually(t, func() bool { return len(j.Reservations("wave-a")) == 0 }, 5*time.Second, 50*time.Millisecond,
		"wave-a runs orders: its reservation ends without a placement")
	require.Zero(t, j.res.size.Load())
}

// A reservation listed until its TTL is not listed past it, swept or not.
func TestExpiredReservationIsNotListed(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.ReservationTTL = time.Minute })
	require.NoError(t, j.Ingest(wave("wave-a", t0, 20, 1), sourceHTTP))
	_, err := j.Place(api.PlacementRequest{Instance: "orders"})
	require.NoError(t, err)
	require.Len(t, j.Reservations("wave-a"), 1)
	c.Add(time.Minute)
	require.Empty(t, j.Reservations("wave-a"))
}

// A placement asked again for the same instance (a client's retry) replaces its
// reservation: the instance counts once, on the node of the latest answer, and a
// reservation swept away leaves nothing behind for the next one.
func TestReservationReplacedForTheSameInstance(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.ReservationTTL = time.Minute })
	require.NoError(t, j.Ingest(wave("wave-a", t0, 20, 1), sourceHTTP))
	require.NoError(t, j.Ingest(wave("wave-b", t0, 80, 1), sourceHTTP))
	c.Add(time.Second)
	for range 3 {
		ans, err := j.Place(api.PlacementRequest{Instance: "dup", Algorithm: "leastload"})
		require.NoError(t, err)
		require.Equal(t, "wave-a", ans.Node)
		require.Zero(t, ans.Scores[0].Pending, "the decision did not count the instance's own earlier reservation twice")
	}
	require.Len(t, j.Reservations("wave-a"), 1)
	require.Equal(t, int64(1), j.res.size.Load())
	ans, err := j.Place(api.PlacementRequest{Instance: "other", Algorithm: "leastload"})
	require.NoError(t, err)
	i := slices.IndexFunc(ans.Scores, func(s lbplugins.Score) bool { return s.Node == "wave-a" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, 1.0, ans.Scores[i].Pending, "another instance's decision counts dup's reservation")
	require.Equal(t, int64(2), j.res.size.Load())

	c.Add(2 * time.Minute) // both expire
	require.NoError(t, j.Ingest(wave("wave-a", c.Now(), 20, 1), sourceHTTP))
	_, err = j.Place(api.PlacementRequest{Instance: "probe", DryRun: true})
	require.NoError(t, err)
	require.Zero(t, j.res.size.Load())
	_, err = j.Place(api.PlacementRequest{Instance: "dup", Algorithm: "leastload"})
	require.NoError(t, err)
	require.Len(t, j.Reservations("wave-a"), 1)
}

// The default answer explains the best five; top and explain change that; bad values
// are refused with a message naming them.
func TestPlacementAnswerSize(t *testing.T) {
	j, c := newJudge(t, nil)
	h := j.Handler()
	for i := range 40 {
		require.NoError(t, j.Ingest(wave(fmt.Sprintf("wave-%02d", i), t0, float64(i), 1), sourceHTTP))
	}
	require.NoError(t, j.Ingest(wave("wave-hot", t0, 99, 1), sourceHTTP))
	c.Add(time.Second)
	type answer struct {
		Node          string
		Candidates    int
		Scores        []lbplugins.Score
		Filtered      map[string]int
		FilteredNodes []lbplugins.Filtered `json:"filtered_nodes"`
	}
	place := func(path, body string) (answer, int) {
		r := do(t, h, "POST", path, "", strings.NewReader(body))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var a answer
		require.NoError(t, json.Unmarshal(r.body, &a))
		return a, len(r.body)
	}
	a, size := place("/v1/placement", `{"instance":"x","dry_run":true}`)
	require.Equal(t, "wave-00", a.Node)
	require.Equal(t, 40, a.Candidates)
	require.Len(t, a.Scores, lbplugins.DefaultTopK)
	require.Equal(t, map[string]int{"over_threshold": 1}, a.Filtered)
	require.Nil(t, a.FilteredNodes)
	require.Less(t, size, 2048, "a default answer stays small")

	a, _ = place("/v1/placement?top=12", `{"instance":"x","dry_run":true}`)
	require.Len(t, a.Scores, 12)
	a, _ = place("/v1/placement", `{"instance":"x","dry_run":true,"explain":"all"}`)
	require.Len(t, a.Scores, 40)
	require.Equal(t, []lbplugins.Filtered{{Node: "wave-hot", Reason: "over threshold: cpu.util 99 > 90"}}, a.FilteredNodes)
	for i := 1; i < len(a.Scores); i++ {
		require.GreaterOrEqual(t, a.Scores[i-1].Value, a.Scores[i].Value, "best first")
	}

	for _, tc := range []struct{ path, body, msg string }{
		{"/v1/placement?explain=some", `{"instance":"x"}`, `explain "some": want "top" (the best candidates) or "all" (every node)`},
		{"/v1/placement", `{"instance":"x","explain":"every"}`, `explain "every": want "top" (the best candidates) or "all" (every node)`},
		{"/v1/placement?top=many", `{"instance":"x"}`, `top "many": want a whole number of candidates, 1–100 (0, or none: 5)`},
		{"/v1/placement", `{"instance":"x","top":1000}`, `top 1000: want 1–100 candidates (0, or none: 5)`},
		{"/v1/placement", `{"instance":"x","top":-1}`, `top -1: want 1–100 candidates (0, or none: 5)`},
		{"/v1/placement", `{"instance":"x","top":1.5}`, `malformed placement request: field top: a JSON number 1.5 where a whole number belongs`},
	} {
		r := do(t, h, "POST", tc.path, "", strings.NewReader(tc.body))
		require.Equal(t, http.StatusBadRequest, r.status, tc.path+" "+tc.body)
		code, msg := errorOf(t, r)
		require.Equal(t, "invalid", code)
		require.Equal(t, tc.msg, msg)
	}
}

// The hand-written answer decodes with encoding/json into the same values, whatever the
// node names and parts hold.
func TestAnswerJSON(t *testing.T) {
	ans := PlacementAnswer{Decision: lbplugins.Decision{
		Node: "wave-\"1\"\n\u2028", Algorithm: "leastload", Candidates: 2, DataAsOf: t0.Add(1500 * time.Millisecond),
		Scores: []lbplugins.Score{
			{Node: "wave-\"1\"\n\u2028", Value: 81.25, Parts: lbplugins.PartsOf(lbplugins.Part{Name: "cpu", Value: 50.5}, lbplugins.Part{Name: "memory", Value: 30.75}), Pending: 1},
			{Node: "wave-\xff", Value: 1e-7, Parts: lbplugins.PartsOf(lbplugins.Part{Name: "x\\y", Value: -3})},
		},
		FilteredBy: lbplugins.FilterCounts{Stale: 2, Plugin: 1},
		Filtered:   []lbplugins.Filtered{{Node: "a\tb", Reason: "stale: <no batch>"}},
		Note:       "scored \"by\" utilisation",
	}, Reservation: &api.Reservation{Instance: "orders", Node: "wave-1", At: t0, ExpiresAt: t0.Add(time.Minute), Target: 3,
		Expected: api.Work{RowsPerS: 120.5, BytesPerS: 1.25e-7}, Cores: 0.012345678},
		Expected: &api.ExpectedWork{Work: api.Work{BytesPerS: 52341}, Source: api.ExpectedHint, Note: "rows/s \"unknown\""}}
	data := appendAnswer(nil, &ans)
	require.True(t, json.Valid(data), "%s", data)
	// Strictly into the client's type (judge/api): every field the judge writes is one
	// a client reads.
	var got api.PlacementAnswer
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))
	require.Equal(t, ans.Node, got.Node)
	require.Equal(t, "leastload", got.Algorithm)
	require.Equal(t, ans.DataAsOf, got.DataAsOf)
	require.Equal(t, 2, got.Candidates)
	require.Equal(t, map[string]float64{"cpu": 50.5, "memory": 30.75}, got.Scores[0].Parts)
	require.Equal(t, 1.0, got.Scores[0].Pending)
	require.Equal(t, 81.25, got.Scores[0].Score)
	require.Equal(t, "wave-\ufffd", got.Scores[1].Node, "invalid UTF-8 becomes U+FFFD, as with encoding/json")
	require.Equal(t, 1e-7, got.Scores[1].Score)
	require.Equal(t, ans.FilteredBy, got.Filtered)
	require.Equal(t, ans.Filtered, got.FilteredNodes)
	require.Equal(t, ans.Reservation, got.Reservation)
	require.Equal(t, ans.Expected, got.Expected)
	require.Equal(t, ans.Note, got.Note)

	// Without a hint, a note or the reservation's work, none of their keys.
	ans.Expected, ans.Decision.Note, ans.Reservation.Expected, ans.Reservation.Cores = nil, "", api.Work{}, 0
	data = appendAnswer(nil, &ans)
	for _, key := range []string{`"expected"`, `"note"`, `"cores"`} {
		require.NotContains(t, string(data), key)
	}
}
