// Package client calls a judge's HTTP API with the API's own request and answer types
// (judge/api): the placements `binlake instance add -judge` and `instance move` ask for,
// and the rebalancing plans a balancer asks for.
package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge/api"
)

// DefaultTimeout bounds one request when Client.HTTP is nil.
const DefaultTimeout = 10 * time.Second

// maxAnswer bounds what a client reads of a placement answer (explain=all on a large
// fleet stays far below it); maxRebalanceAnswer of a rebalancing plan, which lists every
// instance's cost (about 150 bytes each, 100,000 instances at most) and every wave's load.
const (
	maxAnswer          = 8 << 20
	maxRebalanceAnswer = 64 << 20
)

// Client is a judge's API at URL.
type Client struct {
	URL string // base URL, e.g. http://judge:8090
	// Token, when set, is sent as "Authorization: Bearer <token>": a judge with a token
	// requires it on its POST endpoints.
	Token config.Secret
	// TokenFrom says where the caller's token is set, for the error of a judge refusing
	// it (DefaultTokenFrom when empty: a command's flag).
	TokenFrom string
	HTTP      *http.Client // nil: a client with DefaultTimeout
}

// DefaultTokenFrom is where a command takes the judge's token from.
const DefaultTokenFrom = "-judge-token-file or BINLAKE_JUDGE_TOKEN"

// ErrUnauthorized is the judge refusing the request's token (or its absence).
var ErrUnauthorized = errors.New("the judge requires a valid token")

// Place asks POST /v1/placement which node should run req.Instance.
func (c *Client) Place(ctx context.Context, req api.PlacementRequest) (*api.PlacementAnswer, error) {
	if req.Exclude == nil {
		req.Exclude = []string{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}
	var ans api.PlacementAnswer
	if err := c.post(ctx, "/v1/placement", body, maxAnswer, "placement", &ans); err != nil {
		return nil, fmt.Errorf("placement of %s: %w", req.Instance, err)
	}
	if ans.Node == "" {
		return nil, fmt.Errorf("placement of %s: the judge at %s answered without a node", req.Instance, c.URL)
	}
	return &ans, nil
}

// Rebalance asks POST /v1/rebalance for a plan that brings the cluster req describes (its
// waves, and the wave each instance is assigned to) within the judge's goals. The
// judge only plans: carrying the moves out is the caller's job.
func (c *Client) Rebalance(ctx context.Context, req api.RebalanceRequest) (*api.RebalanceAnswer, error) {
	// The judge wants lists, not null, and a new balancer may have none yet.
	if req.Waves == nil {
		req.Waves = []api.RebalanceWave{}
	}
	if req.Instances == nil {
		req.Instances = []api.RebalanceInstance{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("rebalance: %w", err)
	}
	var ans api.RebalanceAnswer
	if err := c.post(ctx, "/v1/rebalance", body, maxRebalanceAnswer, "rebalance", &ans); err != nil {
		return nil, fmt.Errorf("rebalance of %s on %s: %w", plural(len(req.Instances), "instance"), plural(len(req.Waves), "wave"), err)
	}
	return &ans, nil
}

// MetricNames asks GET /v1/metric-names for the metric names the judge has seen.
func (c *Client) MetricNames(ctx context.Context) (*api.MetricNames, error) {
	var ans api.MetricNames
	if err := c.do(ctx, http.MethodGet, "/v1/metric-names", nil, maxAnswer, "metric names", &ans); err != nil {
		return nil, fmt.Errorf("metric names: %w", err)
	}
	return &ans, nil
}

// post sends body to path and decodes a 200 answer of at most limit bytes into out (a
// what answer); any other status is an error carrying the judge's own message (its
// {"error":{"code","message"}} body).
func (c *Client) post(ctx context.Context, path string, body []byte, limit int64, what string, out any) error {
	return c.do(ctx, http.MethodPost, path, body, limit, what, out)
}

// do is post's request with any method; a nil body sends none.
func (c *Client) do(ctx context.Context, method, path string, body []byte, limit int64, what string, out any) error {
	url := strings.TrimRight(c.URL, "/") + path
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	a, err := httpapi.Call(ctx, hc, httpapi.Request{Method: method, URL: url, Token: c.Token, Body: body, Limit: limit})
	if err != nil {
		return err
	}
	switch {
	case a.Status == http.StatusUnauthorized:
		return fmt.Errorf("%s answered %s: %w (give it with %s)", url, a.StatusText, ErrUnauthorized, cmp.Or(c.TokenFrom, DefaultTokenFrom))
	case a.Status != http.StatusOK:
		return fmt.Errorf("%s answered %s: %s", url, a.StatusText, httpapi.ErrorMessage(a.Body))
	case a.Truncated:
		return fmt.Errorf("%s answered more than %d bytes", url, limit)
	}
	if err := json.Unmarshal(a.Body, out); err != nil {
		return fmt.Errorf("%s answered what is not a %s answer: %w", url, what, err)
	}
	return nil
}

// plural is "1 wave", "2 waves".
func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
