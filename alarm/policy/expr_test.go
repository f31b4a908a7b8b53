package policy

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

func series(vs ...float64) []Sample {
	out := make([]Sample, len(vs))
	for i, v := range vs {
		out[i] = Sample{TS: t0.Add(time.Duration(i) * 10 * time.Second), Value: v}
	}
	return out
}

func TestEval(t *testing.T) {
	cases := []struct {
		name   string
		cond   string
		s      []Sample
		value  float64
		active bool
		ok     bool
	}{
		{"last violates", "last > 80", series(10, 90), 90, true, true},
		{"last holds", "last > 80", series(90, 10), 10, false, true},
		{"last no data", "last > 80", nil, 0, false, false},
		{"last #2 is the second newest", "last(#2) > 80", series(90, 10), 90, true, true},
		{"avg of the last 3", "avg(#3) >= 50", series(0, 40, 50, 60), 50, true, true},
		{"avg below", "avg(#3) >= 50", series(100, 40, 50, 59), 49.666666666666664, false, true},
		{"avg too few points", "avg(#3) > 0", series(5, 5), 0, false, false},
		{"max", "max(#3) > 95", series(99, 10, 96, 20), 96, true, true},
		{"max ignores older", "max(#2) > 95", series(99, 10, 20), 20, false, true},
		{"min", "min(#3) < 5", series(1, 10, 6, 20), 6, false, true},
		{"min violates", "min(#3) < 5", series(10, 4, 20), 4, true, true},
		{"sum", "sum(#3) == 6", series(100, 1, 2, 3), 6, true, true},
		{"all violate", "all(#3) > 90", series(10, 91, 92, 93), 93, true, true},
		{"all but one", "all(#3) > 90", series(91, 92, 90), 90, false, true},
		{"all too few", "all(#3) > 90", series(91, 92), 0, false, false},
		{"diff reports the newest change when none violates", "diff(#2) > 10", series(50, 65, 60), -5, false, true},
		{"diff violates against older", "diff(#2) > 10", series(45, 65, 60), 15, true, true},
		{"diff negative drop", "diff(#1) < -50", series(100, 20), -80, true, true},
		{"diff too few", "diff(#2) > 0", series(1, 2), 0, false, false},
		{"pdiff percent", "pdiff(#1) > 50", series(100, 160), 60, true, true},
		{"pdiff drop percent", "pdiff(#1) <= -50", series(200, 100), -50, true, true},
		{"pdiff skips zero base", "pdiff(#2) > 50", series(0, 100, 200), 100, true, true},
		{"pdiff only zero bases", "pdiff(#1) > 50", series(0, 200), 0, false, false},
		{"ne", "last != 0", series(1), 1, true, true},
		{"lt", "last < 1", series(1), 1, false, true},
		{"le", "last <= 1", series(1), 1, true, true},
		{"avg_over window excludes older points", "avg_over(25s) > 50", series(1000, 40, 60, 80), 60, true, true},
		{"avg_over all in window", "avg_over(1h) > 50", series(10, 20, 30), 20, false, true},
		{"max_over", "max_over(15s) > 50", series(99, 10, 20), 20, false, true},
		{"min_over", "min_over(30s) < 5", series(1, 10, 20, 30), 10, false, true},
		{"avg_over no data", "avg_over(1m) > 0", nil, 0, false, false},
		{"lookup 2 of the last 3", "lookup(#2,3) > 80", series(90, 10, 85), 85, true, true},
		{"lookup reads only the last 3", "lookup(#2,3) > 80", series(90, 10, 70, 85), 85, false, true},
		{"lookup newest holds but too few hits", "lookup(#2,3) > 80", series(10, 20, 30), 30, false, true},
		{"lookup too few points", "lookup(#2,3) > 80", series(90, 90), 0, false, false},
		{"lookup all of them", "lookup(#3,3) >= 1", series(1, 1, 1), 1, true, true},
		{"lookup older points count", "lookup(#2,5) < 0", series(-1, -2, 5, 5, 5), 5, true, true},
		// The 4 points before the newest: mean 10, σ √2 ≈ 1.414, so 2σ ≈ 2.83.
		{"stddev above the band", "stddev(#4) = 2", series(10, 12, 8, 10, 13), 13, true, true},
		{"stddev below the band", "stddev(#4) = 2", series(10, 12, 8, 10, 7), 7, true, true},
		{"stddev within the band", "stddev(#4) = 2", series(10, 12, 8, 10, 12.5), 12.5, false, true},
		{"stddev reads only the N before the newest", "stddev(#4) == 2", series(1000, 10, 12, 8, 10, 13), 13, true, true},
		{"stddev too few points", "stddev(#4) = 2", series(10, 12, 8, 10), 0, false, false},
		// The newest point is not part of its own baseline: with it, the mean would be 12
		// and σ 4, and 20 would be only 2σ off.
		{"stddev flat baseline, a step", "stddev(#4) = 3", series(10, 10, 10, 10, 20), 20, true, true},
		{"stddev flat baseline, no change", "stddev(#3) = 1", series(5, 5, 5, 5), 5, false, true},
		// Ten points of 0.1 sum to 0.9999999999999999: the mean must still be exactly 0.1.
		{"stddev flat baseline of 0.1", "stddev(#10) = 0.5", series(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1), 0.1, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCond(tc.cond)
			require.NoError(t, err)
			v, active, ok := c.Eval(tc.s)
			require.Equal(t, tc.ok, ok, "ok")
			require.Equal(t, tc.active, active, "active")
			require.InDelta(t, tc.value, v, 1e-9, "value")
		})
	}
}

func TestParseCond(t *testing.T) {
	good := []struct {
		in   string
		want Cond
	}{
		{"last>1", Cond{Func: FuncLast, N: 1, Op: OpGT, Threshold: 1}},
		{"  avg(#3)  >=  90.5 ", Cond{Func: FuncAvg, N: 3, Op: OpGE, Threshold: 90.5}},
		{"all( #5 ) != -1e3", Cond{Func: FuncAll, N: 5, Op: OpNE, Threshold: -1000}},
		{"pdiff(#2)<=10", Cond{Func: FuncPDiff, N: 2, Op: OpLE, Threshold: 10}},
		{"avg_over(5m) < 3", Cond{Func: FuncAvgOver, Window: 5 * time.Minute, Op: OpLT, Threshold: 3}},
		{"sum(#1000) == 0", Cond{Func: FuncSum, N: 1000, Op: OpEQ, Threshold: 0}},
		{"lookup(#2,3) > 80", Cond{Func: FuncLookup, Hits: 2, N: 3, Op: OpGT, Threshold: 80}},
		{"lookup( #1 , 1000 )<=-1", Cond{Func: FuncLookup, Hits: 1, N: 1000, Op: OpLE, Threshold: -1}},
		{"stddev(#10) = 3", Cond{Func: FuncStddev, N: 10, Op: OpEQ, Threshold: 3}},
		{"stddev(#2)==0.5", Cond{Func: FuncStddev, N: 2, Op: OpEQ, Threshold: 0.5}},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseCond(tc.in)
			require.NoError(t, err)
			// The compiled kinds name the same function and operator.
			require.Equal(t, funcKinds[tc.want.Func], c.fn)
			require.Equal(t, opKinds[tc.want.Op], c.op)
			require.NotZero(t, c.fn)
			require.NotZero(t, c.op)
			c.src, c.fn, c.op = "", 0, 0
			require.Equal(t, tc.want, c)
		})
	}
	bad := map[string]string{
		"":                  "empty",
		"avg > 3":           "needs a point count",
		"avg(3) > 3":        "point count like #3",
		"avg(#0) > 3":       "#1 to #1000",
		"avg(#1001) > 3":    "#1 to #1000",
		"avg(#3 > 3":        "missing ')'",
		"median(#3) > 3":    "unknown function",
		"> 3":               "no function",
		"last":              "missing operator",
		"last =< 3":         "unknown operator",
		"last >> 1":         `unknown operator at ">> 1"`,
		"last <=> 1":        `unknown operator at "<=> 1"`,
		"last >":            "missing threshold",
		"last > abc":        "not a finite number",
		"last > NaN":        "not a finite number",
		"last > Inf":        "not a finite number",
		"avg_over > 3":      "needs a window",
		"avg_over(0s) > 3":  "window",
		"avg_over(48h) > 3": "window",
		"avg_over(5x) > 3":  "window",
		"last > 3 extra":    "not a finite number",
		"last = 3":          "unknown operator",
		"lookup > 1":        "lookup needs how many of how many points",
		"lookup(#2) > 1":    "lookup takes how many of how many points",
		"lookup(2,3) > 1":   "lookup takes how many of how many points",
		"lookup(#2,#3) > 1": `points "#3"`,
		"lookup(#2,0) > 1":  "want 1 to 1000",
		"lookup(#2,1001)>1": "want 1 to 1000",
		"lookup(#0,3) > 1":  `matching points "#0": want #1 to #3`,
		"lookup(#x,3) > 1":  "matching points",
		"lookup(#4,3) > 1":  "4 of the last 3 points can never match",
		"lookup(#2,3)":      "missing operator",
		"stddev = 3":        "stddev needs a point count",
		"stddev(3) = 3":     "stddev takes a point count like #3",
		"stddev(#1) = 3":    "at least 2 points",
		"stddev(#1001) = 3": "#1 to #1000",
		"stddev(#10) > 3":   `stddev takes "= k", not "> 3"`,
		"stddev(#10) != 3":  `stddev takes "= k"`,
		"stddev(#10)":       `missing "= k"`,
		"stddev(#10) =":     "missing k after =",
		"stddev(#10) = 0":   "above 0",
		"stddev(#10) = -2":  "above 0",
		"stddev(#10) = x":   "not a finite number",
	}
	for in, want := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := ParseCond(in)
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrCondition))
			require.Contains(t, err.Error(), want)
		})
	}
}

func FuzzParseCond(f *testing.F) {
	for _, s := range []string{"last > 1", "avg(#3) >= 90", "all(#5) != 0", "pdiff(#2) < -5", "avg_over(5m) > 1", "diff(#", "max(#3) >", "min_over(1h)<=2e9",
		"lookup(#2,3) > 80", "lookup(#3,2) > 1", "lookup( #1 ,1)==0", "lookup(#2,", "stddev(#10) = 3", "stddev(#2)==0.5", "stddev(#10) > 3", "stddev(#1) = 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCond(s)
		if err != nil {
			if !errors.Is(err, ErrCondition) {
				t.Fatalf("error %v does not wrap ErrCondition", err)
			}
			return
		}
		if c.Func == FuncAvgOver || c.Func == FuncMaxOver || c.Func == FuncMinOver {
			if c.Window <= 0 || c.Window > MaxWindow || c.Need() != 0 {
				t.Fatalf("window %v accepted (need %d)", c.Window, c.Need())
			}
		} else if c.N < 1 || c.N > MaxN || c.Need() < c.N {
			t.Fatalf("N %d accepted (need %d)", c.N, c.Need())
		}
		switch c.Func {
		case FuncLookup:
			if c.Hits < 1 || c.Hits > c.N {
				t.Fatalf("lookup(#%d,%d) accepted", c.Hits, c.N)
			}
		case FuncStddev:
			if c.N < 2 || c.Threshold <= 0 || c.Op != OpEQ || c.Need() != c.N+1 {
				t.Fatalf("stddev(#%d) %s %v accepted (need %d)", c.N, c.Op, c.Threshold, c.Need())
			}
		}
		if math.IsNaN(c.Threshold) || math.IsInf(c.Threshold, 0) {
			t.Fatalf("threshold %v accepted", c.Threshold)
		}
		// What it accepted, it accepts again as the same condition.
		again, err := ParseCond(c.String())
		if err != nil || again != c {
			t.Fatalf("%q parsed as %+v, its String %q as %+v (%v)", s, c, c.String(), again, err)
		}
		// Evaluating never panics, whatever the series, and too few points are never a
		// decision.
		c.Eval(series(1, 2, 3))
		c.Eval(series(1e308, -1e308, 0, 5e307))
		if _, active, ok := c.Eval(nil); ok || active {
			t.Fatalf("%q decided on no points", s)
		}
		if need := c.Need(); need > 0 {
			few := make([]float64, need-1)
			for i := range few {
				few[i] = float64(i*1000 + 1) // no zero: pdiff skips a zero base
			}
			if _, active, ok := c.Eval(series(few...)); ok || active {
				t.Fatalf("%q decided on %d points, needs %d", s, need-1, need)
			}
			enough := append(few, 1e6)
			if _, _, ok := c.Eval(series(enough...)); !ok {
				t.Fatalf("%q did not decide on %d points", s, need)
			}
		}
	})
}

// TestMaxMinValueAsBuiltin: the plain-comparison maximum and minimum answer what the
// builtin max and min fold to, signed zeros, infinities and NaN included, in any order.
func TestMaxMinValueAsBuiltin(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, math.Inf(1), math.Inf(-1), math.NaN()}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		s := make([]Sample, r.IntN(6))
		for i := range s {
			s[i].Value = vals[r.IntN(len(vals))]
		}
		wantMax, wantMin := math.Inf(-1), math.Inf(1)
		for _, p := range s {
			wantMax, wantMin = max(wantMax, p.Value), min(wantMin, p.Value)
		}
		if got := maxValue(s); math.Float64bits(got) != math.Float64bits(wantMax) && !(got != got && wantMax != wantMax) {
			t.Fatalf("maxValue(%v) = %v, builtin %v", s, got, wantMax)
		}
		if got := minValue(s); math.Float64bits(got) != math.Float64bits(wantMin) && !(got != got && wantMin != wantMin) {
			t.Fatalf("minValue(%v) = %v, builtin %v", s, got, wantMin)
		}
	}
}
