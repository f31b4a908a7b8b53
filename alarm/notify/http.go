package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// Formats of HTTP channels.
const (
	FormatWebhook  = "webhook"  // Alertmanager webhook payload, version 4
	FormatDingTalk = "dingtalk" // DingTalk custom robot, markdown
	FormatWeCom    = "wecom"    // WeCom (WeChat Work) group robot, markdown
	FormatSlack    = "slack"    // Slack incoming webhook
)

// HTTPOptions configures an HTTP channel.
type HTTPOptions struct {
	Format string
	URL    config.Secret // robot URLs carry their access token
	// BearerToken is sent as "Authorization: Bearer" (webhook only).
	BearerToken config.Secret
	// Secret signs DingTalk requests (the robot's "加签" secret).
	Secret config.Secret
	// Client is the HTTP client; one with a 10 s timeout when nil.
	Client *http.Client
	// Now is the clock for DingTalk signatures; time.Now when nil.
	Now func() time.Time
}

// HTTP posts messages to a URL in one of the formats.
type HTTP struct {
	o HTTPOptions
}

var _ Notifier = (*HTTP)(nil)

// NewHTTP checks the options and builds the channel.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	switch o.Format {
	case FormatWebhook, FormatDingTalk, FormatWeCom, FormatSlack:
	default:
		return nil, fmt.Errorf("unknown format %q: want webhook, dingtalk, wecom or slack", o.Format)
	}
	u, err := url.Parse(o.URL.Reveal())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not printed: robot URLs hold their access token.
		return nil, fmt.Errorf("%s url: want an http:// or https:// URL", o.Format)
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &HTTP{o: o}, nil
}

// WebhookPayload is Alertmanager's webhook body (version 4), which existing receivers
// accept as is.
type WebhookPayload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []WebhookAlert    `json:"alerts"`
}

// WebhookAlert is one alert of a WebhookPayload.
type WebhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Webhook builds the Alertmanager payload of a message.
func Webhook(m Message) WebhookPayload {
	p := WebhookPayload{
		Version: "4", GroupKey: m.GroupKey, Status: m.Status(), Receiver: m.Receiver,
		GroupLabels: nonNil(m.GroupLabels), CommonLabels: m.CommonLabels(), CommonAnnotations: m.CommonAnnotations(),
		ExternalURL: m.ExternalURL, Alerts: make([]WebhookAlert, len(m.Alerts)),
	}
	for i, a := range m.Alerts {
		gen := ""
		if m.ExternalURL != "" {
			gen = m.ExternalURL + "/v1/alerts?fingerprint=" + a.Fingerprint
		}
		p.Alerts[i] = WebhookAlert{Status: a.Status, Labels: nonNil(a.Labels), Annotations: nonNil(a.Annotations),
			StartsAt: a.StartsAt.UTC(), EndsAt: a.EndsAt.UTC(), GeneratorURL: gen, Fingerprint: a.Fingerprint}
	}
	return p
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Notify implements Notifier.
func (h *HTTP) Notify(ctx context.Context, m Message) error {
	var body any
	target := h.o.URL.Reveal()
	switch h.o.Format {
	case FormatWebhook:
		body = Webhook(m)
	case FormatDingTalk:
		title, text := Text(m, true)
		body = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"title": title, "text": text}}
		if s := h.o.Secret.Reveal(); s != "" {
			target = dingTalkSign(target, s, h.o.Now())
		}
	case FormatWeCom:
		_, text := Text(m, true)
		body = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"content": text}}
	case FormatSlack:
		title, text := Text(m, false)
		body = map[string]any{"text": title, "blocks": []any{
			map[string]any{"type": "section", "text": map[string]string{"type": "mrkdwn", "text": text}},
		}}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", h.o.Format, err)
	}
	rb, err := postJSON(ctx, h.o.Client, h.o.Format, target, data, func(r *http.Request) {
		if t := h.o.BearerToken.Reveal(); t != "" {
			r.Header.Set("Authorization", "Bearer "+t)
		}
	})
	if err != nil {
		return err
	}
	// DingTalk and WeCom answer 200 with an error code in the body.
	if h.o.Format == FormatDingTalk || h.o.Format == FormatWeCom {
		var r struct {
			ErrCode int    `json:"errcode"`
			ErrMsg  string `json:"errmsg"`
		}
		if err := json.Unmarshal(rb, &r); err == nil && r.ErrCode != 0 {
			return fmt.Errorf("%s: errcode %d: %s", h.o.Format, r.ErrCode, r.ErrMsg)
		}
	}
	return nil
}

// postJSON posts a JSON body to target and returns the answer's body (its first 64 KiB).
// A 4xx answer other than 408 and 429 wraps ErrPermanent: the same request will never
// succeed. Errors start with what (the channel's kind) and never print the URL, which
// may hold a token.
func postJSON(ctx context.Context, c *http.Client, what, target string, data []byte, header func(*http.Request)) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, ErrPermanent)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "binlake-alarm")
	if header != nil {
		header(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		// url.Error prints the URL, which may hold a token: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s: post: %w", what, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return rb, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return rb, fmt.Errorf("%s: HTTP %d: %s: %w", what, resp.StatusCode, snippet(rb), ErrPermanent)
	default:
		return rb, fmt.Errorf("%s: HTTP %d: %s", what, resp.StatusCode, snippet(rb))
	}
}

// dingTalkSign adds DingTalk's timestamp and HMAC-SHA256 signature to the robot URL.
func dingTalkSign(target, secret string, now time.Time) string {
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	sign := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	q := u.Query()
	q.Set("timestamp", ts)
	q.Set("sign", sign)
	u.RawQuery = q.Encode()
	return u.String()
}

func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
