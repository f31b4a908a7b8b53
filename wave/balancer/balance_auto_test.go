package balancer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/cluster"
)

// TestPeriodicPlanFailureSaysTheMode: the balancer asks the judge for a plan every
// interval whether or not it applies it; when the judge does not answer, the warning
// says automatic rebalancing only where auto_balance is on (an outside trial read
// "automatic rebalancing: the judge did not answer" from a wave with auto_balance=false).
func TestPeriodicPlanFailureSaysTheMode(t *testing.T) {
	for _, auto := range []bool{false, true} {
		c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		var logs bytes.Buffer
		planner := planFunc(func(context.Context, api.RebalanceRequest) (*api.RebalanceAnswer, error) {
			return nil, errors.New("judge down")
		})
		opts := Options{Planner: planner, Auto: auto}
		opts.SetDefaults()
		bl := New(Env{Coord: c, Node: "wave-a", Log: slog.New(slog.NewTextHandler(&logs, nil)), PollInterval: time.Second, RetryBackoff: time.Second},
			opts, NewMetrics(promauto.With(prometheus.NewRegistry())))
		newTerm(bl, cluster.NewMembers(time.Now())).auto(t.Context())
		out := logs.String()
		says := strings.Contains(out, "automatic rebalancing: the judge did not answer")
		off := strings.Contains(out, "auto_balance is off")
		if !strings.Contains(out, "judge down") || says != auto || off == auto {
			t.Errorf("auto_balance %v: the log says %q; want the judge's error, and automatic rebalancing named only when on", auto, out)
		}
	}
}

// TestPeriodicPlanShowsThePlanner: a term whose periodic plan the judge answered shows
// the judge as its planner in /status (it showed none until a failover asked it: an
// outside trial read {"leader":true,"auto":false,"moves":[]} minutes into a term).
func TestPeriodicPlanShowsThePlanner(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	planner := planFunc(func(context.Context, api.RebalanceRequest) (*api.RebalanceAnswer, error) {
		return &api.RebalanceAnswer{}, nil
	})
	opts := Options{Planner: planner}
	opts.SetDefaults()
	bl := New(Env{Coord: c, Node: "wave-a", Log: slog.New(slog.DiscardHandler), PollInterval: time.Second, RetryBackoff: time.Second},
		opts, NewMetrics(promauto.With(prometheus.NewRegistry())))
	if p := bl.Status().Planner; p != "" {
		t.Fatalf("planner %q before any plan", p)
	}
	newTerm(bl, cluster.NewMembers(time.Now())).auto(t.Context())
	if p := bl.Status().Planner; p != "judge" {
		t.Fatalf("planner %q after the judge answered a periodic plan, want judge", p)
	}
}

// TestMetricsHaveEverySeriesAtZero: the balancer's counters show every reason and result
// (and fallback) at 0 from the start, so that rate() and absent() work before the first
// move; they appeared at their first count (an outside trial).
func TestMetricsHaveEverySeriesAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(promauto.With(reg))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		series[mf.GetName()] = len(mf.GetMetric())
	}
	if series["binlake_wave_balancer_moves_total"] != 16 || series["binlake_wave_balancer_fallbacks_total"] != 2 {
		t.Fatalf("series at start: %v; want 16 moves (4 reasons × 4 results) and 2 fallbacks", series)
	}
}

// TestAutoWaitsThroughOneEmptyPlan: in automatic mode one plan that finds the load within
// the goals among plans of moves is the readings' noise: the wait for auto_after goes on
// and the plan after it is applied (an outside trial's new wave waited 2.5 minutes more,
// the wait restarted by one empty plan whose spread was the same as the one before). Two
// in a row bring the load back within them. The log gives each plan's figures in its
// model's units (a utilisation spread was logged beside the rows model's band of 2000).
func TestAutoWaitsThroughOneEmptyPlan(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	move := api.Plan{Moves: []api.Move{{Instance: "gone", From: "wave-a", To: "wave-b", Reason: api.ReasonSpread}}, SpreadBefore: 0.12, PeakBefore: 0.3}
	var next api.Plan
	planner := planFunc(func(context.Context, api.RebalanceRequest) (*api.RebalanceAnswer, error) {
		return &api.RebalanceAnswer{Plan: next, Model: api.ModelUtilisation, Goals: api.RebalanceGoals{UtilisationBand: 0.03, Band: 2000}}, nil
	})
	logs := &testenv.SyncBuffer{}
	opts := Options{Planner: planner, Auto: true, AutoAfter: 50 * time.Millisecond}
	opts.SetDefaults()
	opts.AutoAfter = 50 * time.Millisecond
	bl := New(Env{Coord: c, Node: "wave-a", Log: slog.New(slog.NewTextHandler(logs, nil)), PollInterval: time.Second, RetryBackoff: time.Second},
		opts, NewMetrics(promauto.With(prometheus.NewRegistry())))
	term := newTerm(bl, cluster.NewMembers(time.Now()))
	poll := func(p api.Plan) {
		next = p
		term.auto(t.Context())
	}
	poll(move)
	poll(api.Plan{SpreadBefore: 0.12}) // within, once
	time.Sleep(60 * time.Millisecond)
	poll(move)
	out := logs.String()
	if !strings.Contains(out, "rebalancing") || strings.Contains(out, "load back within the goals") {
		t.Fatalf("one empty plan among plans of moves: the log says %q; want the plan applied after auto_after, the load never back within", out)
	}
	if !strings.Contains(out, "model=utilisation peak=0.3 spread=0.12 utilisation_band=0.03") || strings.Contains(out, "band=2000") {
		t.Errorf("the log says %q; want the utilisation figures, not the rows model's band", out)
	}
	if !strings.Contains(out, `planned="gone wave-a→wave-b spread"`) {
		t.Errorf("the log says %q; want the planned moves named", out)
	}
	for term.running.Load() {
		time.Sleep(10 * time.Millisecond) // the run ends (its move's instance does not exist)
	}
	poll(move)
	poll(api.Plan{Balanced: true})
	poll(api.Plan{Balanced: true})
	time.Sleep(60 * time.Millisecond)
	poll(move)
	if out := logs.String(); !strings.Contains(out, "load back within the goals") || strings.Count(out, "msg=rebalancing") != 1 {
		t.Fatalf("two empty plans in a row: the log says %q; want the load back within the goals, and the next plan of moves waiting auto_after anew", out)
	}

	// Two empty plans whose goals are unmet (no move helps them: a host's other work over
	// max_utilisation) end the wait too, and the log says so, not "within the goals".
	mark := len(logs.String())
	unmet := "hard_max: wave-a is at 0.745 (max 0.7), and its own load, without any instance, is at 0.711"
	poll(api.Plan{Unmet: unmet})
	poll(api.Plan{Unmet: unmet})
	out = logs.String()[mark:]
	if strings.Contains(out, "within the goals") || !strings.Contains(out, "the goals are unmet, but no move helps them") || !strings.Contains(out, "its own load, without any instance") {
		t.Fatalf("two empty plans with unmet goals: the log says %q; want them named unmet, not within", out)
	}
}

// TestMovesText: a plan's moves named, the first five, and how many more.
func TestMovesText(t *testing.T) {
	var ms []api.Move
	for i := range 7 {
		ms = append(ms, api.Move{Instance: fmt.Sprintf("i%d", i), From: "a", To: "b", Reason: api.ReasonSpread})
	}
	for _, c := range []struct {
		n    int
		want string
	}{{0, ""}, {1, "i0 a→b spread"}, {5, "i0 a→b spread, i1 a→b spread, i2 a→b spread, i3 a→b spread, i4 a→b spread"},
		{7, "i0 a→b spread, i1 a→b spread, i2 a→b spread, i3 a→b spread, i4 a→b spread and 2 more"}} {
		if got := movesText(ms[:c.n]); got != c.want {
			t.Errorf("%d moves: %q, want %q", c.n, got, c.want)
		}
	}
}

// TestAutoRunsOnTheIntervalThatEndsTheWait: plans come every interval, and an auto_after
// that is a multiple of it is met by the plan that many intervals on, though the judge
// answered it a few milliseconds sooner than the plan that began the wait (an outside
// trial's run came an interval late, 2 min 30 s after the wait began, not 2 min); a plan
// more than a tenth of an interval short still waits.
func TestAutoRunsOnTheIntervalThatEndsTheWait(t *testing.T) {
	for _, tc := range []struct {
		short time.Duration // how much less than auto_after the plan comes after the first
		runs  bool
	}{{5 * time.Millisecond, true}, {300 * time.Millisecond, false}} {
		c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		plan := api.Plan{Moves: []api.Move{{Instance: "gone", From: "wave-a", To: "wave-b", Reason: api.ReasonSpread}}}
		planner := planFunc(func(context.Context, api.RebalanceRequest) (*api.RebalanceAnswer, error) {
			return &api.RebalanceAnswer{Plan: plan, Model: api.ModelRows}, nil
		})
		logs := &testenv.SyncBuffer{}
		opts := Options{Planner: planner, Auto: true}
		opts.SetDefaults()
		opts.Interval, opts.AutoAfter = time.Second, 2*time.Second
		bl := New(Env{Coord: c, Node: "wave-a", Log: slog.New(slog.NewTextHandler(logs, nil)), PollInterval: time.Second, RetryBackoff: time.Second},
			opts, NewMetrics(promauto.With(prometheus.NewRegistry())))
		term := newTerm(bl, cluster.NewMembers(time.Now()))
		term.auto(t.Context())                                        // the wait begins
		term.outside = term.outside.Add(-(opts.AutoAfter - tc.short)) // two intervals on, less tc.short
		term.auto(t.Context())
		if runs := strings.Contains(logs.String(), "msg=rebalancing"); runs != tc.runs {
			t.Errorf("a plan %s short of auto_after: ran %v, want %v; the log: %q", tc.short, runs, tc.runs, logs.String())
		}
		for term.running.Load() {
			time.Sleep(10 * time.Millisecond)
		}
	}
}
