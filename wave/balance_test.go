package wave_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/sink"
)

// TestBalancerFailoverFallback: with no judge, or a judge that does not answer, the
// balancer still places a dead wave's instances, by fewest instances, says so in its
// metric, and rewrites their assignments. Three in-process waves share one single
// coordinator; their instances' source is unreachable (placement does not need it). The
// wave stops cleanly, so it may be restarting: its instances stay for the failover grace
// and move only after it.
func TestBalancerFailoverFallback(t *testing.T) {
	dead := httptest.NewServer(nil)
	dead.Close() // a judge that refuses connections
	const grace = 2 * time.Second
	for _, tc := range []struct {
		name    string
		planner balancer.Planner
		reason  string
	}{
		{"no judge", nil, "no_judge"},
		{"judge unreachable", &client.Client{URL: dead.URL}, "judge_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The waits below give up after 30 s, within the context's minute, so that a
			// failure shows the last state seen rather than the context's end.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			waves := map[string]*wave.Wave{}
			stops := map[string]context.CancelFunc{}
			for _, node := range []string{"wave-a", "wave-b", "wave-c"} {
				w, err := wave.New(wave.Options{Node: node, Coord: c, Publisher: sink.New(io.Discard), PollInterval: 50 * time.Millisecond,
					Balancer: balancer.Options{Planner: tc.planner, Interval: time.Hour, FailoverGrace: grace}, Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				wctx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { defer close(done); w.Run(wctx) }()
				waves[node], stops[node] = w, func() { stop(); <-done }
				defer stops[node]()
				require.Eventuallyf(t, func() bool { return isMember(ctx, c, node) }, 30*time.Second, 20*time.Millisecond, "%s registered", node)
			}
			var ids []string
			for i := range 9 {
				inst := &cluster.Instance{ID: fmt.Sprintf("i%d", i), Source: cluster.Source{Addr: "127.0.0.1:1", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: uint32(100 + i)},
					Subscriptions: []cluster.Subscription{{Name: "all", Topic: "t"}}}
				if _, err := cluster.AddInstance(ctx, c, inst, "wave-a", nil); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, inst.ID)
			}
			stops["wave-a"]()
			time.Sleep(grace / 2)
			for _, id := range ids {
				if v, err := c.Get(ctx, cluster.AssignKey(id)); err != nil || string(v.Data) != "wave-a" {
					t.Fatalf("instance %s assigned to %q (%v) within the failover grace of wave-a's clean stop, want it left on wave-a", id, v.Data, err)
				}
			}
			counts := map[string]int{}
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				clear(counts)
				for _, id := range ids {
					v, err := c.Get(ctx, cluster.AssignKey(id))
					require.NoError(ct, err, "instance %s", id)
					require.NotEqual(ct, "wave-a", string(v.Data), "instance %s still assigned to wave-a", id)
					counts[string(v.Data)]++
				}
			}, 30*time.Second, 20*time.Millisecond, "every instance reassigned off wave-a")
			if counts["wave-b"]+counts["wave-c"] != 9 || counts["wave-b"] < 4 || counts["wave-c"] < 4 {
				t.Errorf("after wave-a stopped: %v, want 9 instances split 5/4 over wave-b and wave-c", counts)
			}
			series := fmt.Sprintf(`binlake_wave_balancer_fallbacks_total{reason=%q}`, tc.reason)
			if got := scrapeSum(t, waves["wave-b"], series) + scrapeSum(t, waves["wave-c"], series); got < 1 {
				t.Errorf("%s = %g on the survivors, want at least 1", series, got)
			}
		})
	}
}

func isMember(ctx context.Context, c coord.Coordinator, node string) bool {
	ms, err := c.Members(ctx, cluster.GroupWaves)
	for _, m := range ms {
		if err == nil && m.ID == node {
			return true
		}
	}
	return false
}

// scrapeSum reads series from the wave's /metrics (0 when absent).
func scrapeSum(t *testing.T, w *wave.Wave, series string) float64 {
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var v float64
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			fmt.Sscan(rest, &v)
		}
	}
	return v
}
