package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/api"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// Every route the router serves is in the committed OpenAPI document and vice versa, and
// GET /openapi.json serves it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c, Logger: quiet})
	require.NoError(t, err)
	served, documented, err := httpapi.RouteDiff(a.Handler(), api.OpenAPI)
	require.NoError(t, err)
	require.Equal(t, documented, served)

	c2 := openCoord(t, t.TempDir())
	t.Cleanup(func() { c2.Close() })
	base, _ := startAlarm(t, Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c2, Logger: quiet})
	resp, err := http.Get(base + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var served2 json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&served2))
	require.JSONEq(t, string(api.OpenAPI), string(served2))

	// A load balancer's probe: HEAD /healthz was a 405.
	head, err := http.Head(base + "/healthz")
	require.NoError(t, err)
	head.Body.Close()
	require.Equal(t, http.StatusOK, head.StatusCode)
}

// The alarm's / is a page of counts (integers) and links to its API, each of which
// answers.
func TestFrontPageLinksTheAPI(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	base, a := startAlarm(t, Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c, Logger: quiet, Token: "s3cret"})
	d, err := metric.Encode(batch("wave-<9>", time.Now().UTC(), cpu(97)))
	require.NoError(t, err)
	require.NoError(t, a.ObserveRaw(d))
	require.Eventually(t, func() bool { _, f, _ := a.Engine().Counts(); return f == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { f := a.Engine().Firing(); return len(f) == 1 && f[0].LastNotified != nil },
		10*time.Second, 10*time.Millisecond)

	code, page := do(t, "GET", base+"/", "", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `<p id="counts">1 policy · <span class="err">1 firing</span> · 0 pending · 0 resolved · 0 silences</p>`)
	require.NotContains(t, page, "<script")
	for _, link := range []string{"v1/alerts?state=firing", "v1/alerts", "v1/policies", "v1/silences", "openapi.json", "metrics", "healthz"} {
		require.Contains(t, page, `<a href="`+link+`">`)
		code, body := do(t, "GET", base+"/"+link, "", "")
		require.Equal(t, http.StatusOK, code, "%s: %s", link, body)
	}
	code, body := do(t, "GET", base+"/v1/alerts?state=firing", "", "")
	require.Equal(t, http.StatusOK, code)
	var got struct{ Alerts []api.Alert }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Alerts, 1)
	require.Equal(t, "wave-<9>", got.Alerts[0].Labels[api.LabelNode])
	// lastNotified is the page's queueing time until its delivery is recorded, then the
	// delivery's: the API and the engine agree once it is (read twice, they can straddle it).
	require.Eventually(t, func() bool {
		_, body := do(t, "GET", base+"/v1/alerts?state=firing", "", "")
		var got struct{ Alerts []api.Alert }
		return json.Unmarshal([]byte(body), &got) == nil && reflect.DeepEqual(got.Alerts, a.Engine().Firing())
	}, 10*time.Second, 10*time.Millisecond, "Firing lists what the API does")
}

// TestDecodeSilenceNamesTheFault: a body that is not a silence is refused saying what is
// wrong in JSON's words (the field, the JSON type), not Go's, and a field given twice
// (which encoding/json would settle by keeping the last) is refused too.
func TestDecodeSilenceNamesTheFault(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for body, want := range map[string]string{
		``:                             "empty body: want a JSON object like {",
		`[]`:                           "want a JSON object like {",
		`null`:                         "want a JSON object like {",
		`{"matchers":{"name":"node"}}`: "field matchers: a JSON object where an array belongs",
		`{"matchers":[{"name":"node","isRegex":"yes"}]}`:         "field matchers.isRegex: a JSON string where a boolean belongs",
		`{"endsAt":"tomorrow"}`:                                  `"tomorrow" is not an RFC 3339 time`,
		`{"duration":"1h","duration":"2h"}`:                      "field duration is given twice",
		`{"matchers":[{"name":"node","value":"a","value":"b"}]}`: "field matchers[0].value is given twice",
		`{"duration":"1h"} {}`:                                   "data after the JSON object",
		`{"bogus":1}`:                                            `unknown field "bogus"`,
	} {
		_, err := DecodeSilence(strings.NewReader(body), now)
		require.ErrorIs(t, err, ErrInvalidSilence, body)
		require.ErrorContains(t, err, want, body)
		require.NotContains(t, err.Error(), "Go value", body)
		require.NotContains(t, err.Error(), "struct", body)
	}
	s, err := DecodeSilence(strings.NewReader(`{"matchers":[{"name":"node","value":"a"}],"duration":"2h"}`), now)
	require.NoError(t, err)
	require.Equal(t, now.Add(2*time.Hour), s.EndsAt)
}

// stuckCoord is a coordinator out of reach once stuck: its reads and writes wait for
// their context, as ZooKeeper's do in a partition.
type stuckCoord struct {
	coord.Coordinator
	stuck atomic.Bool
}

func (c *stuckCoord) Get(ctx context.Context, key string) (coord.Value, error) {
	if c.stuck.Load() {
		<-ctx.Done()
		return coord.Value{}, fmt.Errorf("get %s: %w", key, ctx.Err())
	}
	return c.Coordinator.Get(ctx, key)
}

func (c *stuckCoord) Put(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	if c.stuck.Load() {
		<-ctx.Done()
		return 0, fmt.Errorf("put %s: %w", key, ctx.Err())
	}
	return c.Coordinator.Put(ctx, key, data, version)
}

// Creating or deleting a silence while the coordinator is out of reach answers 503 with
// what happened within a bound, instead of holding the request open (t21: no answer in
// 40 s during a ZooKeeper partition).
func TestSilenceWriteWithTheCoordinatorAway(t *testing.T) {
	defer func(d time.Duration) { silenceWriteTimeout = d }(silenceWriteTimeout)
	silenceWriteTimeout = 300 * time.Millisecond
	c := &stuckCoord{Coordinator: openCoord(t, t.TempDir())}
	t.Cleanup(func() { c.Close() })
	base, _ := startAlarm(t, Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c, Logger: quiet})
	c.stuck.Store(true)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/silences", `{"matchers":[{"name":"node","value":"wave-1"}],"duration":"1h","createdBy":"ops"}`},
		{http.MethodDelete, "/v1/silences/0123456789abcdef", ""},
	} {
		req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		require.NoError(t, err)
		start := time.Now()
		resp, err := client.Do(req)
		require.NoError(t, err, "%s %s answers", tc.method, tc.path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s %s: %s", tc.method, tc.path, body)
		require.Less(t, time.Since(start), 3*time.Second)
		require.Equal(t, "2", resp.Header.Get("Retry-After"), "when to try again")
		var e struct {
			Error struct{ Code, Message string }
		}
		require.NoError(t, json.Unmarshal(body, &e), string(body))
		require.Equal(t, httpapi.CodeUnavailable, e.Error.Code)
		require.Contains(t, e.Error.Message, "ZooKeeper")
		require.Contains(t, e.Error.Message, "no answer within 300ms")
	}
}

// A silence that names a policy by alertname and a label the policy's by leaves out
// mutes none of its alerts: it is kept (the policies may change), and the answer and the
// log say why it will not mute them. One on a label the alerts carry says nothing.
func TestSilenceOnALabelByLeavesOutWarns(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	pols := parsePolicies(t, `policies:
  - name: down
    metric: wave.instance_running
    condition: last < 1
    by: [instance]
    severity: P2
    channels: [c]
`)
	base, _ := startAlarm(t, Options{Policies: pols, Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}}, Coordinator: c, Logger: quiet})
	for _, tc := range []struct {
		matchers string
		warn     string // "" none
	}{
		{`{"name":"alertname","value":"down"},{"name":"reason","value":"binlog_off"}`, "policy down's alerts have no label reason (its by: [instance])"},
		{`{"name":"alertname","value":"down"},{"name":"reason","value":"bin.*","isRegex":true}`, "no label reason"},
		{`{"name":"alertname","value":"down"},{"name":"instance","value":"orders"}`, ""},
		{`{"name":"alertname","value":"down"},{"name":"node","value":"wave-1"}`, ""},
		{`{"name":"alertname","value":"down"},{"name":"reason","value":"x","isEqual":false}`, ""}, // mutes every one without reason x
		{`{"name":"alertname","value":"down"},{"name":"reason","value":".*","isRegex":true}`, ""},
		{`{"name":"alertname","value":"other"},{"name":"reason","value":"binlog_off"}`, ""},
	} {
		code, body := do(t, "POST", base+"/v1/silences", "", `{"matchers":[`+tc.matchers+`],"duration":"1h"}`)
		require.Equal(t, 200, code, body)
		var got struct {
			SilenceID string
			Warnings  []string
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		require.NotEmpty(t, got.SilenceID)
		if tc.warn == "" {
			require.Empty(t, got.Warnings, tc.matchers)
		} else {
			require.Len(t, got.Warnings, 1, tc.matchers)
			require.Contains(t, got.Warnings[0], tc.warn)
		}
	}
	// The listing says it of each such silence too (one made before the policies
	// changed mutes nothing, and nothing said so: an upgrade trial).
	code, body := do(t, "GET", base+"/v1/silences", "", "")
	require.Equal(t, 200, code)
	var list struct{ Silences []struct{ Warnings []string } }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	warned := 0
	for _, s := range list.Silences {
		if len(s.Warnings) > 0 {
			warned++
		}
	}
	require.Equal(t, 2, warned, body)
	// And a process that starts with them says so once each.
	var logs testenv.SyncBuffer
	startAlarm(t, Options{Policies: pols, Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}}, Coordinator: c,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.Equal(t, 2, strings.Count(logs.String(), `level=WARN msg="a silence mutes nothing it names"`), logs.String())
}
