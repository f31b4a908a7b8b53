package alarm

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
)

// amAlert is an alert as Alertmanager's GET /api/v2/alerts lists it.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Status       struct {
		State string `json:"state"`
	} `json:"status"`
}

func amAlerts(t *testing.T, base string) []amAlert {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out []amAlert
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// TestAlertmanagerChannelIntegration hands the alarm's alerts to two real Alertmanagers
// (Debian's 0.25) through their v2 API, one of them down when the alert fires: both get
// it (the one that was down within a resend interval of coming back), and deliver it to
// their receiver; the alert stays active across an alarm restart and well past the
// endsAt horizon of any one send (the restarted alarm re-sends what it restored), and its
// resolution, after the restart, ends it in both and reaches the receivers as resolved.
func TestAlertmanagerChannelIntegration(t *testing.T) {
	rcv := newReceiver(t)
	up, down := testenv.FreeAddr(t), testenv.FreeAddr(t)
	amUp, _ := testenv.StartAlertmanager(t, up, rcv.srv.URL)
	const resend = time.Second // endsAt is 4 s ahead of every send
	ch, err := notify.NewAlertmanager(notify.AlertmanagerOptions{URLs: []string{amUp, "http://" + down}, Resend: resend})
	require.NoError(t, err)

	dir := t.TempDir()
	run := func() (*Alarm, context.CancelFunc, chan error) {
		c := openCoord(t, dir)
		a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": ch},
			Coordinator: c, EvalInterval: 50 * time.Millisecond, Logger: quiet, ExternalURL: "http://alarm.test:8092",
			Dispatch: notify.DispatcherOptions{Attempts: 1}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { err := a.Run(ctx); c.Close(); done <- err }()
		return a, cancel, done
	}
	observe := func(a *Alarm, v float64) {
		data, err := metric.Encode(batch("wave-9", time.Now().UTC(), cpu(v)))
		require.NoError(t, err)
		require.NoError(t, a.ObserveRaw(data))
	}
	firing := func(base string) func(c *assert.CollectT) {
		return func(c *assert.CollectT) {
			as := amAlerts(t, base)
			if assert.Len(c, as, 1) {
				assert.Equal(c, "active", as[0].Status.State)
				assert.Equal(c, "wave-9", as[0].Labels["node"])
				assert.Equal(c, "cpu", as[0].Labels["alertname"])
				assert.Equal(c, "P2", as[0].Labels["severity"])
				assert.Equal(c, "wave-9 at 97", as[0].Annotations["summary"])
				assert.Contains(c, as[0].GeneratorURL, "http://alarm.test:8092/v1/alerts?fingerprint=")
			}
		}
	}

	a, stop, done := run()
	observe(a, 97)
	require.EventuallyWithT(t, firing(amUp), 15*time.Second, 100*time.Millisecond, "the alert in the running Alertmanager")

	// The second Alertmanager comes up: the alert reaches it within a resend interval or
	// two, though every send to it so far failed.
	amDown, _ := testenv.StartAlertmanager(t, down, rcv.srv.URL)
	require.EventuallyWithT(t, firing(amDown), 15*time.Second, 100*time.Millisecond, "the alert in the Alertmanager that was down")

	// The alarm restarts on its data while the agent keeps reporting: the alert resumes
	// from the notification log (not paged again) and is sent again, so it stays active
	// in both past the 4 s horizon of the last send before the restart.
	stop()
	require.NoError(t, <-done)
	a, stop, done = run()
	defer func() { stop(); <-done }()
	for end := time.Now().Add(3 * 4 * resend); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		observe(a, 97) // an agent's batches, every half second here
	}
	for _, base := range []string{amUp, amDown} {
		as := amAlerts(t, base)
		require.Len(t, as, 1, base)
		require.Equal(t, "active", as[0].Status.State, base)
		require.True(t, as[0].EndsAt.After(time.Now()), "%s: endsAt %s has passed", base, as[0].EndsAt)
	}

	// Resolved after the restart: it ends in both, and each receiver call says so.
	observe(a, 10)
	for _, base := range []string{amUp, amDown} {
		require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Empty(c, amAlerts(t, base)) },
			15*time.Second, 100*time.Millisecond, "the resolved alert gone from %s's active alerts", base)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resolved := 0
		for _, p := range rcv.payloads() {
			if p.Status == "resolved" && len(p.Alerts) == 1 && p.Alerts[0].Labels["node"] == "wave-9" {
				resolved++
			}
		}
		assert.Equal(c, 2, resolved, "resolved notifications from the two Alertmanagers")
	}, 20*time.Second, 200*time.Millisecond, "both Alertmanagers deliver the resolution")
	firings := 0
	for _, p := range rcv.payloads() {
		if p.Status == "firing" {
			firings++
		}
	}
	require.Equal(t, 2, firings, "each Alertmanager pages once: the re-sends do not repeat the page")
}
