package policy

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// windowSeries plays a series as the alarm keeps it: samples appended with rising,
// irregular times, and dropped from the front (sometimes more than the window needs, as
// the hard bound may), with the absolute index of the first sample kept.
type windowSeries struct {
	buf  []Sample
	base int64
}

func (ws *windowSeries) add(x Sample, r *rand.Rand, keep time.Duration) {
	ws.buf = append(ws.buf, x)
	drop := 0
	for drop < len(ws.buf)-1 && !ws.buf[drop].TS.After(x.TS.Add(-keep)) {
		drop++
	}
	if r.IntN(500) == 0 {
		drop = len(ws.buf) - 1 - r.IntN(len(ws.buf)) // a cut into the window itself
	}
	ws.buf = append(ws.buf[:0:0], ws.buf[drop:]...)
	ws.base += int64(drop)
}

// TestEvalWindowAsEval: after every new point, EvalWindow answers what Eval answers
// over the same samples: max_over and min_over to the bit, avg_over within rounding.
// Values include repeats and both zeros; steps in time vary, so that the window's
// length varies and several points leave at once.
func TestEvalWindowAsEval(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, 90, 1e9, -3e-7}
	for _, src := range []string{"avg_over(1m) > 50", "max_over(30s) >= 2.5", "min_over(45s) < 0", "avg_over(1s) > 0", "max_over(1s) > 0"} {
		c, err := ParseCond(src)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 6))
		for run := range 40 {
			var ws windowSeries
			var w Window
			ts := t0
			for i := range 400 {
				ts = ts.Add(time.Duration(1+r.IntN(8000)) * time.Millisecond)
				v := vals[r.IntN(len(vals))]
				if r.IntN(3) == 0 {
					v = r.Float64()*200 - 100
				}
				ws.add(Sample{TS: ts, Value: v}, r, c.Window+time.Duration(r.IntN(3))*time.Second)
				gotV, gotA, gotOK := c.EvalWindow(&w, ws.buf, ws.base)
				wantV, wantA, wantOK := c.Eval(ws.buf)
				same := math.Float64bits(gotV) == math.Float64bits(wantV)
				if c.Func == FuncAvgOver {
					// Eval's plain sum may be off by its rounding: a few ulps of the
					// magnitudes summed, per point (a 1e9 in the window blurs the rest).
					same = math.Abs(gotV-wantV) <= 4*0x1p-52*float64(len(ws.buf))*meanAbs(c, ws.buf)
					gotA = c.cmp(wantV) // a mean within rounding of the threshold may compare either way
				}
				if !same || gotA != wantA || gotOK != wantOK {
					t.Fatalf("%s, run %d, point %d: EvalWindow = %v %v %v, Eval = %v %v %v", src, run, i, gotV, gotA, gotOK, wantV, wantA, wantOK)
				}
			}
		}
	}
}

// meanAbs is the mean magnitude of the values in c's window of s.
func meanAbs(c Cond, s []Sample) float64 {
	cut := s[len(s)-1].TS.Add(-c.Window)
	var sum float64
	n := 0
	for i := len(s) - 1; i >= 0 && s[i].TS.After(cut); i-- {
		sum += math.Abs(s[i].Value)
		n++
	}
	return sum / float64(n)
}

// TestEvalWindowOtherFunctions: a condition over the last N points is Eval's.
func TestEvalWindowOtherFunctions(t *testing.T) {
	c, err := ParseCond("avg(#3) > 1")
	if err != nil {
		t.Fatal(err)
	}
	var w Window
	s := series(1, 2, 3, 4)
	gotV, gotA, gotOK := c.EvalWindow(&w, s, 0)
	wantV, wantA, wantOK := c.Eval(s)
	if gotV != wantV || gotA != wantA || gotOK != wantOK {
		t.Fatalf("EvalWindow = %v %v %v, Eval = %v %v %v", gotV, gotA, gotOK, wantV, wantA, wantOK)
	}
}
