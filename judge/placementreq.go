package judge

import (
	"bytes"
	"io"
	"strconv"

	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/judge/api"
)

// The placement request is the judge's hottest input: encoding/json's Decoder cost
// about as much per request as the decision. decodePlacementFast reads the shapes callers
// send (an object of the known keys with plain strings, a list of plain strings, a
// non-negative integer, a boolean, and the expected work: an object of plain numbers)
// straight from the body; anything else (an escape in a string, null, a fraction where
// an integer belongs, an unknown or malformed field) goes to encoding/json, which
// decides and words the error. FuzzPlacementDecoders checks that the two agree whenever
// the fast one answers.

// readBody reads r whole into a pooled buffer (placement bodies are small: at most
// MaxPlacementBytes); put it back with bodyBufs.Put. The decoders copy what they keep.
func readBody(r io.Reader) (*bytes.Buffer, error) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(r)
	return buf, err
}

// decodePlacementFast decodes b when it is one of the plain shapes, and says whether it
// did; on false the caller decodes with encoding/json.
func decodePlacementFast(b []byte) (api.PlacementRequest, bool) {
	var req api.PlacementRequest
	d := fastJSON{b: b}
	if !d.byte('{') {
		return req, false
	}
	if d.peek('}') {
		d.i++
		return req, d.end()
	}
	var seen uint8 // the fields given so far: one given twice is for the strict decoder to refuse
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return req, false
		}
		bit := uint8(1) << placementField(key)
		if seen&bit != 0 {
			return req, false
		}
		seen |= bit
		switch key {
		case "instance":
			req.Instance, ok = d.str()
		case "algorithm":
			req.Algorithm, ok = d.str()
		case "explain":
			req.Explain, ok = d.str()
		case "exclude":
			req.Exclude, ok = d.strs()
		case "top":
			req.Top, ok = d.uint()
		case "dry_run":
			req.DryRun, ok = d.bool()
		case "expected":
			req.Expected, ok = d.workHint()
		default:
			return req, false
		}
		if !ok {
			return req, false
		}
		if d.peek(',') {
			d.i++
			continue
		}
		if !d.byte('}') {
			return req, false
		}
		return req, d.end()
	}
}

// placementField numbers a placement request's fields for decodePlacementFast's set of
// those seen (an unknown one is refused there anyway).
func placementField(key string) int {
	switch key {
	case "instance":
		return 0
	case "algorithm":
		return 1
	case "explain":
		return 2
	case "exclude":
		return 3
	case "top":
		return 4
	case "dry_run":
		return 5
	case "expected":
		return 6
	}
	return 7
}

// fastJSON reads the plain JSON values decodePlacementFast accepts; every method
// returns false on anything else.
type fastJSON struct {
	b []byte
	i int
}

func (d *fastJSON) space() { d.i = jsonenc.SkipSpace(d.b, d.i) }

// peek skips space and reports whether c is next.
func (d *fastJSON) peek(c byte) bool {
	d.space()
	return d.i < len(d.b) && d.b[d.i] == c
}

func (d *fastJSON) byte(c byte) bool {
	if !d.peek(c) {
		return false
	}
	d.i++
	return true
}

// end reports whether only space is left.
func (d *fastJSON) end() bool {
	d.space()
	return d.i == len(d.b)
}

// str reads a string of printable ASCII without escapes (others go the slow way, which
// also checks UTF-8 the way encoding/json does).
func (d *fastJSON) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
	}
	return "", false
}

func (d *fastJSON) strs() ([]string, bool) {
	if !d.byte('[') {
		return nil, false
	}
	out := []string{}
	if d.peek(']') {
		d.i++
		return out, true
	}
	for {
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if d.peek(',') {
			d.i++
			continue
		}
		return out, d.byte(']')
	}
}

// uint reads a non-negative integer of at most 9 digits without leading zeros.
func (d *fastJSON) uint() (int, bool) {
	d.space()
	start, n := d.i, 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' && d.i-start < 9 {
		n = n*10 + int(d.b[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	if digits == 0 || (digits > 1 && d.b[start] == '0') || d.i < len(d.b) && (d.b[d.i] >= '0' && d.b[d.i] <= '9' || d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, false
	}
	return n, true
}

// workHint reads the expected work: an object of rows_per_s and bytes_per_s, plain
// numbers. A key given twice keeps the last value, as with encoding/json.
func (d *fastJSON) workHint() (*api.WorkHint, bool) {
	if !d.byte('{') {
		return nil, false
	}
	// The hint and its numbers in one allocation.
	box := &struct {
		h                 api.WorkHint
		rows, bytes, read float64
	}{}
	h := &box.h
	if d.peek('}') {
		d.i++
		return h, true
	}
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return nil, false
		}
		v, ok := d.number()
		if !ok {
			return nil, false
		}
		switch {
		case key == "rows_per_s" && h.RowsPerS == nil:
			box.rows = v
			h.RowsPerS = &box.rows
		case key == "bytes_per_s" && h.BytesPerS == nil:
			box.bytes = v
			h.BytesPerS = &box.bytes
		case key == "binlog_bytes_per_s" && h.BinlogBytesPerS == nil:
			box.read = v
			h.BinlogBytesPerS = &box.read
		default: // unknown, or given twice: for the strict decoder to refuse
			return nil, false
		}
		if d.peek(',') {
			d.i++
			continue
		}
		return h, d.byte('}')
	}
}

// number reads a JSON number (RFC 8259's grammar) that a float64 holds: one out of
// range is left to encoding/json, which words the error.
func (d *fastJSON) number() (float64, bool) {
	d.space()
	b, start := d.b, d.i
	i := start
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, false
	}
	d.i = i
	return v, true
}

func (d *fastJSON) bool() (bool, bool) {
	d.space()
	switch {
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		d.i += 4
		return true, true
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		d.i += 5
		return false, true
	}
	return false, false
}
