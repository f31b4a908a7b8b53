package rowenc

import (
	"bytes"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/jsonenc"
)

// QueryRow is a row image as a query returns it over the binary protocol (a snapshot's
// chunk), encoded from the result's own values: the JSON of each column is what the
// binlog's decoded value of the same column gives (TestSnapshotMatchesBinlogIntegration
// compares them), without boxing every value into an interface first. The result's
// buffers hold the bytes, so a QueryRow lives as long as its chunk.
type QueryRow []mysql.FieldValue

func (r QueryRow) isNil() bool { return r == nil }
func (r QueryRow) len() int    { return len(r) }

func (r QueryRow) appendValue(dst []byte, c *Column, i int) ([]byte, error) {
	fv := &r[i]
	switch fv.Type {
	case mysql.FieldValueTypeNull:
		return append(dst, "null"...), nil
	case mysql.FieldValueTypeSigned:
		return strconv.AppendInt(dst, fv.AsInt64(), 10), nil
	case mysql.FieldValueTypeUnsigned:
		return strconv.AppendUint(dst, fv.AsUint64(), 10), nil
	case mysql.FieldValueTypeFloat:
		if c.Type == mysql.MYSQL_TYPE_FLOAT {
			return appendFloat(dst, float64(float32(fv.AsFloat64())), 32), nil
		}
		return appendFloat(dst, fv.AsFloat64(), 64), nil
	}
	b := fv.AsString()
	switch c.Type {
	case mysql.MYSQL_TYPE_BIT:
		var x uint64
		for _, d := range b {
			x = x<<8 | uint64(d)
		}
		return strconv.AppendUint(dst, x, 10), nil
	case mysql.MYSQL_TYPE_DATETIME2:
		return appendQueryTemporal(dst, b, c.Frac, false), nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return appendQueryTemporal(dst, b, c.Frac, true), nil
	case mysql.MYSQL_TYPE_TIME2:
		return append(appendTimeDigits(append(dst, '"'), b, c.Frac), '"'), nil
	}
	return appendBytes(dst, c, b), nil
}

// sameAs compares the encodings: a snapshot row has no before image to compare, so this
// only completes the rowImage contract.
func (r QueryRow) sameAs(o QueryRow, c *Column, i int) (bool, error) {
	a, err := r.appendValue(nil, c, i)
	if err != nil {
		return false, err
	}
	b, err := o.appendValue(nil, c, i)
	return bytes.Equal(a, b), err
}

// appendQueryTemporal appends the binary protocol's "2006-01-02 15:04:05[.999999]" as
// the binlog's value of the column encodes: ISO 8601 with the column's fractional
// digits, and a TIMESTAMP (utc) with a 'Z' unless it is the zero date.
func appendQueryTemporal(dst, b []byte, frac uint8, utc bool) []byte {
	if len(b) < len("2006-01-02 15:04:05") || b[10] != ' ' {
		return jsonenc.AppendString(dst, stringOf(b)) // not a datetime: keep it whole
	}
	dst = append(dst, '"')
	dst = append(dst, b[:10]...)
	dst = append(dst, 'T')
	dst = append(dst, b[11:19]...)
	var have []byte
	if len(b) > 20 && b[19] == '.' {
		have = b[20:]
	}
	dst = appendFracDigits(dst, have, frac)
	if utc && !bytes.HasPrefix(b, []byte("0000-00-00")) {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}

// appendTimeDigits appends a TIME's text "[-]h…h:mm:ss[.f…]" with exactly frac
// fractional digits, the column's: cut, or padded with zeros where go-mysql and the
// binary protocol leave out a fraction of zero ("12:34:56" of a TIME(6) is
// "12:34:56.000000", as a SELECT shows it).
func appendTimeDigits(dst, b []byte, frac uint8) []byte {
	var have []byte
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		b, have = b[:i], b[i+1:]
	}
	return appendFracDigits(append(dst, b...), have, frac)
}

// appendFracDigits appends '.' and frac fractional digits (at most 6), those of have
// first, then zeros; nothing when frac is 0.
func appendFracDigits(dst, have []byte, frac uint8) []byte {
	if frac == 0 {
		return dst
	}
	dst = append(dst, '.')
	for i := range int(min(frac, 6)) {
		if i < len(have) {
			dst = append(dst, have[i])
		} else {
			dst = append(dst, '0')
		}
	}
	return dst
}
