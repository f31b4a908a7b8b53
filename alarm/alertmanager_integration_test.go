package alarm

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
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

// TestAlertmanagerUnderAPathIntegration: an Alertmanager served under a path (its
// --web.route-prefix, as behind a reverse proxy), configured by its base URL with that
// path as an operator writes it in alarm.yaml, gets the alarm's alert; the alarm adds
// the API's path after the operator's.
func TestAlertmanagerUnderAPathIntegration(t *testing.T) {
	rcv := newReceiver(t)
	base, _ := testenv.StartAlertmanagerUnder(t, testenv.FreeAddr(t), "/alertmanager", rcv.srv.URL)
	path := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(path, []byte("bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['"+base+"/']}}}\n"), 0o600))
	cfg, err := Load(path)
	require.NoError(t, err)
	chans, _, err := cfg.BuildChannels(quiet)
	require.NoError(t, err)
	require.NoError(t, chans["am"].Notify(context.Background(), notify.Message{Alerts: []notify.Alert{
		{Status: notify.StatusFiring, Labels: map[string]string{"alertname": "cpu", "node": "wave-9"}, StartsAt: time.Now()}}}))
	as := amAlerts(t, base)
	require.Len(t, as, 1)
	require.Equal(t, "wave-9", as[0].Labels["node"])
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ps := rcv.payloads()
		if assert.Len(c, ps, 1) {
			assert.Equal(c, "firing", ps[0].Status)
		}
	}, 15*time.Second, 100*time.Millisecond, "the Alertmanager under a path delivers the alert to its receiver")
}

// gate is a TCP proxy to addr that can be shut (connections refused, open ones cut) and
// opened again on the same address: an Alertmanager out of the alarm's reach.
type gate struct {
	t      *testing.T
	addr   string // where it listens
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newGate(t *testing.T, target string) *gate {
	g := &gate{t: t, addr: testenv.FreeAddr(t), target: target}
	g.open()
	t.Cleanup(g.shut)
	return g
}

func (g *gate) open() {
	ln, err := net.Listen("tcp", g.addr)
	require.NoError(g.t, err)
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", g.target)
			if err != nil {
				c.Close()
				continue
			}
			g.mu.Lock()
			g.conns = append(g.conns, c, u)
			g.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

// TestAlertmanagerGetsAResolutionItMissed: an alert resolves while its Alertmanager is out
// of reach (the resolution's attempts give up); once it is reachable again, the alarm's
// re-sends end the alert there at its resolution, and Alertmanager tells its receiver so.
// Before, only firing alerts were sent again: the resolution was lost, and the alert
// lapsed at the endsAt horizon of its last re-send (or, in an Alertmanager that restarted
// meanwhile, never ended at all).
func TestAlertmanagerGetsAResolutionItMissed(t *testing.T) {
	rcv := newReceiver(t)
	amAddr := testenv.FreeAddr(t)
	amBase, _ := testenv.StartAlertmanager(t, amAddr, rcv.srv.URL)
	g := newGate(t, amAddr)
	const resend = 3 * time.Second // endsAt 12 s ahead of every send
	ch, err := notify.NewAlertmanager(notify.AlertmanagerOptions{URLs: []string{"http://" + g.addr}, Resend: resend, Timeout: time.Second})
	require.NoError(t, err)
	c := openCoord(t, t.TempDir())
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": ch},
		Coordinator: c, EvalInterval: 50 * time.Millisecond, Logger: quiet, Dispatch: notify.DispatcherOptions{Attempts: 1}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { err := a.Run(ctx); c.Close(); done <- err }()
	defer func() { cancel(); <-done }()
	observe := func(v float64) {
		data, err := metric.Encode(batch("wave-9", time.Now().UTC(), cpu(v)))
		require.NoError(t, err)
		require.NoError(t, a.ObserveRaw(data))
	}

	observe(97)
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Len(c, amAlerts(t, amBase), 1) },
		15*time.Second, 100*time.Millisecond, "the alert in Alertmanager")
	g.shut()
	observe(10)
	var resolvedAt time.Time
	require.Eventually(t, func() bool {
		for _, v := range a.Engine().Alerts() {
			if v.ResolvedAt != nil {
				resolvedAt = *v.ResolvedAt
			}
		}
		return !resolvedAt.IsZero()
	}, 5*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second) // the resolution's one attempt fails
	g.open()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var got []notify.WebhookAlert
		for _, p := range rcv.payloads() {
			if p.Status == "resolved" {
				got = append(got, p.Alerts...)
			}
		}
		if assert.Len(c, got, 1, "Alertmanager's resolved notification") {
			assert.WithinDuration(c, resolvedAt, got[0].EndsAt, 10*time.Millisecond, "it ends at its resolution, not at a re-send's horizon")
		}
	}, 20*time.Second, 200*time.Millisecond)
}
