package fleetsim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// TestRunExternalJudge drives a real judge on the wall clock through its URL (-judge),
// with a token, and checks what the balancer asked: every wave alive, every instance
// where the simulation has it, and moved_at for exactly the instances moved before, so
// that the judge's cooldown (10 minutes) keeps them in place.
func TestRunExternalJudge(t *testing.T) {
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j, err := judge.New(judge.Options{Store: st, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	var (
		mu       sync.Mutex
		requests []api.RebalanceRequest
		unauth   int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Authorization") != "Bearer s3cret" {
			mu.Lock()
			unauth++
			mu.Unlock()
		}
		if r.URL.Path == "/v1/rebalance" {
			body, _ := io.ReadAll(r.Body)
			var req api.RebalanceRequest
			if err := json.Unmarshal(body, &req); err != nil {
				t.Errorf("the balancer's request: %v", err)
			}
			mu.Lock()
			requests = append(requests, req)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		j.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	o := smallOptions()
	o.JudgeURL, o.Token = srv.URL, "s3cret"
	o.History, o.HistoryStep, o.Warmup, o.Step = 20*time.Second, 10*time.Second, 5*time.Second, time.Second
	o.Rounds, o.RoundEvery, o.HistoryWait = 3, time.Second, 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if unauth != 0 {
		t.Fatalf("%d POSTs without the token", unauth)
	}
	if rep.Judge != srv.URL || len(requests) != len(rep.Rounds) || rep.Plans < 1 {
		t.Fatalf("judge %q, %d requests for %d rounds, %d plans: want the URL's judge asked every round, one plan with moves at least",
			rep.Judge, len(requests), len(rep.Rounds), rep.Plans)
	}
	movedAt := map[string]time.Time{}
	for k, req := range requests {
		if len(req.Waves) != 6 || len(req.Instances) != 40 {
			t.Fatalf("request %d: %d waves, %d instances", k+1, len(req.Waves), len(req.Instances))
		}
		for _, w := range req.Waves {
			if !w.Alive {
				t.Errorf("request %d: wave %s not alive", k+1, w.Node)
			}
		}
		for _, in := range req.Instances {
			if !in.MovedAt.Equal(movedAt[in.ID]) {
				t.Errorf("request %d: %s moved_at %s, want %s (when the simulation moved it)", k+1, in.ID, in.MovedAt, movedAt[in.ID])
			}
		}
		for _, id := range rep.Rounds[k].MovedInstances {
			movedAt[id] = rep.Rounds[k].At
		}
	}
	times := map[string]int{}
	for _, r := range rep.Rounds {
		for _, id := range r.MovedInstances {
			if times[id]++; times[id] > 1 {
				t.Errorf("%s moved again at round %d, within the judge's cooldown", id, r.N)
			}
		}
	}
}
