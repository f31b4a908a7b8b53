// Package client calls a judge's HTTP API with the API's own request and answer types
// (judge/api): the placements `binlake instance add -judge` and `instance move` ask for.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge/api"
)

// DefaultTimeout bounds one request when Client.HTTP is nil.
const DefaultTimeout = 10 * time.Second

// maxAnswer bounds what a client reads of an answer (explain=all on a large fleet
// stays far below it).
const maxAnswer = 8 << 20

// Client is a judge's API at URL.
type Client struct {
	URL string // base URL, e.g. http://judge:8080
	// Token, when set, is sent as "Authorization: Bearer <token>": a judge with a token
	// requires it on its POST endpoints.
	Token config.Secret
	HTTP  *http.Client // nil: a client with DefaultTimeout
}

// ErrUnauthorized is the judge refusing the request's token (or its absence).
var ErrUnauthorized = errors.New("the judge requires a valid token (give it with -judge-token-file or BINLAKE_JUDGE_TOKEN)")

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
	if err := c.post(ctx, "/v1/placement", body, &ans); err != nil {
		return nil, fmt.Errorf("placement of %s: %w", req.Instance, err)
	}
	if ans.Node == "" {
		return nil, fmt.Errorf("placement of %s: the judge at %s answered without a node", req.Instance, c.URL)
	}
	return &ans, nil
}

// post sends body to path and decodes a 200 answer into out; any other status is an
// error carrying the judge's own message (its {"error":{"code","message"}} body).
func (c *Client) post(ctx context.Context, path string, body []byte, out any) error {
	url := strings.TrimRight(c.URL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token.Reveal())
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", url, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s answered %s: %w", url, resp.Status, ErrUnauthorized)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, errorMessage(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s answered what is not a placement answer: %w", url, err)
	}
	return nil
}

// errorMessage is the message of the judge's error body, or the body itself.
func errorMessage(data []byte) string {
	var e struct {
		Error struct {
			Code, Message string
		}
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	return string(bytes.TrimSpace(data))
}
