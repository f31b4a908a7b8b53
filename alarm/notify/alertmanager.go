package notify

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// FormatAlertmanager is the channel kind that hands alerts to Alertmanager's v2 API.
const FormatAlertmanager = "alertmanager"

// AlertmanagerOptions configures an Alertmanager channel.
type AlertmanagerOptions struct {
	// URLs are the Alertmanagers' base URLs (http://am-1:9093): every one gets every
	// alert, as Prometheus sends to each member of a cluster.
	URLs []string
	// Resend is how often the alarm sends its firing alerts again (1 min when zero, as
	// Prometheus's resend delay); each carries an endsAt four of them ahead, so a firing
	// alert never lapses in Alertmanager while the alarm runs, and a dead alarm's alerts
	// end by themselves.
	Resend time.Duration
	// Basic auth, or a bearer token; at most one.
	Username    string
	Password    config.Secret
	BearerToken config.Secret
	// TLS for https URLs; the system's roots when nil.
	TLS *tls.Config
	// Timeout bounds one POST (10 s when zero).
	Timeout time.Duration
	// Now is the clock for endsAt; time.Now when nil.
	Now func() time.Time
}

// Alertmanager posts alerts to Alertmanager's POST /api/v2/alerts the way Prometheus
// does: Notify sends a message's alerts as they change (a resolved one with its
// resolution time as endsAt), and Refresh, which the alarm calls every Resend with the
// alerts still firing, keeps them alive.
type Alertmanager struct {
	o      AlertmanagerOptions
	client *http.Client
	urls   []string // .../api/v2/alerts
}

var (
	_ Notifier  = (*Alertmanager)(nil)
	_ Refresher = (*Alertmanager)(nil)
)

// Refresher is a channel that wants the firing alerts routed to it again every
// RefreshInterval (Alertmanager ends an alert that is not sent again before its endsAt).
type Refresher interface {
	RefreshInterval() time.Duration
	// Refresh sends the firing alerts again; externalURL is the alarm's, for links.
	Refresh(ctx context.Context, alerts []Alert, externalURL string) error
}

// NewAlertmanager checks the options and builds the channel.
func NewAlertmanager(o AlertmanagerOptions) (*Alertmanager, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("alertmanager: want at least one URL")
	}
	if o.Username != "" && o.BearerToken != "" {
		return nil, errors.New("alertmanager: basic auth or a bearer token, not both")
	}
	am := &Alertmanager{o: o}
	for _, raw := range o.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			// The URL refused for its credentials must not show them.
			return nil, fmt.Errorf("alertmanager url %q: want http:// or https://host:port, without credentials", config.Redact(raw))
		}
		am.urls = append(am.urls, strings.TrimSuffix(u.String(), "/")+"/api/v2/alerts")
	}
	if am.o.Resend <= 0 {
		am.o.Resend = time.Minute
	}
	if am.o.Timeout <= 0 {
		am.o.Timeout = 10 * time.Second
	}
	if am.o.Now == nil {
		am.o.Now = time.Now
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = o.TLS
	am.client = &http.Client{Timeout: am.o.Timeout, Transport: tr}
	return am, nil
}

// RefreshInterval implements Refresher.
func (am *Alertmanager) RefreshInterval() time.Duration { return am.o.Resend }

// Notify implements Notifier: the message's alerts, firing and resolved, to every URL.
func (am *Alertmanager) Notify(ctx context.Context, m Message) error {
	return am.post(ctx, m.Alerts, m.ExternalURL)
}

// Refresh implements Refresher.
func (am *Alertmanager) Refresh(ctx context.Context, alerts []Alert, externalURL string) error {
	if len(alerts) == 0 {
		return nil
	}
	return am.post(ctx, alerts, externalURL)
}

// postableAlert is Alertmanager's v2 PostableAlert.
type postableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Payload is the body of POST /api/v2/alerts for alerts: a firing alert ends four
// resend intervals from now unless sent again, a resolved one at its resolution.
func (am *Alertmanager) Payload(alerts []Alert, externalURL string) ([]byte, error) {
	horizon := am.o.Now().Add(4 * am.o.Resend).UTC()
	out := make([]postableAlert, len(alerts))
	for i, a := range alerts {
		p := postableAlert{Labels: nonNil(a.Labels), Annotations: a.Annotations, StartsAt: a.StartsAt.UTC(), EndsAt: horizon}
		if a.Status == StatusResolved && !a.EndsAt.IsZero() {
			p.EndsAt = a.EndsAt.UTC()
		}
		if externalURL != "" {
			p.GeneratorURL = externalURL + "/v1/alerts?fingerprint=" + a.Fingerprint
		}
		out[i] = p
	}
	return json.Marshal(out)
}

// post sends alerts to every URL; it fails when any did (the dispatcher then tries them
// all again: Alertmanager takes the same alert twice as one).
func (am *Alertmanager) post(ctx context.Context, alerts []Alert, externalURL string) error {
	data, err := am.Payload(alerts, externalURL)
	if err != nil {
		return fmt.Errorf("alertmanager: encode: %w", err)
	}
	var errs []error
	for _, u := range am.urls {
		if _, err := postJSON(ctx, am.client, FormatAlertmanager, u, data, am.auth); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", hostOf(u), err))
		}
	}
	return errors.Join(errs...)
}

func (am *Alertmanager) auth(r *http.Request) {
	switch {
	case am.o.Username != "":
		r.SetBasicAuth(am.o.Username, am.o.Password.Reveal())
	case am.o.BearerToken != "":
		r.Header.Set("Authorization", "Bearer "+am.o.BearerToken.Reveal())
	}
}

func hostOf(u string) string {
	if pu, err := url.Parse(u); err == nil {
		return pu.Host
	}
	return "?"
}
