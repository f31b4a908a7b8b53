package judge

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
)

// silentStore is a store whose engine takes connections and does not answer until
// answer is closed: a read ends only with its context until then. Writes go through.
type silentStore struct {
	store.Store
	answer chan struct{}
}

func (s *silentStore) wait(ctx context.Context) error {
	select {
	case <-s.answer:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *silentStore) Refresh(ctx context.Context) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Refresh(ctx)
}

func (s *silentStore) Scan(ctx context.Context, from, to time.Time, fn func([]store.Point) error) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Scan(ctx, from, to, fn)
}

func (s *silentStore) Records(ctx context.Context, kind string) ([]store.Record, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Store.Records(ctx, kind)
}

// runNoWait runs a judge on 127.0.0.1:0 and returns its base URL as soon as the API
// serves (not waiting for the restore, as startJudge does), within a second of its start.
func runNoWait(t *testing.T, o Options) (string, *Judge) {
	t.Helper()
	base, j, _ := launchJudge(t, o, time.Second)
	return base, j
}

// getWithin is GET url, failed if it takes longer than d.
func getWithin(t *testing.T, url string, d time.Duration) (*http.Response, []byte) {
	t.Helper()
	c := &http.Client{Timeout: d}
	resp, err := c.Get(url)
	require.NoError(t, err, "GET %s within %s", url, d)
	defer resp.Body.Close()
	var body []byte
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp, body
}

// A judge whose store does not answer at start (an engine that takes connections and
// never answers) answered nothing, not even GET /healthz, for as long as its three
// startup reads took one after another (about 18 s on Elasticsearch's client; two
// minutes each on a store that waits for its context): a liveness probe killed it in a
// loop. The API serves from the start: /healthz 200, /readyz 503 starting; the restore
// gives up within a few seconds, and the judge then answers on live batches.
func TestStartupStoreSilent(t *testing.T) {
	c := &clock{t: t0}
	st := &silentStore{Store: openStore(t), answer: make(chan struct{})} // never answers
	began := time.Now()
	base, _ := runNoWait(t, Options{Store: st, Now: c.Now, Algorithm: "leastload"})

	resp, body := getWithin(t, base+"/healthz", time.Second)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = getWithin(t, base+"/readyz", time.Second)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	var rd readiness
	require.NoError(t, json.Unmarshal(body, &rd))
	require.Equal(t, notReadyStarting, rd.Reason, "%s", body)
	resp, _ = getWithin(t, base+"/metrics", time.Second)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The restore gives up within restoreReadTimeout (one read: the store did not
	// answer the first); then the judge is ready, on live data.
	require.Eventually(t, func() bool {
		resp, _ := getWithin(t, base+"/readyz", time.Second)
		return resp.StatusCode == http.StatusOK
	}, restoreReadTimeout+2*time.Second, 50*time.Millisecond, "ready once the restore gave up")
	require.Less(t, time.Since(began), restoreReadTimeout+2*time.Second, "a silent store costs seconds")

	code, out := post(t, base+"/v1/metrics", string(encode(t, wave("wave-1", c.Now(), 30, 2))))
	require.Less(t, code, 300, "%s", out)
	c.Add(time.Second)
	code, out = post(t, base+"/v1/placement", `{"instance":"orders"}`)
	require.Equal(t, http.StatusOK, code, "%s", out)
	var ans api.PlacementAnswer
	require.NoError(t, json.Unmarshal([]byte(out), &ans))
	require.Equal(t, "wave-1", ans.Node, "a placement on live data")
}

// A store that answers late: the requests that need the restored state wait for the
// restore, and see what it restored; /readyz turns 200 once it is done.
func TestStartupStoreAnswersLate(t *testing.T) {
	c := &clock{t: t0}
	inner := openStore(t)
	{ // a judge before this one stored a batch
		j, err := New(Options{Store: inner, Now: c.Now, Logger: quiet})
		require.NoError(t, err)
		require.NoError(t, j.Ingest(wave("wave-7", c.Now(), 30, 2), sourceHTTP))
		require.NoError(t, j.Close())
	}
	c.Add(5 * time.Second)
	st := &silentStore{Store: inner, answer: make(chan struct{})}
	base, _ := runNoWait(t, Options{Store: st, Now: c.Now, Algorithm: "leastload"})

	resp, body := getWithin(t, base+"/healthz", time.Second)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = getWithin(t, base+"/readyz", time.Second)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), `"reason":"starting"`)

	nodes := make(chan []byte, 1)
	go func() {
		resp, err := http.Get(base + "/v1/nodes")
		if err != nil {
			nodes <- []byte(err.Error())
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		nodes <- []byte(b.String())
	}()
	time.Sleep(300 * time.Millisecond)
	close(st.answer) // the store answers
	select {
	case b := <-nodes:
		require.Contains(t, string(b), `"wave-7"`, "GET /v1/nodes waited for the restore")
	case <-time.After(startupWait + time.Second):
		t.Fatal("GET /v1/nodes did not answer")
	}
	require.Eventually(t, func() bool {
		resp, _ := getWithin(t, base+"/readyz", time.Second)
		return resp.StatusCode == http.StatusOK
	}, 2*time.Second, 20*time.Millisecond)
}

// slowNodes is a store whose Nodes (the historical analysis's first query) takes delay.
type slowNodes struct {
	store.Store
	delay time.Duration
}

func (s *slowNodes) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Nodes(ctx, from, to)
}

// The historical analysis's first refresh is part of the restore: it ran only once the
// restore was done, and for the seconds it took, placements and plans saw each wave's
// load now, not its hour-of-day peak (an outside trial: 0.15 where the profile said 0.21).
// Its later refreshes come every HistoricalEvery, not again at once.
func TestRestoreIncludesTheHistory(t *testing.T) {
	c := &clock{t: t0}
	st := &slowNodes{Store: openStore(t), delay: 300 * time.Millisecond}
	_, j, stop := startJudge(t, Options{Store: st, Now: c.Now, Algorithm: "leastload", HistoricalEvery: time.Hour})
	defer stop()
	refreshes, failures, _ := j.Historical().Counts()
	require.Equal(t, int64(1), refreshes, "a historical snapshot when the restore is done")
	require.Zero(t, failures)
	time.Sleep(2 * st.delay)
	refreshes, _, _ = j.Historical().Counts()
	require.Equal(t, int64(1), refreshes, "Run made the first refresh again")
}
