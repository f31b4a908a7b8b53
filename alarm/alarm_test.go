package alarm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// receiver is an httptest webhook receiver that decodes Alertmanager payloads.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []notify.WebhookPayload
	at   []time.Time // when each of got arrived
	seen chan struct{}
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{seen: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p notify.WebhookPayload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, p)
		r.at = append(r.at, time.Now())
		r.mu.Unlock()
		select {
		case r.seen <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) payloads() []notify.WebhookPayload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.WebhookPayload(nil), r.got...)
}

func (r *receiver) wait(t testing.TB, n int) []notify.WebhookPayload {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if p := r.payloads(); len(p) >= n {
			return p
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("webhook received %d payloads, want %d", len(r.payloads()), n)
		}
	}
}

func webhookChannel(t testing.TB, url string) notify.Notifier {
	h, err := notify.NewHTTP(notify.HTTPOptions{Format: notify.FormatWebhook, URL: config.Secret(url)})
	require.NoError(t, err)
	return h
}

// startAlarm runs an alarm until the test ends and returns its base URL.
func startAlarm(t testing.TB, o Options) (string, *Alarm) {
	t.Helper()
	a, err := New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	a.o.Listen = "127.0.0.1:0"
	a.o.Ready = func(addr string) { addrc <- addr }
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case addr := <-addrc:
		return "http://" + addr, a
	case err := <-done:
		t.Fatalf("alarm stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("alarm did not start")
	}
	return "", nil
}

func do(t testing.TB, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricBusAndCoord is an in-process bus with the metric topic, the alarm's subscription
// to it, and a coordinator, all closed when t ends.
func metricBusAndCoord(t *testing.T) (*memory.Bus, bus.Subscriber, coord.Coordinator) {
	t.Helper()
	b, err := memory.New(memory.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.CreateTopic(context.Background(), bus.TopicSpec{Name: metric.Topic}))
	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: DefaultGroup})
	require.NoError(t, err)
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	return b, sub, c
}

// TestAlarmEndToEnd: a violating batch on the in-process bus reaches the webhook; the API
// lists the alert, silences need the token, /metrics counts it all.
func TestAlarmEndToEnd(t *testing.T) {
	rcv := newReceiver(t)
	b, sub, c := metricBusAndCoord(t)
	ctx := context.Background()
	base, _ := startAlarm(t, Options{
		Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": webhookChannel(t, rcv.srv.URL)},
		Subscriber: sub, Coordinator: c, Token: "s3cret", EvalInterval: 50 * time.Millisecond, Logger: quiet,
		Dispatch: notify.DispatcherOptions{Backoff: 10 * time.Millisecond},
	})
	pub, err := b.Publisher()
	require.NoError(t, err)
	enc := func(bt metric.Batch) []byte { d, err := metric.Encode(bt); require.NoError(t, err); return d }
	now := time.Now().UTC()
	require.NoError(t, pub.Publish(ctx,
		bus.Message{Topic: metric.Topic, Key: []byte("x"), Value: []byte("{garbage")},
		bus.Message{Topic: metric.Topic, Key: []byte("wave-9"), Value: enc(batch("wave-9", now, cpu(97)))},
	))
	p := rcv.wait(t, 1)[0]
	require.Equal(t, "firing", p.Status)
	require.Equal(t, "c", p.Receiver)
	require.Equal(t, "wave-9", p.Alerts[0].Labels["node"])
	require.Equal(t, "wave-9 at 97", p.Alerts[0].Annotations["summary"])

	code, body := do(t, "GET", base+"/v1/alerts?state=firing", "", "")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"node":"wave-9"`)
	require.Contains(t, body, `"notifications":1`)
	code, body = do(t, "GET", base+"/v1/alerts?state=bogus", "", "")
	require.Equal(t, 400, code)
	require.Contains(t, body, `"code":"invalid"`)
	// A state given twice matches either; a parameter the endpoint does not take is
	// refused, not ignored (the answer would be every alert).
	code, body = do(t, "GET", base+"/v1/alerts?state=pending&state=firing", "", "")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"node":"wave-9"`)
	code, body = do(t, "GET", base+"/v1/alerts?state=pending&state=resolved", "", "")
	require.Equal(t, 200, code)
	require.NotContains(t, body, `"node":"wave-9"`)
	code, body = do(t, "GET", base+"/v1/alerts?stat=firing", "", "")
	require.Equal(t, 400, code)
	require.Contains(t, body, `unknown query parameter \"stat\" (this endpoint takes state, fingerprint)`)

	sil := `{"matchers":[{"name":"node","value":"wave-9","isRegex":false}],"duration":"1h","createdBy":"t","comment":"maintenance"}`
	code, body = do(t, "POST", base+"/v1/silences", "", sil)
	require.Equal(t, 401, code, body)
	code, body = do(t, "POST", base+"/v1/silences", "wrong", sil)
	require.Equal(t, 401, code, body)
	code, body = do(t, "POST", base+"/v1/silences", "s3cret", `{"matchers":[],"duration":"1h"}`)
	require.Equal(t, 400, code, body)
	code, body = do(t, "POST", base+"/v1/silences", "s3cret", `{"matchers":[{"name":"node","value":"x"}],"endsAt":"2030-01-01T00:00:00Z","bogus":1}`)
	require.Equal(t, 400, code, body)
	code, body = do(t, "POST", base+"/v1/silences", "s3cret", sil)
	require.Equal(t, 200, code, body)
	var created struct{ SilenceID string }
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	code, body = do(t, "GET", base+"/v1/silences", "", "")
	require.Equal(t, 200, code)
	require.Contains(t, body, created.SilenceID)
	require.Contains(t, body, `"state":"active"`)
	code, body = do(t, "GET", base+"/v1/alerts", "", "")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"silencedBy":["`+created.SilenceID+`"]`)
	code, _ = do(t, "DELETE", base+"/v1/silences/"+created.SilenceID, "", "")
	require.Equal(t, 401, code)
	code, _ = do(t, "DELETE", base+"/v1/silences/"+created.SilenceID, "s3cret", "")
	require.Equal(t, 200, code)
	code, body = do(t, "DELETE", base+"/v1/silences/"+created.SilenceID, "s3cret", "")
	require.Equal(t, 404, code, body)

	code, body = do(t, "GET", base+"/healthz", "", "")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"firing":1`)
	code, body = do(t, "GET", base+"/v1/policies", "", "")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"condition":"last > 90"`)
	require.Contains(t, body, `"groupBy":["alertname","severity"]`, "the default grouping: one group per policy")
	// The dispatcher counts a notification sent once the receiver has answered, which can
	// be after the receiver recorded it: read /metrics until it has (a loaded CI machine
	// once read it before).
	wants := []string{
		"binlake_alarm_evaluations_total 1", "binlake_alarm_decode_errors_total 1",
		`binlake_alarm_alerts{state="firing"} 1`, `binlake_alarm_notifications_sent_total{channel="c"} 1`,
		`binlake_alarm_notifications_failed_total{channel="c"} 0`,
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body = do(t, "GET", base+"/metrics", "", "")
		missing := ""
		for _, want := range wants {
			if !strings.Contains(body, want) {
				missing = want
				break
			}
		}
		if code == 200 && missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics (status %d) lacks %q:\n%s", code, missing, body)
		}
	}
	code, body = do(t, "GET", base+"/nope", "", "")
	require.Equal(t, 404, code)
	require.Contains(t, body, `"code":"not_found"`)
}

func TestNewRejectsUnknownChannel(t *testing.T) {
	c := openCoord(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	_, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"other": notify.Log{L: quiet}}, Coordinator: c})
	require.ErrorContains(t, err, `names channel "c"`)
}

// refreshRecorder is a channel that must hear about its firing alerts again (as an
// Alertmanager), every hour, and records when it does.
type refreshRecorder struct {
	mu        sync.Mutex
	refreshed []int // how many alerts each refresh carried
}

func (r *refreshRecorder) Notify(context.Context, notify.Message) error { return nil }
func (r *refreshRecorder) RefreshInterval() time.Duration               { return time.Hour }
func (r *refreshRecorder) Refresh(_ context.Context, alerts []notify.Alert, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshed = append(r.refreshed, len(alerts))
	return nil
}

func (r *refreshRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.refreshed)
}

// The first re-send to an Alertmanager comes seconds after the start, not a whole
// resend_interval: the alerts a restarted alarm restores were last sent before the
// restart, and their endsAt (four intervals) may be nearly past.
func TestFirstRefreshSoonAfterTheStart(t *testing.T) {
	b, sub, c := metricBusAndCoord(t)
	ctx := context.Background()
	rec := &refreshRecorder{}
	startAlarm(t, Options{
		Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": rec},
		Subscriber: sub, Coordinator: c, EvalInterval: 50 * time.Millisecond, Logger: quiet,
	})
	pub, err := b.Publisher()
	require.NoError(t, err)
	d, err := metric.Encode(batch("wave-9", time.Now().UTC(), cpu(97)))
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, bus.Message{Topic: metric.Topic, Key: []byte("wave-9"), Value: d}))
	require.Eventually(t, func() bool { return rec.count() > 0 }, 3*firstRefresh, 50*time.Millisecond, "a refresh within seconds of the start")
	rec.mu.Lock()
	require.Equal(t, 1, rec.refreshed[0], "the firing alert")
	rec.mu.Unlock()
}

// A batch that cannot be decoded is warned of (nobody else learns of it): once a minute
// while they keep coming, naming the error.
func TestUndecodableBatchesAreWarnedOf(t *testing.T) {
	var logs testenv.SyncBuffer
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: openCoord(t, t.TempDir()), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	for range 3 {
		require.Error(t, a.ObserveRaw([]byte(`{"node":"wave-1","ts":"soon"}`)))
	}
	require.Equal(t, 1, strings.Count(logs.String(), `level=WARN msg="skipping a metric batch`), logs.String())
	require.Contains(t, logs.String(), "is not an RFC 3339 timestamp")
}

// flakyRefresher is a channel that wants its firing alerts again every 50 ms and refuses
// the first re-sends.
type flakyRefresher struct {
	mu    sync.Mutex
	fails int // re-sends still to refuse
	tried int
}

func (r *flakyRefresher) Notify(context.Context, notify.Message) error { return nil }
func (r *flakyRefresher) RefreshInterval() time.Duration               { return 50 * time.Millisecond }
func (r *flakyRefresher) Refresh(context.Context, []notify.Alert, string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tried++
	if r.fails > 0 {
		r.fails--
		return errors.New("alertmanager down")
	}
	return nil
}

// binlake_alarm_alert_refresh_failing is 1 while a channel's last re-send failed and 0
// once one gets through, so that BinlakeAlarmAlertmanagerRefreshFailing ends then, not
// 15 minutes later with the failures' count (an outside trial).
func TestRefreshFailingGauge(t *testing.T) {
	b, sub, c := metricBusAndCoord(t)
	ch := &flakyRefresher{fails: 3}
	base, _ := startAlarm(t, Options{
		Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": ch},
		Subscriber: sub, Coordinator: c, EvalInterval: 50 * time.Millisecond, Logger: quiet,
	})
	_, m := do(t, "GET", base+"/metrics", "", "")
	require.Contains(t, m, `binlake_alarm_alert_refresh_failing{channel="c"} 0`, "exported at 0 from the start")
	pub, err := b.Publisher()
	require.NoError(t, err)
	d, err := metric.Encode(batch("wave-9", time.Now().UTC(), cpu(97)))
	require.NoError(t, err)
	require.NoError(t, pub.Publish(context.Background(), bus.Message{Topic: metric.Topic, Key: []byte("wave-9"), Value: d}))
	require.Eventually(t, func() bool {
		_, m := do(t, "GET", base+"/metrics", "", "")
		return strings.Contains(m, `binlake_alarm_alert_refresh_failing{channel="c"} 1`)
	}, 10*time.Second, 20*time.Millisecond, "failing while the re-sends fail")
	require.Eventually(t, func() bool {
		_, m := do(t, "GET", base+"/metrics", "", "")
		return strings.Contains(m, `binlake_alarm_alert_refresh_failing{channel="c"} 0`) &&
			strings.Contains(m, `binlake_alarm_alert_refresh_errors_total{channel="c"} 3`)
	}, 10*time.Second, 20*time.Millisecond, "0 once a re-send gets through, the three failures counted")
}

// A batch dated further ahead of the alarm's clock than metric.MaxAhead is skipped,
// counted and warned of: kept, its series took every later batch of the node for a
// redelivery until the clock passed it, and a threshold policy was blind to the node
// (an outside trial: a batch dated an hour ahead, then 95 % never paged).
func TestBatchDatedFarAheadIsSkipped(t *testing.T) {
	var logs testenv.SyncBuffer
	c := openCoord(t, t.TempDir())
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Coordinator: c, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	// The alert's notification log writes run on the engine's writer goroutine: done, and
	// the coordinator closed, before the folder is removed (a write landing during the
	// removal failed the test once: "directory not empty").
	t.Cleanup(func() { a.Engine().Sync(); c.Close() })
	now := time.Now()
	err = a.ObserveRaw(encode(t, "wave-1", now.Add(time.Hour), 10, cpu(10)))
	require.ErrorContains(t, err, `node "wave-1": ts `)
	require.ErrorContains(t, err, "ahead of the alarm's clock (at most 10m0s)")
	require.Contains(t, logs.String(), `level=WARN msg="skipping a metric batch`)
	// A few minutes ahead (a clock without NTP) is taken.
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", now.Add(2*time.Minute), 10, cpu(10))))
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", now.Add(2*time.Minute+10*time.Second), 10, cpu(95))))
	require.Eventually(t, func() bool {
		for _, v := range a.eng.Alerts() {
			if v.State == "firing" || v.State == "pending" {
				return true
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "the node's next violating batch is evaluated")
}
