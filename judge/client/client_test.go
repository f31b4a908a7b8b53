package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/judge/judgetest"
)

// TestPlace: the client sends the token a judge requires and decodes its answer; without
// the token, or with a wrong one, it says the judge wants one.
func TestPlace(t *testing.T) {
	srv := judgetest.Start(t, "s3cret")
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
		if !errors.Is(err, client.ErrUnauthorized) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), client.DefaultTokenFrom) {
			t.Errorf("token %q: %v, want ErrUnauthorized naming the 401 and the command's flag", token, err)
		}
	}
	// A wave's client names its config's key, not a flag the wave does not have.
	_, err = (&client.Client{URL: srv.URL, TokenFrom: "balancer.judge_token_file"}).Place(ctx, api.PlacementRequest{Instance: "orders"})
	if !errors.Is(err, client.ErrUnauthorized) || !strings.Contains(err.Error(), "balancer.judge_token_file") || strings.Contains(err.Error(), "-judge-token-file") {
		t.Errorf("a wave's client: %v, want ErrUnauthorized naming balancer.judge_token_file alone", err)
	}
}

// TestPlaceErrors: the judge's own error message reaches the caller; a judge that is not
// there is named.
func TestPlaceErrors(t *testing.T) {
	srv := judgetest.Start(t, "")
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

// TestRebalance: the client posts the cluster with the token and decodes the plan. The
// judge has no wave series from these nodes, so every instance costs the floor (100):
// 30 on wave-busy and none on wave-idle is a spread of 3000, and five moves bring it to
// the band (2000).
func TestRebalance(t *testing.T) {
	srv := judgetest.Start(t, "s3cret")
	ctx := context.Background()
	req := api.RebalanceRequest{Waves: []api.RebalanceWave{{Node: "wave-busy", Alive: true}, {Node: "wave-idle", Alive: true}}}
	for i := range 30 {
		req.Instances = append(req.Instances, api.RebalanceInstance{ID: fmt.Sprintf("i%02d", i), Node: "wave-busy"})
	}
	ans, err := (&client.Client{URL: srv.URL, Token: "s3cret"}).Rebalance(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// Five moves bring the spread within the band (2000); then wave-idle, below half its
	// share of the instances, takes them up to its share: 15 each.
	if len(ans.Moves) != 15 || !ans.Balanced || ans.SpreadBefore != 3000 || ans.SpreadAfter != 0 || ans.Model != api.ModelRows {
		t.Fatalf("plan %+v (model %q): want 15 moves from a spread of 3000 to 0, balanced, in rows", ans.Plan, ans.Model)
	}
	for i, m := range ans.Moves {
		want := "spread"
		if i >= 5 {
			want = "share"
		}
		if m.From != "wave-busy" || m.To != "wave-idle" || m.Reason != want || m.Cost != 100 {
			t.Errorf("move %d %+v: want a %s move of 100 from wave-busy to wave-idle", i, m, want)
		}
	}
	if len(ans.Costs) != 30 || ans.Costs[0].Instance != "i00" || ans.Costs[0].Measured || ans.Costs[0].Cost != 100 {
		t.Errorf("costs %+v: want 30, by instance, each the floor alone", ans.Costs)
	}
	if ans.Goals != (api.RebalanceGoals{MaxUtilisation: 0.7, UtilisationBand: 0.03, UtilisationBalance: 1.08, Band: 2000, MaxMoves: 20, CooldownS: 600}) || ans.DataAsOf.IsZero() {
		t.Errorf("goals %+v as of %s: want the defaults, as of a time", ans.Goals, ans.DataAsOf)
	}

	// Nil lists are sent as empty ones, which the judge accepts.
	ans, err = (&client.Client{URL: srv.URL, Token: "s3cret"}).Rebalance(ctx, api.RebalanceRequest{})
	if err != nil || ans.Unmet != "no live wave" || ans.Moves == nil {
		t.Fatalf("empty cluster: %+v, %v; want an empty plan with no live wave", ans, err)
	}

	_, err = (&client.Client{URL: srv.URL}).Rebalance(ctx, req)
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("no token: %v, want ErrUnauthorized", err)
	}
	req.Instances = append(req.Instances, req.Instances[0])
	_, err = (&client.Client{URL: srv.URL, Token: "s3cret"}).Rebalance(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `id "i00" is listed twice`) {
		t.Errorf("duplicate instance: %v, want the judge's 400 naming it", err)
	}
}
