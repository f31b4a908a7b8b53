package notify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
)

var (
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	t0    = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
)

func sample() Message {
	return Message{
		Receiver: "ops", GroupKey: "high-cpu/P1", ExternalURL: "http://alarm.example:8091",
		GroupLabels: map[string]string{"alertname": "high-cpu", "severity": "P1"},
		Alerts: []Alert{
			{Status: StatusFiring, Labels: map[string]string{"alertname": "high-cpu", "severity": "P1", "node": "wave-1", "team": "dba"},
				Annotations: map[string]string{"summary": "CPU on wave-1 is 97"}, StartsAt: t0, Value: 97, Fingerprint: "00000000000000aa"},
			{Status: StatusResolved, Labels: map[string]string{"alertname": "high-cpu", "severity": "P1", "node": "wave-2", "team": "dba"},
				Annotations: map[string]string{"summary": "CPU on wave-2 is 12"}, StartsAt: t0, EndsAt: t0.Add(5 * time.Minute), Value: 12, Fingerprint: "00000000000000bb"},
		},
	}
}

// TestWebhookPayload checks the Alertmanager v4 body field by field, as a receiver
// decodes it.
func TestWebhookPayload(t *testing.T) {
	var (
		mu   sync.Mutex
		got  map[string]any
		auth string
		ct   string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auth, ct = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
	}))
	defer srv.Close()
	h, err := NewHTTP(HTTPOptions{Format: FormatWebhook, URL: asSecret(srv.URL + "/hook"), BearerToken: "tok"})
	require.NoError(t, err)
	require.NoError(t, h.Notify(context.Background(), sample()))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "Bearer tok", auth)
	require.Equal(t, "application/json", ct)
	require.Equal(t, "4", got["version"])
	require.Equal(t, "high-cpu/P1", got["groupKey"])
	require.Equal(t, float64(0), got["truncatedAlerts"])
	require.Equal(t, "firing", got["status"])
	require.Equal(t, "ops", got["receiver"])
	require.Equal(t, map[string]any{"alertname": "high-cpu", "severity": "P1"}, got["groupLabels"])
	require.Equal(t, map[string]any{"alertname": "high-cpu", "severity": "P1", "team": "dba"}, got["commonLabels"])
	require.Equal(t, map[string]any{}, got["commonAnnotations"])
	require.Equal(t, "http://alarm.example:8091", got["externalURL"])
	alerts := got["alerts"].([]any)
	require.Len(t, alerts, 2)
	a0, a1 := alerts[0].(map[string]any), alerts[1].(map[string]any)
	require.Equal(t, "firing", a0["status"])
	require.Equal(t, map[string]any{"alertname": "high-cpu", "severity": "P1", "node": "wave-1", "team": "dba"}, a0["labels"])
	require.Equal(t, map[string]any{"summary": "CPU on wave-1 is 97"}, a0["annotations"])
	require.Equal(t, "2026-11-29T14:00:00Z", a0["startsAt"])
	require.Equal(t, "0001-01-01T00:00:00Z", a0["endsAt"], "Alertmanager's zero time while firing")
	require.Equal(t, "http://alarm.example:8091/v1/alerts?fingerprint=00000000000000aa", a0["generatorURL"])
	require.Equal(t, "00000000000000aa", a0["fingerprint"])
	require.Equal(t, "resolved", a1["status"])
	require.Equal(t, "2026-11-29T14:05:00Z", a1["endsAt"])
	require.Len(t, a0, 7, "exactly the v4 alert fields")
	require.Len(t, got, 10, "exactly the v4 top-level fields")
}

func TestChatFormats(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies = map[string]map[string]any{}
		query  = map[string]string{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&b))
		mu.Lock()
		bodies[r.URL.Path] = b
		query[r.URL.Path] = r.URL.RawQuery
		mu.Unlock()
		if r.URL.Path == "/wecom-fail" {
			io.WriteString(w, `{"errcode":93000,"errmsg":"invalid webhook url"}`)
			return
		}
		io.WriteString(w, `{"errcode":0,"errmsg":"ok"}`)
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, f := range []string{FormatDingTalk, FormatWeCom, FormatSlack} {
		h, err := NewHTTP(HTTPOptions{Format: f, URL: asSecret(srv.URL + "/" + f + "?access_token=x"), Secret: "s3", Now: func() time.Time { return t0 }})
		require.NoError(t, err)
		require.NoError(t, h.Notify(ctx, sample()), f)
	}
	d := bodies["/dingtalk"]
	require.Equal(t, "markdown", d["msgtype"])
	md := d["markdown"].(map[string]any)
	require.Contains(t, md["title"], "[FIRING] P1 high-cpu")
	require.Contains(t, md["text"], "CPU on wave-1 is 97")
	require.Contains(t, query["/dingtalk"], "timestamp=1795960800000")
	require.Contains(t, query["/dingtalk"], "sign=")
	w := bodies["/wecom"]
	require.Equal(t, "markdown", w["msgtype"])
	require.Contains(t, w["markdown"].(map[string]any)["content"], "RESOLVED CPU on wave-2 is 12")
	s := bodies["/slack"]
	require.Contains(t, s["text"], "[FIRING] P1 high-cpu (1 firing, 1 resolved)")
	require.NotEmpty(t, s["blocks"])

	h, err := NewHTTP(HTTPOptions{Format: FormatWeCom, URL: asSecret(srv.URL + "/wecom-fail")})
	require.NoError(t, err)
	require.ErrorContains(t, h.Notify(ctx, sample()), "errcode 93000")
}

func asSecret(s string) config.Secret { return config.Secret(s) }

func TestHTTPErrorsHideTheURL(t *testing.T) {
	_, err := NewHTTP(HTTPOptions{Format: FormatDingTalk, URL: "ftp://x/robot?access_token=SECRET"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "SECRET")
	h, err := NewHTTP(HTTPOptions{Format: FormatWebhook, URL: "http://127.0.0.1:1/robot?access_token=SECRET"})
	require.NoError(t, err)
	err = h.Notify(context.Background(), sample())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "SECRET")
}

// TestDispatcherIsolatesChannels: a channel that always fails is retried with back-off and
// counted, while the healthy channel delivers everything at once.
func TestDispatcherIsolatesChannels(t *testing.T) {
	var okCount, badCalls, perm atomic.Int64
	block := make(chan struct{})
	badEntered := make(chan struct{}, 1) // the bad channel's first attempt has begun
	ok := notifierFunc(func(context.Context, Message) error { okCount.Add(1); return nil })
	bad := notifierFunc(func(ctx context.Context, _ Message) error {
		if badCalls.Add(1) == 1 {
			badEntered <- struct{}{}
		}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return errors.New("down")
	})
	permanent := notifierFunc(func(context.Context, Message) error { perm.Add(1); return ErrPermanent })
	reg := prometheus.NewRegistry()
	d, err := NewDispatcher(map[string]Notifier{"ok": ok, "bad": bad, "perm": permanent}, DispatcherOptions{
		// The attempt timeout is far beyond the test so that only close(block) ends the
		// bad channel's hanging attempt, however slowly the machine runs.
		Attempts: 3, Backoff: time.Millisecond, Timeout: time.Hour, Logger: quiet, Registerer: reg})
	require.NoError(t, err)
	d.Start()
	for i := 0; i < 10; i++ {
		for _, ch := range []string{"ok", "bad", "perm"} {
			m := sample()
			m.Receiver = ch
			require.True(t, d.Enqueue(m))
		}
	}
	require.False(t, d.Enqueue(Message{Receiver: "nope"}))
	// The workers start in any order: the healthy channel may have delivered everything
	// before the bad one began its first attempt, so wait for that attempt first.
	select {
	case <-badEntered:
	case <-time.After(20 * time.Second):
		t.Fatal("timed out: the bad channel never tried its first message")
	}
	require.Eventually(t, func() bool { return okCount.Load() == 10 }, 20*time.Second, 5*time.Millisecond, "the healthy channel delivers while the other hangs")
	require.Equal(t, int64(1), badCalls.Load(), "the failing channel is still on its first attempt")
	close(block)
	require.Eventually(t, func() bool { return counter(d.failed.WithLabelValues("bad")) == 10 }, 20*time.Second, 5*time.Millisecond, "every bad message fails after its attempts")
	require.Equal(t, int64(30), badCalls.Load(), "three attempts each")
	require.Equal(t, 10.0, counter(d.sent.WithLabelValues("ok")))
	require.Eventually(t, func() bool { return counter(d.failed.WithLabelValues("perm")) == 10 }, 20*time.Second, 5*time.Millisecond, "permanent failures are given up")
	require.Equal(t, int64(10), perm.Load(), "a permanent failure is not retried")
	d.Close(5 * time.Second)
	d.Close(time.Second) // idempotent
}

func TestDispatcherQueueFull(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	n := notifierFunc(func(ctx context.Context, _ Message) error { <-block; return nil })
	d, err := NewDispatcher(map[string]Notifier{"slow": n}, DispatcherOptions{Queue: 2, Logger: quiet})
	require.NoError(t, err)
	m := sample()
	m.Receiver = "slow"
	require.True(t, d.Enqueue(m))
	require.True(t, d.Enqueue(m))
	require.False(t, d.Enqueue(m), "a full queue drops instead of blocking")
	require.Equal(t, 1.0, counter(d.drop.WithLabelValues("slow")))
}

// Prepare sees each message when its turn comes on its channel, after the one before it
// there finished (Done told of it): what it returns is sent, and a message it drops is
// neither sent nor reported.
func TestDispatcherPrepare(t *testing.T) {
	var sent []string
	var mu sync.Mutex
	n := notifierFunc(func(_ context.Context, m Message) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, m.GroupKey+":"+m.Alerts[0].Status)
		return nil
	})
	var done []string
	d, err := NewDispatcher(map[string]Notifier{"c": n}, DispatcherOptions{Logger: quiet,
		Done: func(m Message, _ error) { mu.Lock(); done = append(done, m.GroupKey); mu.Unlock() },
		Prepare: func(m Message) (Message, bool) {
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, done, len(sent), "the message before is finished")
			if m.GroupKey == "drop" {
				return m, false
			}
			m.Alerts = m.Alerts[1:]
			return m, true
		}})
	require.NoError(t, err)
	d.Start()
	for _, key := range []string{"a", "drop", "b"} {
		m := sample()
		m.Receiver, m.GroupKey = "c", key
		m.Alerts = []Alert{{Status: StatusFiring}, {Status: StatusResolved}}
		require.True(t, d.Enqueue(m))
	}
	d.Close(5 * time.Second)
	require.Equal(t, []string{"a:resolved", "b:resolved"}, sent, "what Prepare kept, in order")
	require.Equal(t, []string{"a", "b"}, done)
}

type notifierFunc func(context.Context, Message) error

func (f notifierFunc) Notify(ctx context.Context, m Message) error { return f(ctx, m) }

// --- SMTP: a real server (emersion/go-smtp) with STARTTLS and PLAIN auth. ---

type mailbox struct {
	mu    sync.Mutex
	mails []smtpMail
	authd []string
}

type smtpMail struct {
	from string
	to   []string
	data string
	tls  bool
}

type smtpBackend struct{ box *mailbox }

func (b smtpBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &smtpSession{box: b.box, conn: c}, nil
}

type smtpSession struct {
	box  *mailbox
	conn *smtp.Conn
	m    smtpMail
	user string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != "alarm" || password != "pw" {
			return errors.New("bad credentials")
		}
		s.user = username
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.user == "" {
		return errors.New("auth required")
	}
	s.m = smtpMail{from: from}
	return nil
}
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.m.to = append(s.m.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, s.m.tls = s.conn.TLSConnectionState()
	s.m.data = string(b)
	s.box.mu.Lock()
	s.box.mails = append(s.box.mails, s.m)
	s.box.authd = append(s.box.authd, s.user)
	s.box.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        {}
func (s *smtpSession) Logout() error { return nil }

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func startSMTP(t *testing.T, withTLS bool) (string, *mailbox, *x509.CertPool) {
	box := &mailbox{}
	s := smtp.NewServer(smtpBackend{box})
	s.Domain = "127.0.0.1"
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	var pool *x509.CertPool
	if withTLS {
		var cert tls.Certificate
		cert, pool = selfSigned(t)
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	} else {
		s.AllowInsecureAuth = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String(), box, pool
}

func TestEmailSTARTTLSAndAuth(t *testing.T) {
	addr, box, pool := startSMTP(t, true)
	e, err := NewEmail(EmailOptions{Addr: addr, From: "alarm@binlake.test", To: []string{"dba@binlake.test", "ops@binlake.test"},
		Username: "alarm", Password: "pw", TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	require.NoError(t, e.Notify(context.Background(), sample()))
	box.mu.Lock()
	defer box.mu.Unlock()
	require.Len(t, box.mails, 1)
	m := box.mails[0]
	require.True(t, m.tls, "the mail went over STARTTLS")
	require.Equal(t, []string{"alarm"}, box.authd)
	require.Equal(t, "alarm@binlake.test", m.from)
	require.Equal(t, []string{"dba@binlake.test", "ops@binlake.test"}, m.to)
	require.Contains(t, m.data, "Subject: [FIRING] P1 high-cpu (1 firing, 1 resolved)\r\n")
	require.Contains(t, m.data, "To: dba@binlake.test, ops@binlake.test\r\n")
	require.Contains(t, m.data, "- FIRING CPU on wave-1 is 97 (node wave-1, value 97, since 2026-11-29T14:00:00Z)")
	require.Contains(t, m.data, "- RESOLVED CPU on wave-2 is 12")
}

func TestEmailRefusesCleartextWhenTLSRequired(t *testing.T) {
	addr, box, _ := startSMTP(t, false)
	e, err := NewEmail(EmailOptions{Addr: addr, From: "a@b.test", To: []string{"c@d.test"}, Username: "alarm", Password: "pw"})
	require.NoError(t, err)
	err = e.Notify(context.Background(), sample())
	require.ErrorIs(t, err, ErrPermanent)
	require.ErrorContains(t, err, "STARTTLS")
	// Opportunistic mode sends in clear to a server without STARTTLS (here on loopback).
	e, err = NewEmail(EmailOptions{Addr: addr, From: "a@b.test", To: []string{"c@d.test"}, Username: "alarm", Password: "pw", StartTLS: StartTLSOpportunistic})
	require.NoError(t, err)
	require.NoError(t, e.Notify(context.Background(), sample()))
	box.mu.Lock()
	require.Len(t, box.mails, 1)
	box.mu.Unlock()
	// Wrong password: the error says AUTH and never shows the password.
	e, err = NewEmail(EmailOptions{Addr: addr, From: "a@b.test", To: []string{"c@d.test"}, Username: "alarm", Password: "hunter2", StartTLS: StartTLSOff})
	require.NoError(t, err)
	err = e.Notify(context.Background(), sample())
	require.ErrorContains(t, err, "AUTH")
	require.NotContains(t, err.Error(), "hunter2")
}

func TestEmailOptions(t *testing.T) {
	for _, o := range []EmailOptions{
		{Addr: "nohost", From: "a@b.c", To: []string{"x@y.z"}},
		{Addr: "h:25", From: "not an address", To: []string{"x@y.z"}},
		{Addr: "h:25", From: "a@b.c"},
		{Addr: "h:25", From: "a@b.c", To: []string{"x@y.z"}, StartTLS: "maybe"},
	} {
		_, err := NewEmail(o)
		require.Error(t, err)
	}
	_ = strings.ToUpper
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// TestTextTitleFromCommonLabels: a policy whose group_by leaves out alertname and severity
// still titles its messages with them, which all the alerts of a group share.
func TestTextTitleFromCommonLabels(t *testing.T) {
	m := sample()
	m.GroupLabels = map[string]string{"team": "dba"}
	title, _ := Text(m, false)
	require.Equal(t, "[FIRING] P1 high-cpu (1 firing, 1 resolved)", title)
}

// TestChannelFailingGauge: binlake_alarm_channel_failing is 0 from the start, 1 once a
// notification is given up, and 0 again once the channel delivers one (a page the alarm
// sends again after its lease): an outage over is no alert for the next 15 minutes.
func TestChannelFailingGauge(t *testing.T) {
	var down atomic.Bool
	var calls atomic.Int64
	n := notifierFunc(func(context.Context, Message) error {
		calls.Add(1)
		if down.Load() {
			return errors.New("down")
		}
		return nil
	})
	d, err := NewDispatcher(map[string]Notifier{"am": n}, DispatcherOptions{Attempts: 2, Backoff: time.Millisecond, Logger: quiet, Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	d.Start()
	defer d.Close(time.Second)
	failing := func() float64 {
		var m dto.Metric
		if err := d.failing.WithLabelValues("am").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	require.Equal(t, 0.0, failing())
	down.Store(true)
	m := sample()
	m.Receiver = "am"
	require.True(t, d.Enqueue(m))
	require.Eventually(t, func() bool { return failing() == 1 }, 20*time.Second, 5*time.Millisecond, "a notification given up marks the channel failing")
	require.Equal(t, int64(2), calls.Load())
	down.Store(false)
	require.True(t, d.Enqueue(m))
	require.Eventually(t, func() bool { return failing() == 0 }, 20*time.Second, 5*time.Millisecond, "a delivery ends it")
	require.Equal(t, 1.0, counter(d.failed.WithLabelValues("am")), "the failure stays counted")
}
