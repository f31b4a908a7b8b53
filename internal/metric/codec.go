package metric

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/jsonenc"
)

// Bounds on a batch. A bad message must cost little: the size is checked before parsing,
// and every other bound keeps one batch from flooding the stores behind the consumers.
const (
	MaxBatchBytes    = 1 << 20 // encoded size
	MaxPoints        = 10_000
	MaxLabels        = 32 // per point
	MaxNameLen       = 128
	MaxNodeLen       = 255
	MaxLabelKeyLen   = 128
	MaxLabelValueLen = 1024
	MaxIntervalS     = 86_400 // one day; anything longer is a unit mistake
)

// Sentinel errors; every error from Decode, Encode and Validate wraps one of them.
var (
	ErrInvalid  = errors.New("invalid metric batch")
	ErrTooLarge = errors.New("metric batch too large")
)

// Oldest and newest timestamps accepted. The lower bound catches a zero or Unix-epoch
// timestamp from an uninitialised clock; the upper one is where RFC 3339 ends.
var (
	minTS = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTS = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
)

// ValidName reports whether s is a valid metric name: 1 to MaxNameLen characters of
// lowercase letters, digits, '.' and '_', starting with a letter, with no empty
// dot-separated segment ("cpu..util", "cpu.").
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// ValidLabelKey reports whether s is a valid label key. Keys follow Prometheus label
// names ([A-Za-z_][A-Za-z0-9_]*, at most MaxLabelKeyLen bytes), which also keeps dots out
// of Elasticsearch field names, where they would create nested objects.
func ValidLabelKey(s string) bool {
	if len(s) == 0 || len(s) > MaxLabelKeyLen || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// text checks free text (node id, label values): valid UTF-8 without control characters,
// so it round-trips through JSON and cannot forge log lines.
func text(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("invalid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("control character %U", r)
		}
	}
	return nil
}

// Validate checks every rule of the data contract. Encode and Decode both call it, so
// anything one accepts the other does.
func (b Batch) Validate() error { return b.validate(true) }

// validate is Validate; checkLabels false skips the label sets, for a decoder that has
// checked every one of them (decoder.labelsUnchecked).
func (b Batch) validate(checkLabels bool) error {
	switch {
	case b.Node == "":
		return fmt.Errorf("%w: empty node", ErrInvalid)
	case len(b.Node) > MaxNodeLen:
		return fmt.Errorf("%w: node longer than %d bytes", ErrInvalid, MaxNodeLen)
	}
	if err := text(b.Node); err != nil {
		return fmt.Errorf("%w: node: %v", ErrInvalid, err)
	}
	switch {
	case b.TS.IsZero():
		return fmt.Errorf("%w: missing or zero ts", ErrInvalid)
	case b.TS.Before(minTS) || b.TS.After(maxTS):
		return fmt.Errorf("%w: ts %s out of range [%d, %d]", ErrInvalid, b.TS.UTC().Format(time.RFC3339), minTS.Year(), maxTS.Year())
	}
	switch iv := b.IntervalS; {
	case math.IsNaN(iv) || math.IsInf(iv, 0):
		return fmt.Errorf("%w: interval_s is not a finite number", ErrInvalid)
	case iv <= 0:
		return fmt.Errorf("%w: interval_s %v must be positive", ErrInvalid, iv)
	case iv > MaxIntervalS:
		return fmt.Errorf("%w: interval_s %v exceeds %d", ErrInvalid, iv, MaxIntervalS)
	}
	if len(b.Points) > MaxPoints {
		return fmt.Errorf("%w: %d points, more than %d", ErrTooLarge, len(b.Points), MaxPoints)
	}
	for i := range b.Points {
		if err := b.Points[i].validate(checkLabels); err != nil {
			return fmt.Errorf("%w: point %d: %s", ErrInvalid, i, err)
		}
	}
	return nil
}

func (p *Point) validate(checkLabels bool) error {
	switch {
	case p.Name == "":
		return errors.New("empty name")
	case !ValidName(p.Name):
		return fmt.Errorf("invalid name %q (want lowercase letters, digits, '.' and '_', starting with a letter, at most %d bytes)", truncate(p.Name), MaxNameLen)
	case math.IsNaN(p.Value):
		return fmt.Errorf("%s: value is NaN", p.Name)
	case math.IsInf(p.Value, 0):
		return fmt.Errorf("%s: value is infinite", p.Name)
	}
	if !checkLabels {
		return nil
	}
	return p.validateLabels()
}

// validateLabels checks the point's label set. When several labels break the rules it
// names the first in key order, so that a batch always gets the same error.
func (p *Point) validateLabels() error {
	if len(p.Labels) > MaxLabels {
		return fmt.Errorf("%s: %d labels, more than %d", p.Name, len(p.Labels), MaxLabels)
	}
	for k, v := range p.Labels {
		if labelError(p.Name, k, v) != nil {
			keys := slices.Sorted(maps.Keys(p.Labels))
			for _, k := range keys {
				if err := labelError(p.Name, k, p.Labels[k]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// labelError is what is wrong with one label of the point named name, or nil.
func labelError(name, k, v string) error {
	switch {
	case k == "":
		return fmt.Errorf("%s: empty label key", name)
	case !ValidLabelKey(k):
		return fmt.Errorf("%s: invalid label key %q (want [A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", name, truncate(k), MaxLabelKeyLen)
	case len(v) > MaxLabelValueLen:
		return fmt.Errorf("%s: label %q: value longer than %d bytes", name, k, MaxLabelValueLen)
	}
	if err := text(v); err != nil {
		return fmt.Errorf("%s: label %q: %v", name, k, err)
	}
	return nil
}

// truncate keeps error messages short when the offending input is huge.
func truncate(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:61] + "..."
}

// Encode validates b and returns its JSON form, with ts in RFC 3339 UTC and labels in key
// order, so equal batches encode to equal bytes.
func Encode(b Batch) ([]byte, error) {
	buf, err := AppendEncode(make([]byte, 0, 96+len(b.Points)*40), b)
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// AppendEncode is Encode appending to buf, for senders that reuse one buffer.
func AppendEncode(buf []byte, b Batch) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return buf, err
	}
	start := len(buf)
	buf = append(buf, `{"node":`...)
	buf = jsonenc.AppendString(buf, b.Node)
	buf = append(buf, `,"ts":"`...)
	buf = b.TS.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","interval_s":`...)
	buf = AppendFloat(buf, b.IntervalS)
	buf = append(buf, `,"points":[`...)
	var keyArr [8]string
	keys := keyArr[:0]
	for i := range b.Points {
		p := &b.Points[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"name":`...)
		buf = jsonenc.AppendString(buf, p.Name)
		buf = append(buf, `,"value":`...)
		buf = AppendFloat(buf, p.Value)
		if len(p.Labels) > 0 {
			keys = keys[:0]
			for k := range p.Labels {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			buf = append(buf, `,"labels":{`...)
			for j, k := range keys {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = jsonenc.AppendString(buf, k)
				buf = append(buf, ':')
				buf = jsonenc.AppendString(buf, p.Labels[k])
			}
			buf = append(buf, '}')
		}
		buf = append(buf, '}')
	}
	buf = append(buf, "]}"...)
	if n := len(buf) - start; n > MaxBatchBytes {
		return buf[:start], fmt.Errorf("%w: %d bytes encoded, more than %d", ErrTooLarge, n, MaxBatchBytes)
	}
	return buf, nil
}

// AppendFloat appends a value as Encode writes it, for encoders of the same form: like
// encoding/json, plain decimals in the usual range, exponent notation outside it; always
// the shortest text that parses back to the same float.
func AppendFloat(buf []byte, f float64) []byte {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(buf, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(buf, f, 'f', -1, 64)
}

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

// decode is Decode, remembering strings and label sets in c unless it is nil.
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
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(data, i)
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
						r2, ok = hex4(data, i+2)
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

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
