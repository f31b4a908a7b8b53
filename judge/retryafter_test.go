package judge

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge/store"
)

// downBus is a relay whose bus fails every publish.
type downBus struct{}

func (downBus) Publish(context.Context, ...bus.Message) error { return errors.New("bus down") }
func (downBus) Close() error                                  { return nil }

// Every 503 of the judge's API says when to come again (Retry-After, in seconds):
// a full store buffer on POST /v1/metrics and on remote write, a relay whose bus fails,
// no live node to place on, a judge that is stopping. They carried none, and a client
// could only guess. (A store too slow to take a post's points is TestPostAnsweredOnceStored.)
func TestEvery503SaysRetryAfter(t *testing.T) {
	full := func(o *Options) {
		o.Store = &failingStore{Store: openStore(t), down: true}
		o.Buffer = store.BufferOptions{Capacity: 1, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	}
	for _, tc := range []struct {
		name       string
		mod        func(*Options)
		path, body string
		closed     bool // the judge is stopping
	}{
		{"buffer full", full, "/v1/metrics", string(encode(t, wide("wave-1", 18))), false},
		{"remote write, buffer full", full, "/api/v1/write", string(cpuScrape("wave-9", t0, 100, 100)), false},
		{"relay down", func(o *Options) { o.Relay = downBus{} }, "/v1/metrics", string(encode(t, load("wave-1", t0, 10, 10))), false},
		{"no live node", nil, "/v1/placement", `{"instance":"orders"}`, false},
		{"stopping", nil, "/v1/metrics", string(encode(t, load("wave-1", t0, 10, 10))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := newJudge(t, tc.mod)
			if tc.closed {
				require.NoError(t, j.Close())
			}
			r := do(t, j.Handler(), "POST", tc.path, "", strings.NewReader(tc.body))
			require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
			require.Equal(t, strconv.Itoa(httpapi.RetryAfterSeconds), r.header.Get("Retry-After"))
		})
	}
}
