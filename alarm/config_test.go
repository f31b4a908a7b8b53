package alarm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
)

// TestExamples: the shipped examples load, and every channel a policy names exists.
func TestExamples(t *testing.T) {
	cfg, err := Load("../deploy/alarm.example.yaml")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8092", cfg.HTTP.Listen)
	require.True(t, cfg.Inhibit().Enabled)
	pols, err := policy.Load("../deploy/policies.example.yaml")
	require.NoError(t, err)
	require.Len(t, pols, 9)
	for _, p := range pols {
		for _, c := range p.Channels {
			require.Contains(t, cfg.Channels, c, "policy %s", p.Name)
		}
	}
}

// TestExampleCapacityPolicy runs the example's cluster-capacity policy, as the file
// ships it, on an engine with an injected clock: the balancer's node reporting a cluster
// mean peak utilisation above 0.6 pages once it has held for 30 minutes, not before; a
// utilisation below it pages nothing.
func TestExampleCapacityPolicy(t *testing.T) {
	pols, err := policy.Load("../deploy/policies.example.yaml")
	require.NoError(t, err)
	var p *policy.Policy
	for _, q := range pols {
		if q.Name == "cluster-capacity" {
			p = q
		}
	}
	require.NotNil(t, p, "no cluster-capacity policy in the example")
	require.Equal(t, metric.WaveClusterUtil, p.Metric)
	require.Equal(t, "avg_over(30m) > 0.6", p.Cond.String())
	require.Equal(t, 30*time.Minute, p.For)
	require.Equal(t, policy.Severity(3), p.Severity)

	// run feeds node wave-2's wave.cluster_utilisation (value v) every 10 s for two hours and
	// returns when the first alert fired (0: none) and the messages sent then.
	run := func(t *testing.T, v float64) (time.Duration, []notify.Message) {
		c := openCoord(t, t.TempDir())
		t.Cleanup(func() { c.Close() })
		clk := &clock{t: t0}
		out := &outbox{}
		e := NewEngine(EngineOptions{Policies: []*policy.Policy{p}, Log: &CoordLog{C: c}, Send: out.send,
			Now: clk.Now, Logger: quiet})
		out.e = e
		_, err := e.Restore(context.Background())
		require.NoError(t, err)
		for ; clk.Now().Sub(t0) <= 2*time.Hour; clk.Add(10 * time.Second) {
			e.Observe(batch("wave-2", clk.Now(), metric.Point{Name: metric.WaveClusterUtil, Value: v}))
			e.Tick()
			if ms := out.messages(); len(ms) > 0 {
				return clk.Now().Sub(t0), ms
			}
		}
		return 0, nil
	}

	at, ms := run(t, 0.65)
	require.Equal(t, 30*time.Minute, at, "fires once the condition held for 30 minutes")
	var channels []string
	for _, m := range ms {
		channels = append(channels, m.Receiver)
		require.Len(t, m.Alerts, 1)
		a := m.Alerts[0]
		require.Equal(t, "firing", a.Status)
		require.Equal(t, "cluster-capacity", a.Labels["alertname"])
		require.Equal(t, "wave-2", a.Labels["node"])
		require.Equal(t, "the cluster's waves use 0.65 of their cores on average at their peaks, above 0.6: add a wave "+
			"(binlake wave on a new host); it takes its share through the balancer (automatic mode) or "+
			"`binlake instance rebalance -apply`", a.Annotations["summary"])
	}
	require.ElementsMatch(t, p.Channels, channels, "one message per channel")

	at, ms = run(t, 0.55)
	require.Empty(t, ms, "a load below the threshold fired at %s", at)
}

func TestConfigErrors(t *testing.T) {
	cases := map[string]string{
		"bus:\n  brokerz: [x]\nchannels: {l: {kind: log}}\n":                                                                                                     "brokerz",
		"bus: {kind: none}\nchannels: {l: {kind: pager}}\n":                                                                                                      `alarm.yaml:2: field "channels.l.kind": "pager": want webhook, dingtalk, wecom, slack, alertmanager, email or log`,
		"bus: {kind: none}\n":                                                                                                                                    `alarm.yaml: field "channels": configure at least one (kind: log needs nothing else)`,
		"bus: {kind: none}\nchannels: {w: {kind: webhook}}\n":                                                                                                    `alarm.yaml:2: field "channels.w.url": required for kind webhook (or url_file, url_env)`,
		"bus: {kind: none}\ncoordinator: {kind: zk}\nchannels: {l: {kind: log}}\n":                                                                               `alarm.yaml:2: field "coordinator.servers": required: at least one ZooKeeper host:port`,
		"bus: {kind: none}\nnotify: {group_wait: 5}\nchannels: {l: {kind: log}}\n":                                                                               "invalid duration",
		"bus: {kind: none}\nnotify: {group_interval: -1s}\nchannels: {l: {kind: log}}\n":                                                                         `alarm.yaml:2: field "notify.group_interval": -1s: want 0 or more (0 takes the default)`,
		"bus: {kind: none}\nnotify: {queue: -1}\nchannels: {l: {kind: log}}\n":                                                                                   `alarm.yaml:2: field "notify.queue": -1: want 0 or more (0 takes the default)`,
		"bus: {kind: none}\nnotify: {min_backoff: 1m, max_backoff: 1s}\nchannels: {l: {kind: log}}\n":                                                            `field "notify.min_backoff": 1m0s is above max_backoff 1s`,
		"bus: {kind: none}\nhttp: {external_url: 'ftp://x'}\nchannels: {l: {kind: log}}\n":                                                                       `field "http.external_url": "ftp://x": want an http:// or https:// URL with a host`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager}}\n":                                                                                              `field "channels.am.alertmanager.urls": required for kind alertmanager`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: [am:9093]}}}\n":                                                             `field "channels.am.alertmanager.urls[0]": "am:9093": want http:// or https://host:port`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093/api/v2/alerts']}}}\n":                                      `"http://am:9093/api/v2/alerts": want the Alertmanager's base URL (http://am:9093), without the API's path`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093/am/api/v2/alerts/']}}}\n":                                  `"http://am:9093/am/api/v2/alerts/": want the Alertmanager's base URL (http://am:9093/am), without the API's path`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093/?x=1']}}}\n":                                               `"http://am:9093/?x=1": want http:// or https://host:port, and the path`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093'], username: u}}}\n":                                       `field "channels.am.alertmanager.password_file": required with username`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093'], username: u, password_env: P}, bearer_token_env: T}}\n": `field "channels.am.bearer_token_file": basic auth (alertmanager.username) or a bearer token, not both`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093'], tls: {ca_file: /x}}}}\n":                                `field "channels.am.alertmanager.tls": set, but the URL is not https://`,
		"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://am:9093'], resend_interval: 100ms}}}\n":                            `field "channels.am.alertmanager.resend_interval": 100ms: want at least 1s`,
	}
	for yaml, want := range cases {
		p := filepath.Join(t.TempDir(), "alarm.yaml")
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		_, err := Load(p)
		require.ErrorContains(t, err, want, yaml)
		require.True(t, strings.Contains(err.Error(), p), "names the file: %v", err)
	}
	var ce *config.Error
	p := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  l:\n    kind: log\n    colour: red\n"), 0o600))
	_, err := Load(p)
	require.True(t, errors.As(err, &ce))
	require.Equal(t, 5, ce.Line)
}

// TestConfigReportsEveryRefusedValue: every value Validate refuses is reported at once,
// in the file's order, each at its line and key: not the first alone, to fix and run
// again. A value that can only be checked against a refused one is left out.
func TestConfigReportsEveryRefusedValue(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // after "alarm.yaml", in order; nil: valid
	}{
		{"valid", "bus: {kind: none}\nevaluation: {interval: 1s}\nnotify: {queue: 10}\nchannels: {l: {kind: log}}\n", nil},
		{"three sections", "http:\n  external_url: ftp://alarm\nbus: {kind: none}\nevaluation:\n  interval: 10ms\nnotify:\n  queue: -1\nchannels: {l: {kind: log}}\n", []string{
			`:2: field "http.external_url": "ftp://alarm": want an http:// or https:// URL with a host`,
			`:5: field "evaluation.interval": 10ms: want at least 100ms`,
			`:7: field "notify.queue": -1: want 0 or more (0 takes the default)`,
		}},
		{"shared sections and channels", "bus:\n  kind: kafka\n  start: latest\ncoordinator:\n  kind: zk\ninhibition:\n  equal: [node, \"a b\"]\n" +
			"channels:\n  w: {kind: webhook, url: http://h/, url_env: X}\n  m: {kind: email}\n", []string{
			`:1: field "bus.brokers": required: at least one host:port (or bus.kind: none to run without the bus)`,
			`:3: field "bus.start": "latest": want oldest or newest`,
			`:4: field "coordinator.servers": required: at least one ZooKeeper host:port`,
			`:7: field "inhibition.equal[1]": "a b" is not a label name`,
			`:9: field "channels.w.url_file": set url, or url_file and url_env, not both`,
			`:10: field "channels.m.smtp.addr": required for kind email`,
			`:10: field "channels.m.smtp.from": required for kind email`,
			`:10: field "channels.m.smtp.to": required for kind email`,
		}},
		{"an alertmanager channel", "bus: {kind: none}\nchannels:\n  am:\n    kind: alertmanager\n    bearer_token_env: \"1X\"\n    alertmanager:\n" +
			"      urls: ['am:9093']\n      resend_interval: 100ms\n      username: u\n      tls: {cert_file: c.pem}\n", []string{
			// Keys the file leaves out are reported at the line of their section.
			`:3: field "channels.am.bearer_token_file": basic auth (alertmanager.username) or a bearer token, not both`,
			`:5: field "channels.am.bearer_token_env": "1X" is not an environment variable name`,
			`:6: field "channels.am.alertmanager.password_file": required with username (or password_env)`,
			`:7: field "channels.am.alertmanager.urls[0]": "am:9093": want http:// or https://host:port, and the path Alertmanager is served under if any (--web.route-prefix), without credentials or a query`,
			`:8: field "channels.am.alertmanager.resend_interval": 100ms: want at least 1s`,
			// Not also "set, but the URL is not https://": the URL is refused.
			`:10: field "channels.am.alertmanager.tls.key_file": required with cert_file`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "alarm.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tc.yaml), 0o600))
			_, err := Load(p)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, p+strings.Join(tc.want, "\n"+p))
		})
	}
}

func TestChannelSecretsStayHidden(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "url")
	require.NoError(t, os.WriteFile(urlFile, []byte("https://oapi.dingtalk.com/robot/send?access_token=TOPSECRET\n"), 0o600))
	p := filepath.Join(dir, "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  d: {kind: dingtalk, url_file: "+urlFile+"}\n"), 0o600))
	cfg, err := Load(p)
	require.NoError(t, err)
	chans, desc, err := cfg.BuildChannels(quiet)
	require.NoError(t, err)
	require.Contains(t, chans, "d")
	require.Equal(t, []string{"d=dingtalk"}, desc)
	require.NotContains(t, strings.Join(desc, " "), "TOPSECRET")
}

// Every channel that cannot be built is reported, in a stable order, each naming its
// key: not one at a time, a different one on each run.
func TestBuildChannelsReportsEveryMissingSecret(t *testing.T) {
	p := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`bus: {kind: none}
channels:
  webhook: {kind: webhook, url_file: /nonexistent/webhook.url}
  ding: {kind: dingtalk, url_file: /nonexistent/ding.url, secret_file: /nonexistent/ding.secret}
  mail:
    kind: email
    smtp: {addr: "smtp:587", from: a@b, to: [c@d], username: u, password_file: /nonexistent/smtp.pw}
  log: {kind: log}
`), 0o600))
	cfg, err := Load(p)
	require.NoError(t, err)
	want := strings.Join([]string{
		`field "channels.ding.url_file": read secret: open /nonexistent/ding.url: no such file or directory`,
		`field "channels.ding.secret_file": read secret: open /nonexistent/ding.secret: no such file or directory`,
		`field "channels.mail.smtp.password_file": read secret: open /nonexistent/smtp.pw: no such file or directory`,
		`field "channels.webhook.url_file": read secret: open /nonexistent/webhook.url: no such file or directory`,
	}, "\n")
	for range 5 { // map order changes from run to run; the report must not
		_, _, err := cfg.BuildChannels(quiet)
		require.EqualError(t, err, want)
	}
}

// A channel's address or URL pasted with a user and password is refused naming its key,
// the password never shown (docs/design.md: no secret is echoed in an error).
func TestChannelAddressesHidePasswords(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"bus: {kind: none}\nchannels: {am: {kind: alertmanager, alertmanager: {urls: ['http://u:Hunter2M@am:9093']}}}\n",
			`field "channels.am.alertmanager.urls[0]": "http://u:***@am:9093": want http:// or https://host:port`},
		{"bus: {kind: none}\nchannels:\n  mail:\n    kind: email\n    smtp: {addr: \"u:Hunter2M@smtp:587\", from: a@b, to: [c@d]}\n",
			`field "channels.mail.smtp": email addr "u:***@smtp:587": want host:port, without a user or password`},
		{"bus: {kind: none}\nchannels:\n  mail:\n    kind: email\n    smtp: {addr: \"u:Hunter2M@smtp\", from: a@b, to: [c@d]}\n",
			`field "channels.mail.smtp": email addr "u:***@smtp": want host:port, without a user or password`},
		{"bus: {kind: none}\nhttp: {external_url: 'https://u:Hunter2M@alarm.example'}\nchannels: {l: {kind: log}}\n",
			`field "http.external_url": credentials in the URL are refused`},
	} {
		p := filepath.Join(t.TempDir(), "alarm.yaml")
		require.NoError(t, os.WriteFile(p, []byte(tc.yaml), 0o600))
		cfg, err := Load(p)
		if err == nil {
			_, _, err = cfg.BuildChannels(quiet)
		}
		require.ErrorContains(t, err, tc.want, tc.yaml)
		require.NotContains(t, err.Error(), "Hunter2M")
	}
}
