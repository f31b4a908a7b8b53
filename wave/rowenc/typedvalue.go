package rowenc

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// A typedValue is one column value as a binary format carries it: a kind and its
// payload, decided as the JSON form's appendValue decides the JSON of the same value
// (rowImage.appendValue), so that the `protobuf` format carries what `json` carries:
// the same kinds of numbers, the same text of decimals and temporal values, the JSON
// documents compacted alike; only bytes stay bytes instead of base64.
type typedValue struct {
	kind tvKind
	i    int64
	u    uint64
	f    float64
	// b is the text or bytes of tvString, tvBytes and tvJSON: the image's own bytes or
	// the scratch's, valid until the next call with the same scratch.
	b []byte
}

type tvKind uint8

const (
	tvNull   tvKind = iota
	tvInt           // signed integers, YEAR, an ENUM index without its value list
	tvUint          // unsigned integers, BIT, a SET's bits without its value list
	tvFloat         // FLOAT (f holds the float32's value)
	tvDouble        // DOUBLE
	tvString        // text, ENUM and SET names
	tvASCII         // the text of decimals and temporal values: ASCII, so valid UTF-8 unchecked
	tvBytes         // binary strings and blobs
	tvJSON          // a JSON column's document as stored (trimmed, not empty): compacted as it is written
	tvTime          // a DATETIME or TIMESTAMP at i seconds and u nanoseconds since the epoch, rendered in UTC as it is written
)

// typedScratch is the buffers typed values are written into: text is the text a field
// read in place is first rendered as (appendRawText), out the value's own text when it
// is not rendered as it is written (tvTime, tvJSON). head is the protobuf header of the
// last row encoded with it and what it was made of (appendPBHead).
type typedScratch struct {
	text, out []byte

	head     []byte
	headT    *Table
	headType string
	headMeta Meta
}

// typedOf is appendValue's decision for go-mysql's decoded value v, typed.
func typedOf(s *typedScratch, c *Column, v any) (typedValue, error) {
	switch x := v.(type) {
	case nil:
		return typedValue{}, nil
	case int8:
		return typedInt(c, int64(x), 8), nil
	case int16:
		return typedInt(c, int64(x), 16), nil
	case int32:
		if c.Type == mysql.MYSQL_TYPE_INT24 {
			return typedInt(c, int64(x), 24), nil
		}
		return typedInt(c, int64(x), 32), nil
	case int64:
		return typedInt64(s, c, x), nil
	case int:
		return typedValue{kind: tvInt, i: int64(x)}, nil
	case uint8:
		return typedValue{kind: tvUint, u: uint64(x)}, nil
	case uint16:
		return typedValue{kind: tvUint, u: uint64(x)}, nil
	case uint32:
		return typedValue{kind: tvUint, u: uint64(x)}, nil
	case uint64:
		return typedValue{kind: tvUint, u: x}, nil
	case float32:
		return typedFloat(float64(x), tvFloat), nil
	case float64:
		return typedFloat(x, tvDouble), nil
	case string:
		return typedText(s, c, x), nil
	case []byte:
		return typedBytes(c, x), nil
	case time.Time:
		return typedTime(s, c, x), nil
	default:
		if st, ok := v.(fmt.Stringer); ok {
			s.out = append(s.out[:0], st.String()...)
			return typedValue{kind: tvString, b: s.out}, nil
		}
		return typedValue{}, fmt.Errorf("column %s: unsupported value type %T", c.Name, v)
	}
}

// typedInt is an integer of the given width: unsigned when the column is (go-mysql
// decodes every integer as signed without the table map's signedness), as appendInt.
func typedInt(c *Column, x int64, bits uint) typedValue {
	if c.Unsigned {
		return typedValue{kind: tvUint, u: uint64(x) & (math.MaxUint64 >> (64 - bits))}
	}
	return typedValue{kind: tvInt, i: x}
}

// typedInt64 is appendInt64's decision: BIGINT, ENUM, SET, BIT or DATETIME.
func typedInt64(s *typedScratch, c *Column, x int64) typedValue {
	switch c.Type {
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		s.out = appendPackedDatetime(s.out[:0], c, x, 'T')
		return typedValue{kind: tvASCII, b: s.out}
	case mysql.MYSQL_TYPE_ENUM:
		switch {
		case x >= 1 && int(x) <= len(c.Enum):
			return typedValue{kind: tvString, b: bytesOf(c.Enum[x-1])}
		case x == 0:
			return typedValue{kind: tvString} // MySQL's "invalid value" entry
		}
		return typedValue{kind: tvInt, i: x} // no value list (no metadata): the index
	case mysql.MYSQL_TYPE_SET:
		if len(c.Set) == 0 {
			return typedValue{kind: tvUint, u: uint64(x)}
		}
		out, first := s.out[:0], true
		for i, name := range c.Set {
			if i >= 64 || uint64(x)&(1<<uint(i)) == 0 {
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(out, name...)
		}
		s.out = out
		return typedValue{kind: tvString, b: out}
	case mysql.MYSQL_TYPE_BIT:
		return typedValue{kind: tvUint, u: uint64(x)}
	}
	return typedInt(c, x, 64)
}

// typedFloat is a FLOAT or DOUBLE; NaN and infinities, which no server stores and JSON
// cannot carry, are null as in the JSON form.
func typedFloat(f float64, kind tvKind) typedValue {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return typedValue{}
	}
	return typedValue{kind: kind, f: f}
}

// typedText is appendText's decision for the values go-mysql hands over as strings.
func typedText(s *typedScratch, c *Column, text string) typedValue {
	switch c.Type {
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		return typedValue{kind: tvASCII, b: bytesOf(text)}
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return typedTemporal(s, text, "")
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		if len(text) >= 10 && text[:10] == "0000-00-00" && !isEpochFraction(text) {
			return typedTemporal(s, text, "")
		}
		v := typedTemporal(s, text, "Z")
		if isEpochFraction(text) {
			copy(v.b, epochDate)
		}
		return v
	case mysql.MYSQL_TYPE_TIME2:
		s.out = appendTimeDigits(s.out[:0], bytesOf(text), c.Frac)
		return typedValue{kind: tvASCII, b: s.out}
	case mysql.MYSQL_TYPE_JSON:
		return typedJSON(bytesOf(text))
	}
	if c.JSON {
		return typedJSON(bytesOf(text))
	}
	if c.Binary {
		b := padBinary(s.out[:0], c, bytesOf(text))
		if len(b) > len(text) { // copied and padded into the scratch, not text's own bytes
			s.out = b
		}
		return typedValue{kind: tvBytes, b: b}
	}
	return typedValue{kind: tvString, b: bytesOf(text)}
}

// typedBytes is appendBytes' decision.
func typedBytes(c *Column, b []byte) typedValue {
	switch {
	case c.Type == mysql.MYSQL_TYPE_JSON || c.JSON:
		return typedJSON(b)
	case c.Binary || c.Type == mysql.MYSQL_TYPE_GEOMETRY:
		return typedValue{kind: tvBytes, b: b}
	}
	return typedValue{kind: tvString, b: b}
}

// typedTemporal is appendTemporal's text: the first space a 'T', suffix after it.
func typedTemporal(s *typedScratch, text, suffix string) typedValue {
	out := append(s.out[:0], text...)
	if i := bytes.IndexByte(out, ' '); i >= 0 {
		out[i] = 'T'
	}
	out = append(out, suffix...)
	s.out = out
	return typedValue{kind: tvASCII, b: out}
}

// typedTime is appendTime's text, without the quotes: left to the writer (tvTime) when
// it renders t in UTC, as a TIMESTAMP always is and a DATETIME read in place (a UTC
// time.Time) is; a DATETIME in another location is rendered here.
func typedTime(s *typedScratch, c *Column, t time.Time) typedValue {
	if t.Location() == time.UTC || isTimestamp(c) {
		return typedValue{kind: tvTime, i: t.Unix(), u: uint64(t.Nanosecond())}
	}
	out := appendTimeText(s.out[:0], c, t)
	s.out = out
	return typedValue{kind: tvASCII, b: out}
}

// typedJSON is appendJSONDoc's decision: null for an empty document, else the document,
// which the writer compacts as it writes it, or keeps as a string when it is not JSON
// (appendPBJSON).
func typedJSON(b []byte) typedValue {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return typedValue{}
	}
	return typedValue{kind: tvJSON, b: b}
}

// typed is QueryRow.appendValue's decision for a snapshot's value. Integers take the
// column's signedness (a YEAR comes over the binary protocol as unsigned, from the
// binlog as signed), so that a snapshot row and an insert of it carry the same kinds.
func (r QueryRow) typed(s *typedScratch, c *Column, i int) (typedValue, error) {
	fv := &r[i]
	switch fv.Type {
	case mysql.FieldValueTypeNull:
		return typedValue{}, nil
	case mysql.FieldValueTypeSigned, mysql.FieldValueTypeUnsigned:
		if c.Unsigned {
			return typedValue{kind: tvUint, u: fv.AsUint64()}, nil
		}
		return typedValue{kind: tvInt, i: fv.AsInt64()}, nil
	case mysql.FieldValueTypeFloat:
		if c.Type == mysql.MYSQL_TYPE_FLOAT {
			return typedFloat(float64(float32(fv.AsFloat64())), tvFloat), nil
		}
		return typedFloat(fv.AsFloat64(), tvDouble), nil
	}
	b := fv.AsString()
	switch c.Type {
	case mysql.MYSQL_TYPE_BIT:
		var x uint64
		for _, d := range b {
			x = x<<8 | uint64(d)
		}
		return typedValue{kind: tvUint, u: x}, nil
	case mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
		if len(b) < len("2006-01-02 15:04:05") || b[10] != ' ' {
			return typedValue{kind: tvString, b: b}, nil // not a datetime: keep it whole
		}
		out := appendQueryTemporal(s.out[:0], b, c.Frac, c.Type == mysql.MYSQL_TYPE_TIMESTAMP2)
		s.out = out
		return typedValue{kind: tvString, b: out[1 : len(out)-1]}, nil
	case mysql.MYSQL_TYPE_TIME2:
		s.out = appendTimeDigits(s.out[:0], b, c.Frac)
		return typedValue{kind: tvString, b: s.out}, nil
	}
	return typedBytes(c, b), nil
}
