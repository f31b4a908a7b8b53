package alarm

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/config"
)

// Kinds in alarm.yaml.
const (
	BusKafka      = config.BusKafka
	BusNone       = config.BusNone
	CoordSingle   = config.CoordSingle
	CoordZK       = config.CoordZK
	TokenEnv      = "BINLAKE_ALARM_TOKEN"
	defaultListen = config.AlarmListen
	DefaultGroup  = "binlake-alarm"
)

// Config is alarm.yaml (deploy/alarm.example.yaml documents every field).
type Config struct {
	Log  config.Log `yaml:"log"`
	HTTP struct {
		config.HTTP `yaml:",inline"`
		ExternalURL string `yaml:"external_url"`
	} `yaml:"http"`
	// Bus.Group is shared by every alarm process, so each node's batches are evaluated
	// by exactly one of them.
	Bus         config.Bus         `yaml:"bus"`
	Coordinator config.Coordinator `yaml:"coordinator"`
	Evaluation  struct {
		Interval          config.Duration `yaml:"interval"`
		StaleIntervals    float64         `yaml:"stale_intervals"`
		ResolvedRetention config.Duration `yaml:"resolved_retention"`
	} `yaml:"evaluation"`
	Notify struct {
		GroupWait     config.Duration `yaml:"group_wait"`
		GroupInterval config.Duration `yaml:"group_interval"`
		Attempts      int             `yaml:"attempts"`
		MinBackoff    config.Duration `yaml:"min_backoff"`
		MaxBackoff    config.Duration `yaml:"max_backoff"`
		Timeout       config.Duration `yaml:"timeout"`
		Queue         int             `yaml:"queue"`
	} `yaml:"notify"`
	Inhibition struct {
		Enabled *bool    `yaml:"enabled"`
		Equal   []string `yaml:"equal"`
	} `yaml:"inhibition"`
	Channels map[string]Channel `yaml:"channels"`
}

// RenamedKeys are the keys of older alarm.yaml files, now the same as every role's.
func (*Config) RenamedKeys() map[string]string {
	return map[string]string{"channels.*.smtp.ca_file": "channels.*.smtp.tls.ca_file",
		"channels.*.smtp.insecure_skip_verify": "channels.*.smtp.tls.insecure_skip_verify",
		"notify.backoff":                       "notify.min_backoff"}
}

// RetiredKeys are the inline secrets older alarm.yaml files could hold.
func (*Config) RetiredKeys() map[string]string {
	return map[string]string{"http.token": config.InlineSecret("token"),
		"channels.*.bearer_token": config.InlineSecret("bearer_token"), "channels.*.secret": config.InlineSecret("secret"),
		"channels.*.smtp.password": config.InlineSecret("password"), "bus.sasl.password": config.InlineSecret("password"),
		"coordinator.auth.password": config.InlineSecret("password")}
}

// Channel is one notification channel. Its secrets (a bearer token, a signing secret,
// a password) come from a file or a variable, never inline (config.SecretRef).
type Channel struct {
	Kind string `yaml:"kind"` // webhook, dingtalk, wecom, slack, alertmanager, email or log
	// HTTP kinds. The URL is an address, and may be inline; robot URLs carry their
	// access token, so they may come from a file or a variable instead, as a secret.
	URL             config.Secret `yaml:"url"`
	URLFile         string        `yaml:"url_file"`
	URLEnv          string        `yaml:"url_env"`
	BearerTokenFile string        `yaml:"bearer_token_file"`
	BearerTokenEnv  string        `yaml:"bearer_token_env"`
	// The DingTalk signing secret.
	SecretFile string `yaml:"secret_file"`
	SecretEnv  string `yaml:"secret_env"`
	// Alertmanager: its v2 API, every URL (an Alertmanager cluster) gets every alert.
	// Basic auth (username, password_file or password_env) or the channel's
	// bearer_token_file / bearer_token_env.
	Alertmanager struct {
		URLs []string `yaml:"urls"`
		// ResendInterval is how often firing alerts are sent again (1m); each ends four
		// of them ahead unless sent again.
		ResendInterval config.Duration   `yaml:"resend_interval"`
		Timeout        config.Duration   `yaml:"timeout"`
		TLS            *config.ClientTLS `yaml:"tls"`
		Username       string            `yaml:"username"`
		PasswordFile   string            `yaml:"password_file"`
		PasswordEnv    string            `yaml:"password_env"`
	} `yaml:"alertmanager"`
	// Email.
	SMTP struct {
		Addr         string   `yaml:"addr"`
		From         string   `yaml:"from"`
		To           []string `yaml:"to"`
		Username     string   `yaml:"username"`
		PasswordFile string   `yaml:"password_file"`
		PasswordEnv  string   `yaml:"password_env"`
		StartTLS     string   `yaml:"starttls"`
		// TLS is the client's block; its server name defaults to addr's host.
		TLS *config.ClientTLS `yaml:"tls"`
	} `yaml:"smtp"`
}

// secrets are the channel's secrets by key (relative to the channel), for its kind.
func (ch *Channel) secrets() map[string]config.SecretRef {
	switch ch.Kind {
	case "email":
		return map[string]config.SecretRef{"smtp.password": {File: ch.SMTP.PasswordFile, Env: ch.SMTP.PasswordEnv}}
	case "log":
		return nil
	case notify.FormatAlertmanager:
		return map[string]config.SecretRef{"alertmanager.password": {File: ch.Alertmanager.PasswordFile, Env: ch.Alertmanager.PasswordEnv},
			"bearer_token": {File: ch.BearerTokenFile, Env: ch.BearerTokenEnv}}
	}
	return map[string]config.SecretRef{"url": {File: ch.URLFile, Env: ch.URLEnv},
		"bearer_token": {File: ch.BearerTokenFile, Env: ch.BearerTokenEnv}, "secret": {File: ch.SecretFile, Env: ch.SecretEnv}}
}

// Load reads, defaults and validates alarm.yaml.
func Load(path string) (Config, error) {
	var c Config
	err := config.Load(path, &c)
	return c, err
}

// Validate fills the defaults and checks the values; config.Load calls it. Every
// problem is reported, joined, each naming its key (config.Locate puts them in the
// file's order).
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad(field, format, args...))
	}
	errs = append(errs, c.Log.Validate(), c.HTTP.Validate(defaultListen, TokenEnv))
	if u := c.HTTP.ExternalURL; u != "" {
		// The alerts' links to the alarm are built on it.
		if config.URLHasCredentials(u) {
			// Every alert's link would carry them to its channels.
			bad("http.external_url", "credentials in the URL are refused: every alert's link would carry them")
		} else if problem := config.BaseURLProblem(u); problem != "" {
			bad("http.external_url", "%q has %s", u, problem)
		} else if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("http.external_url", "%q: want an http:// or https:// URL with a host", u)
		}
	}
	errs = append(errs, c.Bus.Validate(DefaultGroup, config.StartNewest), c.Coordinator.Validate("./data/alarm-coord.json"))
	e := c.Evaluation
	for _, f := range []struct {
		key      string
		v        any
		negative bool
	}{{"interval", e.Interval, e.Interval < 0}, {"stale_intervals", e.StaleIntervals, e.StaleIntervals < 0},
		{"resolved_retention", e.ResolvedRetention, e.ResolvedRetention < 0}} {
		if f.negative {
			bad("evaluation."+f.key, "%v: want 0 or more", f.v)
		}
	}
	if e.Interval > 0 && e.Interval.D() < 100*time.Millisecond {
		bad("evaluation.interval", "%s: want at least 100ms", e.Interval)
	}
	n := &c.Notify
	for _, f := range []struct {
		name     string
		v        any
		negative bool
	}{
		{"group_wait", n.GroupWait, n.GroupWait < 0}, {"group_interval", n.GroupInterval, n.GroupInterval < 0},
		{"attempts", n.Attempts, n.Attempts < 0}, {"min_backoff", n.MinBackoff, n.MinBackoff < 0}, {"max_backoff", n.MaxBackoff, n.MaxBackoff < 0},
		{"timeout", n.Timeout, n.Timeout < 0}, {"queue", n.Queue, n.Queue < 0},
	} {
		if f.negative {
			bad("notify."+f.name, "%v: want 0 or more (0 takes the default)", f.v)
		}
	}
	if n.MinBackoff > 0 && n.MaxBackoff > 0 && n.MinBackoff > n.MaxBackoff {
		bad("notify.min_backoff", "%s is above max_backoff %s", n.MinBackoff, n.MaxBackoff)
	}
	for i, l := range c.Inhibition.Equal {
		if l == "" || strings.ContainsAny(l, " .-") {
			bad(fmt.Sprintf("inhibition.equal[%d]", i), "%q is not a label name", l)
		}
	}
	if len(c.Channels) == 0 {
		bad("channels", "configure at least one (kind: log needs nothing else)")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Channels)) {
		ch := c.Channels[name]
		errs = append(errs, ch.validate("channels."+name))
	}
	return errors.Join(errs...)
}

// validate checks the channel at the key prefix ("channels.ops"), every problem
// joined; with a kind it refuses, only that, as the keys that count depend on it.
func (ch *Channel) validate(prefix string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad(prefix+"."+field, format, args...))
	}
	switch ch.Kind {
	case notify.FormatWebhook, notify.FormatDingTalk, notify.FormatWeCom, notify.FormatSlack:
		url := config.SecretRef{File: ch.URLFile, Env: ch.URLEnv}
		if ch.URL == "" && !url.IsSet() {
			bad("url", "required for kind %s (or url_file, url_env)", ch.Kind)
		}
		if ch.URL != "" && url.IsSet() {
			bad("url_file", "set url, or url_file and url_env, not both")
		}
		ch.checkEnvNames(bad)
	case "email":
		if env := ch.SMTP.PasswordEnv; env != "" && !config.ValidEnvName(env) {
			bad("smtp.password_env", "%q is not an environment variable name", env)
		}
		for _, f := range []struct {
			key string
			set bool
		}{{"addr", ch.SMTP.Addr != ""}, {"from", ch.SMTP.From != ""}, {"to", len(ch.SMTP.To) > 0}} {
			if !f.set {
				bad("smtp."+f.key, "required for kind email")
			}
		}
	case notify.FormatAlertmanager:
		return ch.validateAlertmanager(prefix)
	case "log":
	case "":
		bad("kind", "required: "+kinds)
	default:
		bad("kind", "%q: want "+kinds, ch.Kind)
	}
	return errors.Join(errs...)
}

// checkEnvNames reports each variable of the channel's secrets that is not a variable
// name, in the order of their keys.
func (ch *Channel) checkEnvNames(bad func(field, format string, args ...any)) {
	secrets := ch.secrets()
	for _, key := range slices.Sorted(maps.Keys(secrets)) {
		if env := secrets[key].Env; env != "" && !config.ValidEnvName(env) {
			bad(key+"_env", "%q is not an environment variable name", env)
		}
	}
}

// kinds lists the channel kinds for errors.
const kinds = "webhook, dingtalk, wecom, slack, alertmanager, email or log"

func (ch *Channel) validateAlertmanager(prefix string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad(prefix+"."+field, format, args...))
	}
	am := &ch.Alertmanager
	p := "alertmanager"
	if len(am.URLs) == 0 {
		bad(p+".urls", "required for kind alertmanager: the Alertmanagers' base URLs (http://am-1:9093)")
	}
	https, urlsOK := true, len(am.URLs) > 0
	for i, raw := range am.URLs {
		u, err := url.Parse(raw)
		field := fmt.Sprintf("%s.urls[%d]", p, i)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			bad(field, "%q: want http:// or https://host:port, and the path Alertmanager is served under if any (--web.route-prefix), without credentials or a query", raw)
			urlsOK = false
			continue
		}
		// The API's path is the alarm's to add: a URL already ending in it would be
		// posted to .../api/v2/alerts/api/v2/alerts and refused by Alertmanager.
		if trimmed := strings.TrimSuffix(u.Path, "/"); strings.HasSuffix(trimmed, "/api/v2/alerts") || strings.HasSuffix(trimmed, "/api/v1/alerts") {
			bad(field, "%q: want the Alertmanager's base URL (%s://%s%s), without the API's path", raw, u.Scheme, u.Host, trimmed[:strings.LastIndex(trimmed, "/api/")])
			urlsOK = false
			continue
		}
		https = https && u.Scheme == "https"
	}
	if am.ResendInterval < 0 || am.Timeout < 0 {
		bad(p, "resend_interval and timeout: want 0 or more (0 takes the default)")
	}
	if am.ResendInterval > 0 && am.ResendInterval.D() < time.Second {
		bad(p+".resend_interval", "%s: want at least 1s", am.ResendInterval)
	}
	pw := config.SecretRef{File: am.PasswordFile, Env: am.PasswordEnv}
	tok := config.SecretRef{File: ch.BearerTokenFile, Env: ch.BearerTokenEnv}
	switch {
	case am.Username == "" && pw.IsSet():
		bad(p+".username", "required with password_file or password_env")
	case am.Username != "" && !pw.IsSet():
		bad(p+".password_file", "required with username (or password_env)")
	}
	if am.Username != "" && tok.IsSet() {
		bad("bearer_token_file", "basic auth (alertmanager.username) or a bearer token, not both")
	}
	ch.checkEnvNames(bad)
	if urlsOK {
		errs = append(errs, am.TLS.CheckHTTPS(prefix+"."+p+".tls", https))
	} else {
		// Whether the URLs are https is not known yet: the block's keys and files are.
		errs = append(errs, am.TLS.Check(prefix+"."+p+".tls"))
	}
	return errors.Join(errs...)
}

// Inhibit returns the inhibition settings (enabled unless set to false).
func (c *Config) Inhibit() Inhibition {
	return Inhibition{Enabled: c.Inhibition.Enabled == nil || *c.Inhibition.Enabled, Equal: c.Inhibition.Equal}
}

// BuildChannels resolves the channels' secrets and builds their notifiers. The second
// result describes each channel without secrets, for the start-up log. Every channel
// that cannot be built is reported, in the order of their names, each problem naming
// its key ("channels.ops.url_file"): an operator fixes them all in one go.
func (c *Config) BuildChannels(logger *slog.Logger) (map[string]notify.Notifier, []string, error) {
	out := map[string]notify.Notifier{}
	var desc []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Channels)) {
		ch := c.Channels[name]
		n, d, err := ch.build("channels."+name, logger)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = n
		desc = append(desc, name+"="+d)
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return out, desc, nil
}

// build builds the channel at the key prefix ("channels.ops"); every secret it cannot
// read is reported.
func (ch *Channel) build(prefix string, logger *slog.Logger) (notify.Notifier, string, error) {
	var errs []error
	secret := func(key string) config.Secret {
		s, err := ch.secrets()[key].Resolve()
		if err != nil {
			errs = append(errs, config.Bad(prefix+"."+key+"_file", "%w", err))
		}
		return s
	}
	switch ch.Kind {
	case "log":
		return notify.Log{L: logger.With("component", "alarm")}, "log", nil
	case notify.FormatAlertmanager:
		am := ch.Alertmanager
		pw, tok := secret("alertmanager.password"), secret("bearer_token")
		tc, err := am.TLS.Load(prefix + ".alertmanager.tls")
		if err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return nil, "", errors.Join(errs...)
		}
		n, err := notify.NewAlertmanager(notify.AlertmanagerOptions{URLs: am.URLs, Resend: am.ResendInterval.D(), Timeout: am.Timeout.D(),
			Username: am.Username, Password: pw, BearerToken: tok, TLS: tc})
		if err != nil {
			return nil, "", config.Bad(prefix+".alertmanager", "%w", err)
		}
		return n, fmt.Sprintf("alertmanager %s, resent every %s", strings.Join(am.URLs, ","), n.RefreshInterval()), nil
	case "email":
		s := ch.SMTP
		pw := secret("smtp.password")
		tc, err := s.TLS.Load(prefix + ".smtp.tls")
		if err != nil {
			errs = append(errs, err)
		}
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(s.Addr)
		}
		if len(errs) > 0 {
			return nil, "", errors.Join(errs...)
		}
		e, err := notify.NewEmail(notify.EmailOptions{Addr: s.Addr, From: s.From, To: s.To, Username: s.Username,
			Password: pw, StartTLS: s.StartTLS, TLS: tc})
		if err != nil {
			return nil, "", config.Bad(prefix+".smtp", "%w", err)
		}
		return e, fmt.Sprintf("email via %s to %d recipient(s)", s.Addr, len(s.To)), nil
	default:
		u := ch.URL
		if u == "" {
			u = secret("url")
		}
		tok := secret("bearer_token")
		sec := secret("secret")
		if len(errs) > 0 {
			return nil, "", errors.Join(errs...)
		}
		h, err := notify.NewHTTP(notify.HTTPOptions{Format: ch.Kind, URL: u, BearerToken: tok, Secret: sec})
		if err != nil {
			key := "url"
			if ch.URLFile != "" {
				key = "url_file"
			}
			return nil, "", config.Bad(prefix+"."+key, "%w", err)
		}
		return h, ch.Kind, nil
	}
}
