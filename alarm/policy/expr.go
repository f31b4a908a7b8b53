package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Func names the function a condition applies to a series.
type Func string

// The functions, after Open-Falcon's judge: over the last N points (#N) or over a time
// window (avg_over, max_over, min_over).
const (
	FuncLast    Func = "last"     // the newest point (last(#N): the N-th newest)
	FuncAvg     Func = "avg"      // mean of the last N points
	FuncMax     Func = "max"      // largest of the last N points
	FuncMin     Func = "min"      // smallest of the last N points
	FuncSum     Func = "sum"      // sum of the last N points
	FuncAll     Func = "all"      // every one of the last N points violates
	FuncDiff    Func = "diff"     // newest minus each of the N previous points; any violates
	FuncPDiff   Func = "pdiff"    // the same change in percent of the previous point
	FuncAvgOver Func = "avg_over" // mean of the points within the window before the newest
	FuncMaxOver Func = "max_over"
	FuncMinOver Func = "min_over"
)

// Op is a comparison operator.
type Op string

// The operators.
const (
	OpGT Op = ">"
	OpGE Op = ">="
	OpLT Op = "<"
	OpLE Op = "<="
	OpEQ Op = "=="
	OpNE Op = "!="
)

// MaxN bounds #N: a policy never needs more history than this, and the bound keeps a typo
// ("#100000000") from reserving memory for every series.
const MaxN = 1000

// MaxWindow bounds a time window, for the same reason.
const MaxWindow = 24 * time.Hour

// Cond is a parsed condition: Func(#N or window) Op Threshold.
type Cond struct {
	Func      Func
	N         int           // points, for the #N functions (1 for last)
	Window    time.Duration // for the _over functions
	Op        Op
	Threshold float64
	src       string
	// fn and op are Func and Op as small integers, set by ParseCond: the alarm
	// evaluates a condition per point and policy, and switching on the strings was a
	// tenth of its CPU.
	fn funcKind
	op opKind
}

type funcKind uint8

const (
	fnLast funcKind = iota + 1
	fnAvg
	fnMax
	fnMin
	fnSum
	fnAll
	fnDiff
	fnPDiff
	fnAvgOver
	fnMaxOver
	fnMinOver
)

var funcKinds = map[Func]funcKind{
	FuncLast: fnLast, FuncAvg: fnAvg, FuncMax: fnMax, FuncMin: fnMin, FuncSum: fnSum, FuncAll: fnAll,
	FuncDiff: fnDiff, FuncPDiff: fnPDiff, FuncAvgOver: fnAvgOver, FuncMaxOver: fnMaxOver, FuncMinOver: fnMinOver,
}

type opKind uint8

const (
	opGT opKind = iota + 1
	opGE
	opLT
	opLE
	opEQ
	opNE
)

var opKinds = map[Op]opKind{OpGT: opGT, OpGE: opGE, OpLT: opLT, OpLE: opLE, OpEQ: opEQ, OpNE: opNE}

// String returns the condition as written.
func (c Cond) String() string { return c.src }

// Sample is one point of a series.
type Sample struct {
	TS    time.Time
	Value float64
}

// ErrCondition is wrapped by every condition syntax error.
var ErrCondition = errors.New("bad condition")

// ParseCond parses "avg(#3) > 90", "last > 80", "all(#5) >= 1", "pdiff(#2) > 50",
// "avg_over(5m) < 10".
func ParseCond(s string) (Cond, error) {
	src := strings.TrimSpace(s)
	fail := func(format string, args ...any) (Cond, error) {
		return Cond{}, fmt.Errorf("%w %q: %s", ErrCondition, s, fmt.Sprintf(format, args...))
	}
	if src == "" {
		return fail("empty; want e.g. \"avg(#3) > 90\"")
	}
	if len(src) > 256 {
		return fail("longer than 256 characters")
	}
	// Function name.
	i := 0
	for i < len(src) && (src[i] >= 'a' && src[i] <= 'z' || src[i] == '_') {
		i++
	}
	c := Cond{Func: Func(src[:i]), src: src}
	rest := strings.TrimLeft(src[i:], " \t")
	switch c.Func {
	case FuncLast, FuncAvg, FuncMax, FuncMin, FuncSum, FuncAll, FuncDiff, FuncPDiff:
		c.N = 1
		if strings.HasPrefix(rest, "(") {
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				return fail("missing ')'")
			}
			arg := strings.TrimSpace(rest[1:end])
			rest = strings.TrimLeft(rest[end+1:], " \t")
			num, ok := strings.CutPrefix(arg, "#")
			if !ok {
				return fail("%s takes a point count like #3, got %q", c.Func, arg)
			}
			n, err := strconv.Atoi(num)
			if err != nil || n < 1 || n > MaxN {
				return fail("point count %q: want #1 to #%d", arg, MaxN)
			}
			c.N = n
		} else if c.Func != FuncLast {
			return fail("%s needs a point count, e.g. %s(#3)", c.Func, c.Func)
		}
	case FuncAvgOver, FuncMaxOver, FuncMinOver:
		if !strings.HasPrefix(rest, "(") {
			return fail("%s needs a window, e.g. %s(5m)", c.Func, c.Func)
		}
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return fail("missing ')'")
		}
		arg := strings.TrimSpace(rest[1:end])
		rest = strings.TrimLeft(rest[end+1:], " \t")
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 || d > MaxWindow {
			return fail("window %q: want a duration from 1s to %s, e.g. 5m", arg, MaxWindow)
		}
		c.Window = d
	case "":
		return fail("no function; want one of last, avg, max, min, sum, all, diff, pdiff, avg_over, max_over, min_over")
	default:
		return fail("unknown function %q; want one of last, avg, max, min, sum, all, diff, pdiff, avg_over, max_over, min_over", c.Func)
	}
	// Operator: the two-character ones first.
	switch {
	case strings.HasPrefix(rest, ">="), strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, "=="), strings.HasPrefix(rest, "!="):
		c.Op, rest = Op(rest[:2]), rest[2:]
	case strings.HasPrefix(rest, ">"), strings.HasPrefix(rest, "<"):
		c.Op, rest = Op(rest[:1]), rest[1:]
	case rest == "":
		return fail("missing operator and threshold")
	default:
		return fail("unknown operator at %q; want >, >=, <, <=, == or !=", rest)
	}
	num := strings.TrimSpace(rest)
	if num == "" {
		return fail("missing threshold after %s", c.Op)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fail("threshold %q is not a finite number", num)
	}
	c.Threshold = v
	c.fn, c.op = funcKinds[c.Func], opKinds[c.Op]
	return c, nil
}

// Need returns how many newest points the condition reads (0 for window functions,
// which read by time).
func (c *Cond) Need() int {
	switch c.fn {
	case fnDiff, fnPDiff:
		return c.N + 1
	case fnAvgOver, fnMaxOver, fnMinOver:
		return 0
	default:
		return c.N
	}
}

func (c *Cond) cmp(v float64) bool {
	switch c.op {
	case opGT:
		return v > c.Threshold
	case opGE:
		return v >= c.Threshold
	case opLT:
		return v < c.Threshold
	case opLE:
		return v <= c.Threshold
	case opEQ:
		return v == c.Threshold
	case opNE:
		return v != c.Threshold
	}
	return false
}

// maxValue is the largest value of s, -Inf when s is empty: the builtin max's answer
// (NaN wins, +0 over -0) with plain comparisons, which cost a third of what max did on
// the alarm's hottest loop.
func maxValue(s []Sample) float64 {
	mx := math.Inf(-1)
	for i := range s {
		if v := s[i].Value; v > mx || v != v || (v == 0 && mx == 0 && math.Signbit(mx)) {
			if mx != mx {
				continue // NaN stays
			}
			mx = v
		}
	}
	return mx
}

// minValue is the smallest value of s, +Inf when s is empty, as the builtin min decides
// (NaN wins, -0 under +0).
func minValue(s []Sample) float64 {
	mn := math.Inf(1)
	for i := range s {
		if v := s[i].Value; v < mn || v != v || (v == 0 && mn == 0 && math.Signbit(v)) {
			if mn != mn {
				continue
			}
			mn = v
		}
	}
	return mn
}

// Eval applies the condition to a series (oldest first). It returns the value the function
// computed (for all, the newest point; for diff and pdiff, the first change that violates
// or else the newest one) and whether the condition holds. With too few points for the
// function it returns ok=false: not enough data is never a violation.
func (c *Cond) Eval(s []Sample) (value float64, active, ok bool) {
	n := len(s)
	switch c.fn {
	case fnAvgOver, fnMaxOver, fnMinOver:
		if n == 0 {
			return 0, false, false
		}
		from := s[n-1].TS.Add(-c.Window)
		first := n // the window is the samples after from: a suffix, the series being in time order
		for first > 0 && s[first-1].TS.After(from) {
			first--
		}
		win := s[first:]
		switch c.fn {
		case fnAvgOver:
			var sum float64
			for i := len(win) - 1; i >= 0; i-- { // newest first, as the sum always ran
				sum += win[i].Value
			}
			value = sum / float64(len(win))
		case fnMaxOver:
			value = maxValue(win)
		default:
			value = minValue(win)
		}
		return value, c.cmp(value), true
	}
	need := c.Need()
	if n < need {
		return 0, false, false
	}
	w := s[n-need:]
	switch c.fn {
	case fnLast:
		value = w[0].Value // the N-th newest
	case fnAvg, fnSum:
		for _, p := range w {
			value += p.Value
		}
		if c.fn == fnAvg {
			value /= float64(len(w))
		}
	case fnMax:
		value = maxValue(w)
	case fnMin:
		value = minValue(w)
	case fnAll:
		for _, p := range w {
			if !c.cmp(p.Value) {
				return w[len(w)-1].Value, false, true
			}
		}
		return w[len(w)-1].Value, true, true
	case fnDiff, fnPDiff:
		cur := w[len(w)-1].Value
		first := math.NaN()
		for i := len(w) - 2; i >= 0; i-- {
			prev := w[i].Value
			d := cur - prev
			if c.fn == fnPDiff {
				if prev == 0 {
					continue // a change against zero has no percentage
				}
				d = d / math.Abs(prev) * 100
			}
			if math.IsNaN(first) {
				first = d
			}
			if c.cmp(d) {
				return d, true, true
			}
		}
		if math.IsNaN(first) {
			return 0, false, false
		}
		return first, false, true
	}
	return value, c.cmp(value), true
}
