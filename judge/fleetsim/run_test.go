package fleetsim

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestRunInProcessJudge runs a small fleet through a real in-process judge over HTTP:
// every batch accepted, the historical refreshes made at the simulated instants they
// are due (one as the history ends, then every HistoricalEvery), plans with moves applied (with
// the cooldown honoured, which needs moved_at in the balancer's requests), and the
// report's truth figures those of the final assignment it reports.
func TestRunInProcessJudge(t *testing.T) {
	o := smallOptions()
	o.History, o.HistoryStep, o.Warmup = 2*time.Hour, 10*time.Minute, 10*time.Minute
	o.Rounds = 6
	o.Dir = t.TempDir()
	rep, progress, text := runFleet(t, o)
	t.Logf("progress:\n%s", progress)
	t.Logf("report:\n%s", text)

	// 11 ticks every 10 min, 11 every minute to Now, 5 between rounds (none after the last).
	ticks := 11 + 11 + 5*(len(rep.Rounds)-1)
	if want := int64(6 * ticks); rep.Batches != want || rep.Points < 10*want {
		t.Errorf("the judge accepted %d batches (%d points), want %d of at least 10 points", rep.Batches, rep.Points, want)
	}
	if !rep.HistoricalAsOf.Equal(rep.Start) {
		t.Errorf("historical refresh as of %s, want one as the history ends, %s", rep.HistoricalAsOf, rep.Start)
	}
	// Rounds 5 minutes apart, a refresh every 10 simulated minutes of them.
	if want := (len(rep.Rounds) - 1) * int(o.RoundEvery/time.Minute) / int(o.HistoricalEvery/time.Minute); rep.Refreshes != want {
		t.Errorf("%d historical refreshes in %d rounds %s apart, want one every %s: %d", rep.Refreshes, len(rep.Rounds), o.RoundEvery, o.HistoricalEvery, want)
	}
	if strings.Contains(text, noProfiles) {
		t.Errorf("the report warns of plans without profiles although a refresh covered the history:\n%s", text)
	}
	without := *rep
	without.HistoricalAsOf = time.Time{}
	var warned bytes.Buffer
	without.WriteText(&warned)
	if !strings.Contains(warned.String(), noProfiles) {
		t.Errorf("a report without a historical refresh does not say so:\n%s", warned.String())
	}
	if rep.Plans < 1 || rep.Moves < 1 || rep.Skipped != 0 {
		t.Fatalf("%d plans, %d moves, %d skipped: want at least one plan with moves, all applied", rep.Plans, rep.Moves, rep.Skipped)
	}
	if rep.Distinct > rep.Moves || len(rep.Rounds) > o.Rounds {
		t.Errorf("%d distinct instances of %d moves in %d rounds", rep.Distinct, rep.Moves, len(rep.Rounds))
	}
	// Rounds are 5 minutes apart, the judge's cooldown 10: no instance moves in two
	// rounds running.
	for k := 1; k < len(rep.Rounds); k++ {
		prev := map[string]bool{}
		for _, id := range rep.Rounds[k-1].MovedInstances {
			prev[id] = true
		}
		for _, id := range rep.Rounds[k].MovedInstances {
			if prev[id] {
				t.Errorf("%s moved in rounds %d and %d, 5 minutes apart: the cooldown was not honoured", id, k, k+1)
			}
		}
	}

	// The truth: recompute every wave's utilisation from the reported assignment.
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	node := map[string]int{}
	for w, wv := range f.Waves {
		node[wv.Node] = w
	}
	assign := make([]int, len(f.Instances))
	changed := 0
	for i, in := range f.Instances {
		w, ok := node[rep.Assignment[in.ID]]
		if !ok {
			t.Fatalf("%s assigned to %q, not a wave", in.ID, rep.Assignment[in.ID])
		}
		assign[i] = w
		if w != f.Initial[i] {
			changed++
		}
	}
	if changed == 0 || changed > rep.Distinct {
		t.Errorf("%d instances are off their initial wave, want 1 to the %d moved", changed, rep.Distinct)
	}
	// The rounds' moves, replayed from the initial assignment, give the final one.
	replay := map[string]string{}
	for i, in := range f.Instances {
		replay[in.ID] = f.Waves[f.Initial[i]].Node
	}
	for _, rd := range rep.Rounds {
		if len(rd.MovedTo) != len(rd.MovedInstances) {
			t.Fatalf("round %d: %d destinations for %d moved instances", rd.N, len(rd.MovedTo), len(rd.MovedInstances))
		}
		for k, id := range rd.MovedInstances {
			if replay[id] == rd.MovedTo[k] {
				t.Errorf("round %d: %s moved to %s, where it was", rd.N, id, rd.MovedTo[k])
			}
			replay[id] = rd.MovedTo[k]
		}
	}
	for id, w := range replay {
		if rep.Assignment[id] != w {
			t.Errorf("%s: the rounds' moves leave it on %s, the report's assignment on %s", id, w, rep.Assignment[id])
		}
	}
	h := hourOf(rep.End)
	now, day := utils(f, loads(f, assign), atHour(h)), utils(f, loads(f, assign), dayPeak)
	total := 0
	for w, fw := range rep.Final {
		total += fw.Instances
		if fw.Node != f.Waves[w].Node || !near(fw.Now, now[w]) || !near(fw.Day, day[w]) {
			t.Errorf("final wave %+v, want %s at %.4f now, %.4f at its peak", fw, f.Waves[w].Node, now[w], day[w])
		}
	}
	if total != len(f.Instances) {
		t.Errorf("the final waves run %d instances, want %d", total, len(f.Instances))
	}
	for _, c := range []struct {
		name string
		got  Figures
		want []float64
	}{{"now", rep.Now.Judge, now}, {"day", rep.Day.Judge, day}} {
		want := figures(f, c.want)
		if !near(c.got.Peak, want.Peak) || !near(c.got.Spread, want.Spread) || len(c.got.Classes) != 3 {
			t.Errorf("%s: judge figures %+v, want %+v", c.name, c.got, want)
		}
	}
	for _, c := range []Comparison{rep.Now, rep.Day} {
		if c.Bound.Value > c.Greedy.Peak+tol || c.Bound.Value > c.Judge.Peak+tol || !near(c.Ratio, c.Judge.Peak/c.Greedy.Peak) {
			t.Errorf("bound %.4f, greedy %.4f, judge %.4f, ratio %.4f", c.Bound.Value, c.Greedy.Peak, c.Judge.Peak, c.Ratio)
		}
	}
	last := rep.Rounds[len(rep.Rounds)-1]
	if math.Abs(last.PeakAfter-rep.Now.Judge.Peak) > 0.1 {
		t.Errorf("the last round's true peak %.3f is far from the end's %.3f", last.PeakAfter, rep.Now.Judge.Peak)
	}
	for _, want := range []string{"history:", "historical refresh as of", "round 1 at 12:00"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q", want)
		}
	}
	if !strings.Contains(text, "greedy reference") || !strings.Contains(text, `predicted utilisation after the plans ("after"`) {
		t.Errorf("the table lacks the greedy reference or the prediction line")
	}
	// The judge's plans predict every wave's peak of the day; the simulator holds them
	// to the truth.
	for _, p := range []*PredictionError{rep.PredictedBefore, rep.PredictedAfter} {
		if p == nil || p.Plans == 0 || p.Plans > len(rep.Rounds) || p.MeanAbs <= 0 || p.MeanAbs > p.MaxAbs {
			t.Errorf("predictions %+v, want some of the %d rounds' with a mean error within the max", p, len(rep.Rounds))
		}
	}
}

// TestRunRefusesBadOptions: a bad option fails before anything starts, naming it.
func TestRunRefusesBadOptions(t *testing.T) {
	o := smallOptions()
	o.Senders = 0
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "senders 0") {
		t.Fatalf("Run: %v", err)
	}
}

// TestPredictedTolerant: predictions are read from the first key that holds a map of
// node → number; other shapes are ignored, and errors are measured against the truth.
func TestPredictedTolerant(t *testing.T) {
	_, raw, err := decodePlan([]byte(`{"moves":[{"instance":"a","from":"w0","to":"w1","cost":3}],"util_before":[1,2],"after_util":{"w0":0.5,"w1":0.25},"extra":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if k, m := predicted(raw, []string{"util_before", "before_util"}); k != "" || m != nil {
		t.Errorf("a list taken for predictions: %q %v", k, m)
	}
	k, m := predicted(raw, []string{"util_after", "after_util"})
	if k != "after_util" || m["w0"] != 0.5 {
		t.Fatalf("predicted: %q %v", k, m)
	}
	var p PredictionError
	p.add(k, m, map[string]float64{"w0": 0.4, "w1": 0.45})
	p.add("", nil, nil) // a plan without predictions counts for nothing
	if p.Plans != 1 || !near(p.MeanAbs, 0.15) || !near(p.MaxAbs, 0.2) {
		t.Fatalf("prediction error %+v, want 1 plan, mean 0.15, max 0.2", p)
	}
	if _, _, err := decodePlan([]byte(`[]`)); err == nil {
		t.Error("a list decoded as a plan")
	}
	_, rows, err := decodePlan([]byte(`{"moves":[],"model":"rows","after":{"w0":1200}}`))
	if err != nil {
		t.Fatal(err)
	}
	if k, m := predicted(rows, []string{"after"}); k != "" || m != nil {
		t.Errorf("rows/s taken for utilisations: %q %v", k, m)
	}
}

// TestRunSettles: with Settle the balancer goes on asking after the first plan that says
// the fleet is balanced, every RoundEvery, until Settle has passed, whatever Rounds says;
// the moves of those rounds are counted apart, and the report says so.
func TestRunSettles(t *testing.T) {
	o := smallOptions()
	o.History, o.HistoryStep, o.Warmup = 2*time.Hour, 10*time.Minute, 10*time.Minute
	o.Rounds, o.Settle = 6, 40*time.Minute
	o.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Balanced.IsZero() || rep.EndedBy != "empty plan" {
		t.Fatalf("balanced at %v, ended by %q: want a plan that said so", rep.Balanced, rep.EndedBy)
	}
	if want := rep.Balanced.Add(o.Settle); !rep.End.Equal(want) {
		t.Errorf("the last round at %s, want %s: %s after the fleet was balanced at %s", rep.End, want, o.Settle, rep.Balanced)
	}
	after, rounds := 0, 0
	for _, rd := range rep.Rounds {
		if rd.At.After(rep.Balanced) {
			after += rd.Moved
			rounds++
		}
	}
	if want := int(o.Settle / o.RoundEvery); rounds != want || rep.Unsettled != after || len(rep.Rounds) <= o.Rounds {
		t.Errorf("%d rounds in all, %d after the balanced plan with %d moves, the report %d: want %d after it, beyond the %d of Rounds, their moves counted",
			len(rep.Rounds), rounds, after, rep.Unsettled, want, o.Rounds)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if want := fmt.Sprintf("balanced at %s; asked on to %s", rep.Balanced.Format("15:04"), rep.End.Format("15:04")); !strings.Contains(text.String(), want) {
		t.Errorf("the report lacks %q:\n%s", want, text.String())
	}
}

// TestApplyLikeTheMover: a move applies only if the instance is still where the plan
// says; a second move of one instance in a plan, or one naming an unknown wave or
// instance, is skipped.
func TestApplyLikeTheMover(t *testing.T) {
	f := handFleet([][2]float64{{1, 1}, {1, 1}, {1, 1}}, 0.1, 0.2)
	s := newState(f, smallOptions())
	inst, wave := map[string]int{"i0": 0, "i1": 1}, map[string]int{"w0": 0, "w1": 1, "w2": 2}
	at := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	a := s.apply([]planMove{
		{Instance: "i0", From: "w0", To: "w1"},
		{Instance: "i0", From: "w1", To: "w2"}, // moved already in this plan
		{Instance: "i1", From: "w2", To: "w1"}, // not where the plan says
		{Instance: "i1", From: "w0", To: "w9"},
		{Instance: "ix", From: "w0", To: "w1"},
		{Instance: "i1", From: "w0", To: "w0"},
	}, at, inst, wave)
	if len(a.moved) != 1 || a.moved[0] != 0 || a.skipped != 5 {
		t.Fatalf("applied %+v, want i0 moved and 5 skipped", a)
	}
	if s.assign[0] != 1 || !s.movedAt[0].Equal(at) || !s.movedAt[1].IsZero() || s.on[0][0] || !s.on[1][0] {
		t.Fatalf("state after the move: assign %v movedAt %v", s.assign, s.movedAt)
	}
	// The wave it left reports nothing of it, as a wave whose runner ended deletes its
	// series; the wave it went to reports it.
	for w, want := range map[int]bool{0: false, 1: true} {
		got := false
		for _, p := range s.batch(w, at.Add(time.Minute), time.Minute).Points {
			got = got || p.Labels["instance"] == "i0"
		}
		if got != want {
			t.Errorf("wave %d's batch after the move reports i0: %v, want %v", w, got, want)
		}
	}
	req := s.request()
	if len(req.Waves) != 3 || !req.Waves[0].Alive || req.Instances[0].ID != "i0" || req.Instances[0].Node != "w1" ||
		!req.Instances[0].MovedAt.Equal(at) || !req.Instances[1].MovedAt.IsZero() {
		t.Fatalf("request %+v", req)
	}
	if !near(s.ls[1].c, 0.1) || !near(s.ls[0].c, 0.2) {
		t.Fatalf("true loads %v after the move", s.ls)
	}
}

// TestRoundReasons: a round's moves by the judge's reasons, most first, in its progress
// line.
func TestRoundReasons(t *testing.T) {
	for _, tc := range []struct {
		reasons map[string]int
		want    string
	}{
		{nil, ""},
		{map[string]int{"spread": 16}, " (spread 16)"},
		{map[string]int{"hard_max": 4, "spread": 16, "share": 4}, " (spread 16, hard_max 4, share 4)"},
	} {
		if got := (Round{Reasons: tc.reasons}).reasonsText(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.reasons, got, tc.want)
		}
	}
	if got := (Round{Reasons: map[string]int{"hard_max": 3}, HardMaxHostMates: 2}).reasonsText(); got != " (hard_max 3, 2 of them hard_max between host-mates)" {
		t.Errorf("with host-mates: %q", got)
	}
}

// TestHardMaxHostMates counts the hard_max moves between waves of one host, and only
// those.
func TestHardMaxHostMates(t *testing.T) {
	f := &Fleet{Waves: []Wave{{Node: "a", Host: "h1"}, {Node: "b", Host: "h1"}, {Node: "c", Host: "h2"}, {Node: "d"}, {Node: "e"}}}
	wave := map[string]int{"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}
	moves := []planMove{
		{From: "a", To: "b", Reason: "hard_max"}, // host-mates
		{From: "b", To: "a", Reason: "spread"},   // host-mates, but the lines'
		{From: "a", To: "c", Reason: "hard_max"}, // another host
		{From: "d", To: "e", Reason: "hard_max"}, // each on its own
		{From: "a", To: "gone", Reason: "hard_max"},
	}
	if n := hardMaxHostMates(f, moves, wave); n != 1 {
		t.Errorf("%d, want 1", n)
	}
}

// TestHostsText: the report says how the waves share hosts, and nothing when each has
// its own.
func TestHostsText(t *testing.T) {
	for _, tc := range []struct {
		share int
		other float64
		want  string
	}{
		{1, 0, ""},
		{0, 0, ""},
		{2, 0.1, ", 2 to a host of a class, other work 10.0% of a host's cores on average"},
		{3, 0, ", 3 to a host of a class, other work 0.0% of a host's cores on average"},
	} {
		if got := hostsText(tc.share, tc.other); got != tc.want {
			t.Errorf("%d, %v: %q, want %q", tc.share, tc.other, got, tc.want)
		}
	}
}

// TestReportWarnsOfPlansOutOfTime: a plan whose answer says out_of_time is counted, and
// the report's text then warns that its figures are not those of a judge with the CPU
// to plan; without such plans it says nothing of it.
func TestReportWarnsOfPlansOutOfTime(t *testing.T) {
	for body, want := range map[string]bool{`{"moves":[],"out_of_time":true}`: true, `{"moves":[],"out_of_time":false}`: false, `{"moves":[]}`: false} {
		_, raw, err := decodePlan([]byte(body))
		if err != nil || outOfTime(raw) != want {
			t.Errorf("%s: out of time %v (err %v), want %v", body, outOfTime(raw), err, want)
		}
	}
	for n, want := range map[int]string{2: "warning: 2 plans of 5 ran out of the judge's search budget", 0: ""} {
		var text bytes.Buffer
		(&Report{OutOfTime: n, Rounds: make([]Round, 5), EndedBy: "empty plan"}).WriteText(&text)
		if got := strings.Contains(text.String(), "ran out of the judge's search budget"); got != (want != "") || !strings.Contains(text.String(), want) {
			t.Errorf("%d plans out of time: report\n%s\nwant the warning %q", n, text.String(), want)
		}
	}
}

// runFleet runs the fleet o describes, within 8 minutes, and returns its report, its
// progress and the report as text; it fails the test on an error, with the progress.
func runFleet(t *testing.T, o Options) (rep *Report, progress, text string) {
	t.Helper()
	var p bytes.Buffer
	o.Progress = &p
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, p.String())
	}
	var tx bytes.Buffer
	rep.WriteText(&tx)
	return rep, p.String(), tx.String()
}
