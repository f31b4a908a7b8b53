package rowenc

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// canal-protobuf writes each value as the text of its canal-json value (canalpb.go),
// which it gets by rendering the value as json, rewriting it as Canal does and unquoting
// it. For the kinds most tables are made of, read in place from a rows event, that text
// is the field's own formatting: appendCanalDirect writes it straight from the field,
// the same bytes without the detour (TestCanalDirectText compares both over random
// fields). The rest goes the long way.

// canalText is a column's Canal value: its text (nil when NULL) and its sqlType. exact:
// the text is the field's value itself (not so for text that was not valid UTF-8).
type canalText struct {
	text    []byte
	null    bool
	sqlType int
	exact   bool
}

// appendCanalDirect appends column col of im as its Canal text when im is read in place
// and the column is an integer, DECIMAL, DATETIME, TIMESTAMP or text (not binary, not
// JSON) column; ok false otherwise, with dst as it was. cf is the column's constant
// fields (its kind, and its sqlType, canalSQLTypeOf with no value).
func appendCanalDirect(dst []byte, im Image, c *Column, cf *canalColumnField, col int) (out []byte, v canalText, ok bool, err error) {
	r := im.rows
	if r == nil || r.raw == nil || im.i < 0 {
		return dst, v, false, nil
	}
	kind := cf.kind
	switch kind {
	case kindInt, kindDecimal, kindDatetime, kindTimestamp, kindText:
	default:
		return dst, v, false, nil
	}
	raw := r.raw[im.i]
	if raw.spans[col].n < 0 {
		return dst, canalText{null: true, sqlType: cf.sqlType, exact: true}, true, nil
	}
	b := raw.field(col)
	at := len(dst)
	rc := &c.raw
	v.sqlType, v.exact = cf.sqlType, true
	switch {
	case kind == kindInt && rc.kind == rawInt:
		u := uintLE(b)
		if c.Unsigned {
			dst = strconv.AppendUint(dst, u, 10)
			v.sqlType = canalUnsignedSQLType(c, u)
		} else {
			dst = strconv.AppendInt(dst, signExtend(u, len(b)), 10)
		}
	case kind == kindDecimal && rc.kind == rawDecimal:
		if dst, err = appendDecimalText(dst, b, int(rc.prec), int(rc.scale)); err != nil {
			return dst[:at], v, false, err
		}
	case kind == kindDatetime && rc.kind == rawDatetime2:
		// As stored, a day past its month's end too. A date longer than ten characters
		// (a fifth year digit, a sign: fields no server writes) keeps canal-json's 'T'.
		dst = appendDatetime2(dst, b, rc.dec, ' ')
		if dst[at+10] != ' ' {
			return dst[:at], v, false, nil
		}
	case kind == kindTimestamp && rc.kind == rawTimestamp2:
		sec, usec := int64(uintBE(b[:4])), fracMicros(b[4:], rc.dec)
		if sec == 0 { // the zero TIMESTAMP
			return dst, v, false, nil
		}
		dst = appendTimeParts(dst, c, time.Unix(sec, usec*1000), ' ', false)
	case kind == kindText && (rc.kind == rawString || rc.kind == rawBlob):
		text := b[rc.width:]
		v.exact = utf8.Valid(text)
		if v.exact {
			dst = append(dst, text...)
		} else {
			dst = appendValidUTF8(dst, text)
		}
	default:
		return dst, v, false, nil
	}
	v.text = dst[at:]
	return dst, v, true, nil
}

// canalUnsignedSQLType is the sqlType of an unsigned integer column's value u: one size
// up beyond the signed range (canalSQLTypeOf).
func canalUnsignedSQLType(c *Column, u uint64) int {
	code, bump, bits := canalIntSQLTypes(c)
	if u > 1<<(bits-1)-1 {
		return bump
	}
	return code
}
