package client_test

import (
	"context"
	"errors"
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
		if !errors.Is(err, client.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
			t.Errorf("token %q: %v, want ErrUnauthorized naming the 401", token, err)
		}
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
