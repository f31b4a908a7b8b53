package metric

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/jsonenc"
)

// Decode parses and validates one batch. It is strict: the input must be exactly one JSON
// object of the documented shape, with no unknown, duplicate or missing fields (field names
// are case-sensitive), nothing after it, and at most MaxBatchBytes long; then Validate
// applies. Errors wrap ErrTooLarge or ErrInvalid and name the problem, the point index and
// the byte offset where parsing stopped.
//
// It is a hand-written parser for this one shape rather than encoding/json: it is several
// times faster, allocates little, and can reject what encoding/json silently accepts
// ("Node" for "node", duplicate keys, a missing value, lone surrogates).
func Decode(data []byte) (Batch, error) { return decode(data, nil, nil) }

// decode is Decode, with a remembering Decoder when c is set, and the points in reuse's
// array when it has room.
func decode(data []byte, c *Decoder, reuse []Point) (Batch, error) {
	if len(data) > MaxBatchBytes {
		return Batch{}, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(data), MaxBatchBytes)
	}
	d := decoder{data: data, point: -1, cache: c, labelsUnchecked: c == nil, reuse: reuse}
	b, err := d.batch()
	if err != nil {
		return Batch{}, err
	}
	if err := b.validate(d.labelsUnchecked); err != nil {
		return Batch{}, err
	}
	return b, nil
}

type decoder struct {
	data  []byte
	pos   int
	point int // index of the point being parsed, -1 outside the points array
	cache *Decoder
	// labelsUnchecked is set once a label set was decoded without checking it against
	// the rules of Validate: always without a Decoder; with one, a set that broke them.
	// A Decoder remembers only sets that keep them, so when no set was left unchecked
	// the batch's validation need not walk the labels again.
	labelsUnchecked bool
	// reuse, when its capacity is enough, holds the points instead of a new slice.
	reuse []Point
}

func (d *decoder) errorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if d.point >= 0 {
		return fmt.Errorf("%w: point %d: %s (at byte %d)", ErrInvalid, d.point, msg, d.pos)
	}
	return fmt.Errorf("%w: %s (at byte %d)", ErrInvalid, msg, d.pos)
}

func (d *decoder) ws() { d.pos = jsonenc.SkipSpace(d.data, d.pos) }

// peek returns the next non-space byte, or 0 at the end of input.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *decoder) describe() string {
	if d.pos >= len(d.data) {
		return "end of input"
	}
	c := d.data[d.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (d *decoder) expect(c byte, what string) error {
	if d.peek() != c {
		return d.errorf("expected %s, found %s", what, d.describe())
	}
	d.pos++
	return nil
}

// object parses '{' key ':' value (',' key ':' value)* '}', calling field for each key with
// the position at the start of the value. seen guards against duplicate keys.
func (d *decoder) object(what string, field func(key []byte) error) error {
	if err := d.expect('{', what); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.errorf("expected a field name, found %s", d.describe())
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':', "':' after field name"); err != nil {
			return err
		}
		d.ws()
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.errorf("expected ',' or '}' after field %q, found %s", key, d.describe())
		}
	}
}

func (d *decoder) batch() (Batch, error) {
	var b Batch
	var seen [4]bool
	mark := func(i int, key []byte) error {
		if seen[i] {
			return d.errorf("duplicate field %q", key)
		}
		seen[i] = true
		return nil
	}
	err := d.object("'{' at the start of the batch", func(key []byte) error {
		var err error
		switch string(key) {
		case "node":
			if err = mark(0, key); err == nil {
				b.Node, err = d.stringField("node")
			}
		case "ts":
			if err = mark(1, key); err == nil {
				b.TS, err = d.timeField("ts")
			}
		case "interval_s":
			if err = mark(2, key); err == nil {
				b.IntervalS, err = d.numberField("interval_s")
			}
		case "points":
			if err = mark(3, key); err == nil {
				b.Points, err = d.points()
			}
		default:
			err = d.errorf("unknown field %q", truncate(string(key)))
		}
		return err
	})
	if err != nil {
		return Batch{}, err
	}
	if d.peek() != 0 {
		return Batch{}, d.errorf("unexpected data after the batch object: %s", d.describe())
	}
	for i, name := range [...]string{"node", "ts", "interval_s", "points"} {
		if !seen[i] {
			return Batch{}, d.errorf("missing field %q", name)
		}
	}
	return b, nil
}

func (d *decoder) points() ([]Point, error) {
	if d.literal("null") {
		return []Point{}, nil // what encoding/json writes for a nil slice
	}
	if err := d.expect('[', `'[' for field "points"`); err != nil {
		return nil, err
	}
	// Every point opens one object, and one more when it has labels: counting '{' (one
	// vectorised pass; counting "name" keys cost a fifth of a decode) sizes the slice at
	// most twice too large, never too small, for well-formed input.
	n := min(bytes.Count(d.data[d.pos:], []byte{'{'}), MaxPoints)
	pts := d.reuse[:0]
	if pts == nil || cap(pts) < n { // never nil: "points":[] decodes to an empty slice
		pts = make([]Point, 0, n)
	}
	if d.peek() == ']' {
		d.pos++
		return pts, nil
	}
	for {
		if len(pts) == MaxPoints {
			return nil, fmt.Errorf("%w: more than %d points", ErrTooLarge, MaxPoints)
		}
		d.point = len(pts)
		p, err := d.pointValue()
		if err != nil {
			return nil, err
		}
		pts = append(pts, p)
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.point = -1
			return pts, nil
		default:
			return nil, d.errorf("expected ',' or ']' after a point, found %s", d.describe())
		}
	}
}

// slowPoints turns pointFast off, for the fuzz test that compares both ways.
var slowPoints = false

// pointFast reads a point in the exact shape Encode writes and agents send,
// {"name":"…","value":…} with ,"labels":{…} before the '}' when there are labels, no
// spaces, a name of plain ASCII: without a call per field and its key, it costs about
// half of the general way. At the first byte that differs it gives up, having moved
// nothing, and pointValue reads the point by the general rules (which word any error).
func (d *decoder) pointFast() (Point, bool) {
	const head, value, labels = `{"name":"`, `,"value":`, `,"labels":`
	start, data := d.pos, d.data
	if slowPoints || !bytes.HasPrefix(data[start:], []byte(head)) {
		return Point{}, false
	}
	i := start + len(head)
	j := i
	for j < len(data) && data[j] != '"' && data[j] != '\\' && data[j] >= 0x20 && data[j] < 0x80 {
		j++
	}
	if j == len(data) || data[j] != '"' || !bytes.HasPrefix(data[j+1:], []byte(value)) {
		return Point{}, false
	}
	d.pos = j + 1 + len(value)
	var p Point
	var err error
	if p.Value, err = d.number(); err != nil {
		d.pos = start
		return Point{}, false
	}
	if bytes.HasPrefix(data[d.pos:], []byte(labels)) {
		d.pos += len(labels)
		if p.Labels, err = d.labels(); err != nil || p.Labels == nil {
			d.pos = start // null labels, or an error the general way words
			return Point{}, false
		}
	}
	if d.pos == len(data) || data[d.pos] != '}' {
		d.pos = start
		return Point{}, false
	}
	d.pos++
	if c, ok := canonical[string(data[i:j])]; ok {
		p.Name = c
	} else {
		p.Name = d.keep(data[i:j])
	}
	return p, true
}

func (d *decoder) pointValue() (Point, error) {
	if p, ok := d.pointFast(); ok {
		return p, nil
	}
	var p Point
	var seen [3]bool
	mark := func(i int, key []byte) error {
		if seen[i] {
			return d.errorf("duplicate field %q", key)
		}
		seen[i] = true
		return nil
	}
	err := d.object("'{' at the start of a point", func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = mark(0, key); err == nil {
				p.Name, err = d.nameField()
			}
		case "value":
			if err = mark(1, key); err == nil {
				p.Value, err = d.numberField("value")
			}
		case "labels":
			if err = mark(2, key); err == nil {
				p.Labels, err = d.labels()
			}
		default:
			err = d.errorf("unknown field %q", truncate(string(key)))
		}
		return err
	})
	if err != nil {
		return Point{}, err
	}
	if !seen[0] {
		return Point{}, d.errorf("missing field \"name\"")
	}
	if !seen[1] {
		return Point{}, d.errorf("missing field \"value\"")
	}
	return p, nil
}

func (d *decoder) labels() (map[string]string, error) {
	if d.literal("null") {
		return nil, nil
	}
	if d.cache != nil {
		if m, ok := d.cache.labelSet(d); ok {
			return m, nil
		}
	}
	start := d.pos
	var m map[string]string
	err := d.object(`'{' for field "labels"`, func(key []byte) error {
		if len(m) == MaxLabels {
			return d.errorf("more than %d labels", MaxLabels)
		}
		if d.peek() != '"' {
			return d.errorf("label %q: value must be a string, found %s", truncate(string(key)), d.describe())
		}
		v, err := d.str()
		if err != nil {
			return err
		}
		if m == nil {
			m = make(map[string]string, 2)
		}
		if _, dup := m[string(key)]; dup {
			return d.errorf("duplicate label %q", truncate(string(key)))
		}
		m[d.keep(key)] = d.keep(v)
		return nil
	})
	if err == nil && d.cache != nil {
		if (&Point{Labels: m}).validateLabels() == nil {
			d.cache.rememberLabels(d.data[start:d.pos], m)
		} else {
			d.labelsUnchecked = true // Validate words the error, with the point's name
		}
	}
	// An empty object means no labels; decoding it to nil keeps round trips exact, since
	// Encode omits empty labels.
	return m, err
}

func (d *decoder) literal(lit string) bool {
	if bytes.HasPrefix(d.data[d.pos:], []byte(lit)) {
		d.pos += len(lit)
		return true
	}
	return false
}

func (d *decoder) stringField(name string) (string, error) {
	if d.peek() != '"' {
		return "", d.errorf("field %q: expected a string, found %s", name, d.describe())
	}
	s, err := d.str()
	return string(s), err
}

// canonical lets the common point names decode without allocating.
var canonical = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{CPUUtil, Load1, Load5, Load15, MemUsedPct, NetRxBps, NetTxBps, DiskUsedPct,
		GoHeapBytes, GoGCPauseP99, GoGoroutines, WaveTPS, WaveInstances, WaveLagSeconds, WavePublishErrs, WaveInstanceRunning} {
		m[n] = n
	}
	return m
}()

func (d *decoder) nameField() (string, error) {
	if d.peek() != '"' {
		return "", d.errorf("field \"name\": expected a string, found %s", d.describe())
	}
	s, err := d.str()
	if err != nil {
		return "", err
	}
	if c, ok := canonical[string(s)]; ok {
		return c, nil
	}
	return d.keep(s), nil
}

// keep turns decoded bytes into a string, through the Decoder's memory when there is one.
func (d *decoder) keep(b []byte) string {
	if d.cache != nil {
		return d.cache.str(b)
	}
	return string(b)
}

func (d *decoder) timeField(name string) (time.Time, error) {
	if d.peek() != '"' {
		return time.Time{}, d.errorf("field %q: expected an RFC 3339 string, found %s", name, d.describe())
	}
	start := d.pos
	s, err := d.str()
	if err != nil {
		return time.Time{}, err
	}
	var t time.Time
	// UnmarshalJSON is the strict RFC 3339 parser; it wants the quoted bytes. A timestamp
	// never needs escapes, so one with escapes fails here, which is fine.
	if err := t.UnmarshalJSON(d.data[start:d.pos]); err != nil {
		d.pos = start
		return time.Time{}, d.errorf("field %q: %q is not an RFC 3339 timestamp", name, truncate(string(s)))
	}
	return t.UTC(), nil
}

func (d *decoder) numberField(name string) (float64, error) {
	start := d.pos
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, d.errorf("field %q: expected a number, found %s", name, d.describe())
	}
	f, err := d.number()
	if err != nil {
		d.pos = start
		return 0, d.errorf("field %q: %v", name, err)
	}
	return f, nil
}

// number parses a JSON number at d.pos.
func (d *decoder) number() (float64, error) {
	data, start, i := d.data, d.pos, d.pos
	neg := false
	if i < len(data) && data[i] == '-' {
		neg = true
		i++
	}
	digits := func() int {
		j := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i - j
	}
	intStart := i
	nInt := digits()
	switch {
	case nInt == 0:
		return 0, errors.New("malformed number")
	case nInt > 1 && data[intStart] == '0':
		return 0, errors.New("malformed number: leading zero")
	}
	simple := true
	if i < len(data) && data[i] == '.' {
		i++
		simple = false
		if digits() == 0 {
			return 0, errors.New("malformed number: no digits after '.'")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		simple = false
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, errors.New("malformed number: no digits in exponent")
		}
	}
	d.pos = i
	// Integers of up to 15 digits are exact in a float64; most values are such counters.
	if simple && nInt <= 15 {
		var v int64
		for _, c := range data[intStart:i] {
			v = v*10 + int64(c-'0')
		}
		f := float64(v)
		if neg {
			f = -f
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(data[start:i]), 64)
	if err != nil {
		return 0, fmt.Errorf("number %s out of range", truncate(string(data[start:i])))
	}
	return f, nil
}

// str parses a JSON string at d.pos (which holds '"'). Without escapes or non-ASCII the
// result aliases d.data; callers copy it (string(...)) before keeping it.
func (d *decoder) str() ([]byte, error) {
	data := d.data
	start := d.pos + 1
	for i := start; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return data[start:i], nil
		case c == '\\' || c >= 0x80:
			return d.strSlow(start, i)
		case c < 0x20:
			d.pos = i
			return nil, d.errorf("control character 0x%02x in string (must be escaped)", c)
		}
	}
	d.pos = len(data)
	return nil, d.errorf("unterminated string")
}

func (d *decoder) strSlow(start, i int) ([]byte, error) {
	data := d.data
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return buf, nil
		case c < 0x20:
			d.pos = i
			return nil, d.errorf("control character 0x%02x in string (must be escaped)", c)
		case c >= 0x80:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				d.pos = i
				return nil, d.errorf("invalid UTF-8 in string")
			}
			buf = append(buf, data[i:i+size]...)
			i += size
		case c != '\\':
			buf = append(buf, c)
			i++
		default:
			if i+1 >= len(data) {
				d.pos = i
				return nil, d.errorf("unterminated string")
			}
			e := data[i+1]
			i += 2
			if b, ok := jsonenc.Unescape(e); ok {
				buf = append(buf, b)
				continue
			}
			switch e {
			case 'u':
				r, ok := jsonenc.Hex4(data[i:])
				if !ok {
					d.pos = i - 2
					return nil, d.errorf("malformed \\u escape")
				}
				i += 4
				if r >= 0xd800 && r < 0xe000 {
					// A surrogate must be a high one followed by an escaped low one;
					// alone it is not a character and has no UTF-8 form.
					r2, ok := rune(0), false
					if r < 0xdc00 && i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
						r2, ok = jsonenc.Hex4(data[i+2:])
					}
					if !ok || r2 < 0xdc00 || r2 >= 0xe000 {
						d.pos = i - 6
						return nil, d.errorf("lone UTF-16 surrogate \\u%04x in string", r)
					}
					i += 6
					r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
				}
				buf = utf8.AppendRune(buf, r)
			default:
				d.pos = i - 2
				return nil, d.errorf("invalid escape '\\%c' in string", e)
			}
		}
	}
	d.pos = len(data)
	return nil, d.errorf("unterminated string")
}
