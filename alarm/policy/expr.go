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
	FuncLookup  Func = "lookup"   // lookup(#K,N): at least K of the last N points violate
	FuncStddev  Func = "stddev"   // stddev(#N) = k: the newest point is more than k σ off the N before it
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
	Func Func
	// N is the points the #N functions read (1 for last); for stddev, the points before
	// the newest whose mean and standard deviation the newest is measured against.
	N int
	// Hits is how many of the last N points must violate, for lookup(#Hits,N).
	Hits      int
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
	fnLookup
	fnStddev
)

var funcKinds = map[Func]funcKind{
	FuncLast: fnLast, FuncAvg: fnAvg, FuncMax: fnMax, FuncMin: fnMin, FuncSum: fnSum, FuncAll: fnAll,
	FuncDiff: fnDiff, FuncPDiff: fnPDiff, FuncAvgOver: fnAvgOver, FuncMaxOver: fnMaxOver, FuncMinOver: fnMinOver,
	FuncLookup: fnLookup, FuncStddev: fnStddev,
}

// funcList is the functions as the parser's errors list them.
const funcList = "last, avg, max, min, sum, all, diff, pdiff, lookup, stddev, avg_over, max_over, min_over"

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
// "lookup(#2,3) > 80", "stddev(#10) = 3", "avg_over(5m) < 10".
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
	case FuncLast, FuncAvg, FuncMax, FuncMin, FuncSum, FuncAll, FuncDiff, FuncPDiff, FuncLookup, FuncStddev:
		c.N = 1
		if strings.HasPrefix(rest, "(") {
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				return fail("missing ')'")
			}
			arg := strings.TrimSpace(rest[1:end])
			rest = strings.TrimLeft(rest[end+1:], " \t")
			var msg string
			if c.Func == FuncLookup {
				c.Hits, c.N, msg = parseLookupArg(arg)
			} else {
				c.N, msg = parseCount(c.Func, arg)
			}
			if msg != "" {
				return fail("%s", msg)
			}
		} else {
			switch c.Func {
			case FuncLast:
			case FuncLookup:
				return fail("lookup needs how many of how many points, e.g. lookup(#2,3): 2 of the last 3")
			case FuncStddev:
				return fail("stddev needs a point count, e.g. stddev(#10) = 3")
			default:
				return fail("%s needs a point count, e.g. %s(#3)", c.Func, c.Func)
			}
		}
		if c.Func == FuncStddev && c.N < 2 {
			return fail("stddev(#%d): the standard deviation needs at least 2 points, e.g. stddev(#10) = 3", c.N)
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
		return fail("no function; want one of %s", funcList)
	default:
		return fail("unknown function %q; want one of %s", c.Func, funcList)
	}
	// Operator: the two-character ones first. stddev has only Open-Falcon's "= k" (or
	// "== k"): k is how many standard deviations, not a value to compare with.
	switch {
	case c.Func == FuncStddev:
		op, ok := strings.CutPrefix(rest, "==")
		if !ok {
			op, ok = strings.CutPrefix(rest, "=")
		}
		if !ok {
			if rest == "" {
				return fail("missing \"= k\", the number of standard deviations, e.g. stddev(#10) = 3")
			}
			return fail("stddev takes \"= k\", not %q: stddev(#N) = k holds when the newest point is more than k standard deviations off the mean of the N points before it, e.g. stddev(#10) = 3", rest)
		}
		c.Op, rest = OpEQ, op
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
		if c.Func == FuncStddev {
			return fail("missing k after =, the number of standard deviations, e.g. stddev(#10) = 3")
		}
		return fail("missing threshold after %s", c.Op)
	}
	if strings.ContainsAny(num[:1], "<>=!") {
		// "last >> 1", "last =< 1": the operator was mistyped, not the number.
		return fail("unknown operator at %q; want >, >=, <, <=, == or !=", string(c.Op)+rest)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fail("threshold %q is not a finite number", num)
	}
	if c.Func == FuncStddev && v <= 0 {
		return fail("k %q: want a number of standard deviations above 0, e.g. 3", num)
	}
	c.Threshold = v
	c.fn, c.op = funcKinds[c.Func], opKinds[c.Op]
	return c, nil
}

// parseCount parses the #N argument of fn; msg says what is wrong, empty when nothing.
func parseCount(fn Func, arg string) (n int, msg string) {
	num, ok := strings.CutPrefix(arg, "#")
	if !ok {
		return 0, fmt.Sprintf("%s takes a point count like #3, got %q", fn, arg)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > MaxN {
		return 0, fmt.Sprintf("point count %q: want #1 to #%d", arg, MaxN)
	}
	return n, ""
}

// parseLookupArg parses lookup's "#K,N", Open-Falcon's order: K of the last N points.
func parseLookupArg(arg string) (hits, n int, msg string) {
	const want = "lookup takes how many of how many points, like lookup(#2,3): 2 of the last 3"
	k, pts, ok := strings.Cut(arg, ",")
	k, pts = strings.TrimSpace(k), strings.TrimSpace(pts)
	num, hashed := strings.CutPrefix(k, "#")
	if !ok || !hashed {
		return 0, 0, fmt.Sprintf("%s, got %q", want, arg)
	}
	n, err := strconv.Atoi(pts)
	if err != nil || n < 1 || n > MaxN {
		return 0, 0, fmt.Sprintf("points %q: want 1 to %d, like lookup(#2,3)", pts, MaxN)
	}
	hits, err = strconv.Atoi(num)
	if err != nil || hits < 1 {
		return 0, 0, fmt.Sprintf("matching points %q: want #1 to #%d, like lookup(#2,3)", k, n)
	}
	if hits > n {
		// The likeliest cause is the numbers swapped: say which is which.
		return 0, 0, fmt.Sprintf("%d of the last %d points can never match: the first number is how many points must match, the second how many of the newest points are read, like lookup(#2,3): 2 of the last 3", hits, n)
	}
	return hits, n, ""
}

// Need returns how many newest points the condition reads (0 for window functions,
// which read by time).
func (c *Cond) Need() int {
	switch c.fn {
	case fnDiff, fnPDiff, fnStddev:
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
// computed (for all, lookup and stddev, the newest point; for diff and pdiff, the first
// change that violates or else the newest one) and whether the condition holds. With too few points for the
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
	case fnLookup:
		hits := 0
		for _, p := range w {
			if c.cmp(p.Value) {
				hits++
			}
		}
		return w[len(w)-1].Value, hits >= c.Hits, true
	case fnStddev:
		x := w[len(w)-1].Value
		mean, sd := meanStddev(w[:len(w)-1])
		return x, math.Abs(x-mean) > c.Threshold*sd, true
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

// meanStddev returns the mean and the population standard deviation of s (not empty),
// as Open-Falcon's judge computes them. The values are summed as offsets from the first
// one, so that a flat series has exactly its value as mean and exactly 0 as deviation:
// summed as they are, ten points of 0.1 average to 0.09999999999999999, and the newest
// 0.1 would be "off" a deviation of 0.
func meanStddev(s []Sample) (mean, sd float64) {
	base := s[0].Value
	var sum float64
	for _, p := range s {
		sum += p.Value - base
	}
	off := sum / float64(len(s))
	var sq float64
	for _, p := range s {
		d := p.Value - base - off
		sq += d * d
	}
	return base + off, math.Sqrt(sq / float64(len(s)))
}
