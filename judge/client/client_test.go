package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
	_ "github.com/binlake/binlake/lbplugins/all"
)

// startJudge serves a real judge with token (empty: none) that has heard from two
// waves, the first much busier.
func startJudge(t *testing.T, token string) *httptest.Server {
	t.Helper()
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	j, err := judge.New(judge.Options{Store: st, Algorithm: "leastload", Token: config.Secret(token),
		Now: func() time.Time { return now }, Plugins: map[string]lbplugins.Settings{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	for node, cpu := range map[string]float64{"wave-busy": 95, "wave-idle": 5} {
		b := metric.Batch{Node: node, TS: now, IntervalS: 10, Points: []metric.Point{
			{Name: "cpu.util", Value: cpu}, {Name: "mem.used_pct", Value: cpu}}}
		if err := j.Ingest(b, "test"); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(j.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// TestPlace: the client sends the token a judge requires and decodes its answer; without
// the token, or with a wrong one, it says the judge wants one.
func TestPlace(t *testing.T) {
	srv := startJudge(t, "s3cret")
	ctx := context.Background()

	c := &client.Client{URL: srv.URL + "/", Token: "s3cret"}
	ans, err := c.Place(ctx, api.PlacementRequest{Instance: "orders", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Node != "wave-idle" || ans.Algorithm != "leastload" || ans.Candidates != 2 || len(ans.Scores) == 0 {
		t.Fatalf("answer %+v: want wave-idle by leastload over 2 candidates, with scores", ans)
	}
	if ans.Reservation != nil {
		t.Errorf("a dry run reserved %+v", ans.Reservation)
	}
	ans, err = c.Place(ctx, api.PlacementRequest{Instance: "orders", Exclude: []string{"wave-idle"}})
	if err != nil || ans.Node != "wave-busy" || ans.Reservation == nil || ans.Reservation.Instance != "orders" {
		t.Fatalf("with wave-idle excluded: %+v, %v; want wave-busy with a reservation", ans, err)
	}

	for _, token := range []string{"", "wrong"} {
		_, err := (&client.Client{URL: srv.URL, Token: config.Secret(token)}).Place(ctx, api.PlacementRequest{Instance: "orders"})
		if !errors.Is(err, client.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
			t.Errorf("token %q: %v, want ErrUnauthorized naming the 401", token, err)
		}
	}
}

// TestPlaceErrors: the judge's own error message reaches the caller; a judge that is not
// there is named.
func TestPlaceErrors(t *testing.T) {
	srv := startJudge(t, "")
	ctx := context.Background()
	_, err := (&client.Client{URL: srv.URL}).Place(ctx, api.PlacementRequest{Instance: "orders", Algorithm: "nope"})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown algorithm: %v, want the judge's 400 naming it", err)
	}
	_, err = (&client.Client{URL: "http://127.0.0.1:9"}).Place(ctx, api.PlacementRequest{Instance: "orders"})
	if err == nil || !strings.Contains(err.Error(), "placement of orders") {
		t.Errorf("no judge: %v", err)
	}
}
