package policy

import "math"

// Window is the running state of one time-window condition (avg_over, max_over,
// min_over) over one series. Eval reads the whole window for every new point: with a
// node reporting every 200 ms, a one-minute window is 300 points per evaluation, and
// those passes were half of the alarm's CPU. With a Window, a new point costs O(1)
// amortized: the window's start only moves forward, avg_over keeps a running sum, and
// max_over/min_over keep a monotonic queue of the points that can still be the extreme.
type Window struct {
	next int64 // absolute index of the first sample not yet taken in
	from int64 // absolute index of the window's oldest sample
	// avg_over: the window's sum (Neumaier-compensated) and how many points were added
	// or removed since it was last summed afresh.
	sum, comp float64
	moves     int64
	// max_over, min_over: absolute indices of samples, q[head:] oldest first, their
	// values falling (max) or rising (min), so that q[head] is the extreme.
	q    []int64
	head int
}

// EvalWindow is Eval for the time-window functions, over a series whose samples are s
// and whose first sample has the absolute index base (how many samples the series has
// dropped from its front). Between calls the series may only append samples and drop
// them from its front, and its values must be finite, as the metric decoder ensures;
// for any other function it is Eval.
//
// max_over and min_over answer exactly what Eval does. avg_over's sum runs: each point
// is added when it arrives and subtracted when it leaves, with Neumaier's compensation,
// and is taken afresh once as many points have moved as the window holds. Its mean is
// as close to the exact one as Eval's plain sum (closer when the window mixes large and
// small values), but the two may differ in the last bits.
func (c *Cond) EvalWindow(w *Window, s []Sample, base int64) (value float64, active, ok bool) {
	n := len(s)
	if n == 0 || c.Window <= 0 {
		return c.Eval(s)
	}
	end := base + int64(n)
	if w.from < base || w.next < w.from || w.next > end {
		// First use, or samples gone from under the state: start over from s.
		*w = Window{q: w.q[:0], next: base, from: base}
	}
	for k := w.next; k < end; k++ {
		c.take(w, s, base, k)
	}
	w.next = end
	cut := s[n-1].TS.Add(-c.Window)
	for w.from < end-1 && !s[w.from-base].TS.After(cut) {
		if c.fn == fnAvgOver {
			w.add(-s[w.from-base].Value)
		}
		w.from++
	}
	switch c.fn {
	case fnAvgOver:
		count := end - w.from
		if w.moves >= count {
			// Sum afresh, so that the compensation's own rounding does not pile up.
			w.sum, w.comp = 0, 0
			for i := n - 1; i >= int(w.from-base); i-- {
				w.add(s[i].Value)
			}
			w.moves = 0
		}
		value = (w.sum + w.comp) / float64(count)
	case fnMaxOver, fnMinOver:
		for w.q[w.head] < w.from {
			w.head++
		}
		value = s[w.q[w.head]-base].Value
	default:
		return c.Eval(s)
	}
	return value, c.cmp(value), true
}

// take adds the sample of absolute index k to the window's state.
func (c *Cond) take(w *Window, s []Sample, base, k int64) {
	v := s[k-base].Value
	switch c.fn {
	case fnAvgOver:
		w.add(v)
	case fnMaxOver, fnMinOver:
		// Drop the queued samples the new one outranks: they leave the window before
		// it, so they can no longer be the extreme.
		for len(w.q) > w.head {
			last := s[w.q[len(w.q)-1]-base].Value
			if c.fn == fnMaxOver && !before(v, last) || c.fn == fnMinOver && !before(last, v) {
				w.q = w.q[:len(w.q)-1]
				continue
			}
			break
		}
		if w.head > 64 && 2*w.head > len(w.q) {
			w.q = w.q[:copy(w.q, w.q[w.head:])]
			w.head = 0
		}
		w.q = append(w.q, k)
	}
}

// before orders values as the builtin max and min rank them: -0 below +0.
func before(a, b float64) bool {
	return a < b || a == b && math.Signbit(a) && !math.Signbit(b)
}

// add adds v to the running sum with Neumaier's compensation.
func (w *Window) add(v float64) {
	t := w.sum + v
	if math.Abs(w.sum) >= math.Abs(v) {
		w.comp += (w.sum - t) + v
	} else {
		w.comp += (v - t) + w.sum
	}
	w.sum = t
	w.moves++
}
