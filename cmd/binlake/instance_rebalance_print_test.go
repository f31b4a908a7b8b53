//go:build !agentonly

package main

import (
	"strings"
	"testing"

	"github.com/binlake/binlake/judge/api"
)

// A plan in utilisation prints its model, its goals in percent of the cores and every
// wave's cores, prices and peak before and after; a dead wave says so.
func TestPrintAnswerInUtilisation(t *testing.T) {
	ans := &api.RebalanceAnswer{
		Plan: api.Plan{
			Moves: []api.Move{{Instance: "orders", From: "wave-a", To: "wave-b", Cost: 0.4, Reason: api.ReasonSpread, FromLoad: [2]float64{0.8, 0.6}, ToLoad: [2]float64{0.2, 0.3}},
				{Instance: "stock", From: "wave-c", To: "wave-b", Cost: 0.01, Reason: api.ReasonFailover, ToLoad: [2]float64{0.3, 0.305}, Tie: "wave-a would peak at 0.3 with it"}},
			Before: map[string]float64{"wave-a": 0.8, "wave-b": 0.2}, After: map[string]float64{"wave-a": 0.6, "wave-b": 0.3},
			SpreadBefore: 0.6, SpreadAfter: 0.3, PeakBefore: 0.8, PeakAfter: 0.6, Balanced: true,
		},
		Model: api.ModelUtilisation,
		Goals: api.RebalanceGoals{MaxUtilisation: 0.7, UtilisationBand: 0.03, UtilisationBalance: 1.08, MaxMoves: 20, CooldownS: 600},
		Waves: []api.WaveLoad{
			{Node: "wave-a", Alive: true, Cores: 2, Prices: api.Prices{Source: "fitted", Samples: 360}, UtilNow: 0.75, PeakBefore: 0.8, PeakAfter: 0.6, PeakHour: 14, Instances: 3, InstancesAfter: 2},
			{Node: "wave-b", Alive: true, Cores: 8, Prices: api.Prices{Source: "pooled", Samples: 12}, UtilNow: 0.2, PeakBefore: 0.2, PeakAfter: 0.3, PeakHour: -1, Instances: 1, InstancesAfter: 2},
			{Node: "wave-c", Instances: 1},
			{Node: "wave-e", Alive: true, Cores: 1, SharesHostWith: []string{"wave-d"}, Prices: api.Prices{Source: "fitted", Samples: 30}, PeakHour: -1},
			{Node: "wave-d", Alive: true, Cores: 1, SharesHostWith: []string{"wave-e"}, Prices: api.Prices{Source: "fitted", Samples: 30}, PeakHour: -1},
		},
	}
	var b strings.Builder
	printAnswer(&b, ans)
	out := b.String()
	for _, want := range []string{
		"model: utilisation",
		"goals: peaks under 70 % of each wave's cores, each wave within 1.08× the fleet's level (its lines), each move gaining at least 1 % of a wave's cores, at most 20 moves, cooldown 10m0s",
		"plan: 2 moves, highest load 0.8 → 0.6, spread 0.6 → 0.3, balanced",
		// A failover not to the lowest wave says why (an operator read one unexplained).
		"move 2, not to the lowest: wave-a would peak at 0.3 with it\n",
		// The plan's loads are not a reading now (they said LOAD NOW), and PEAK is a
		// prediction beside NOW's reading (an outside trial read one under the other as a
		// contradiction).
		"WAVE    PLANNED LOAD  AFTER",
		"NOW: the host's CPU as read; PEAK: the prediction at the busiest slot (now included)",
		// A PEAK at "now" under NOW read as a contradiction (an outside trial).
		"it can stand under NOW by their error, or for minutes after a move",
		"wave-a  2      fitted (360 samples)  75.0 %  80.0 %  60.0 %      14:00 UTC  3 → 2",
		"wave-b  8      pooled (12 samples)   20.0 %  20.0 %  30.0 %      now        1 → 2",
		"wave-c  -      dead",
		// Waves on one host say so, once (each's cores are its share).
		"\none host: wave-d, wave-e (CORES: each wave's equal share of it; NOW: its process's CPU and its part of the host's other work)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A plan whose search ran out of its time says so below its summary line; one in time
// does not.
func TestPrintPlanOutOfTime(t *testing.T) {
	const said = "the search ran out of its time: the plan is what it had found by then"
	for _, cut := range []bool{true, false} {
		var b strings.Builder
		printPlan(&b, &api.Plan{Balanced: true, Search: "descent", OutOfTime: cut})
		if got := strings.Contains(b.String(), said); got != cut {
			t.Errorf("out of time %v: output\n%s\nsays it ran out: %v", cut, b.String(), got)
		}
	}
}
