package rowenc

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/jsonenc"
)

// The peer formats (format_*.go) render values from the json format's rendering of each
// column (Image.AppendJSON): the value is appended to the message as json renders it,
// then rewritten in place into the peer's convention. The json rendering is the same
// for binlog rows read in place, rows go-mysql decoded and snapshot rows (FuzzRawAsDecoded,
// TestSnapshotMatchesBinlogIntegration), so every format is too, and no value is boxed or
// parsed twice.

// valueKind is what a column's json rendering holds, as the peer formats tell them apart.
type valueKind uint8

const (
	kindInt       valueKind = iota // a JSON number: TINYINT … BIGINT
	kindFloat                      // a JSON number (or null for NaN): FLOAT
	kindDouble                     // DOUBLE
	kindDecimal                    // a JSON string of the exact decimal
	kindDate                       // "yyyy-MM-dd"
	kindTime                       // "[-]HH:mm:ss[.ffffff]"
	kindDatetime                   // "yyyy-MM-ddTHH:mm:ss[.ffffff]"
	kindTimestamp                  // "yyyy-MM-ddTHH:mm:ss[.ffffff]Z" (UTC; the zero date without Z)
	kindYear                       // a JSON number
	kindBit                        // a JSON number
	kindEnum                       // a JSON string (the index as a number without a value list)
	kindSet                        // a JSON string "a,b" (the bits as a number without a value list)
	kindJSON                       // a JSON document
	kindBinary                     // a JSON string, base64 of the bytes
	kindText                       // a JSON string
)

// kindOf classifies a column as appendValue renders it.
func kindOf(c *Column) valueKind {
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		return kindInt
	case mysql.MYSQL_TYPE_FLOAT:
		return kindFloat
	case mysql.MYSQL_TYPE_DOUBLE:
		return kindDouble
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		return kindDecimal
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return kindDate
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return kindTime
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return kindDatetime
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return kindTimestamp
	case mysql.MYSQL_TYPE_YEAR:
		return kindYear
	case mysql.MYSQL_TYPE_BIT:
		return kindBit
	case mysql.MYSQL_TYPE_ENUM:
		return kindEnum
	case mysql.MYSQL_TYPE_SET:
		return kindSet
	case mysql.MYSQL_TYPE_JSON:
		return kindJSON
	case mysql.MYSQL_TYPE_GEOMETRY:
		return kindBinary
	}
	switch {
	case c.JSON:
		return kindJSON
	case c.Binary:
		return kindBinary
	}
	return kindText
}

// isNullToken reports whether a json rendering is null.
func isNullToken(tok []byte) bool { return len(tok) == 4 && string(tok) == "null" }

// rewriteTail replaces dst[at:], a value's json rendering, by what f appends for it:
// f appends after the token (reading the token, which the append never changes), and the
// result is moved down over it. No allocation once dst has grown to the message's size.
func rewriteTail(dst []byte, at int, f func(dst, tok []byte) []byte) []byte {
	n := len(dst)
	dst = f(dst, dst[at:n])
	m := copy(dst[at:], dst[n:])
	return dst[:at+m]
}

// appendQuoted appends a number token as a JSON string ("12").
func appendQuoted(dst, tok []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, tok...)
	return append(dst, '"')
}

// appendJSONText appends a JSON document token as a JSON string of its text (a document
// that is itself a string keeps its quotes inside).
func appendJSONText(dst, tok []byte) []byte { return jsonenc.AppendString(dst, stringOf(tok)) }

// appendSQLTemporal appends a DATETIME or TIMESTAMP token ("…T…[Z]") as the SQL form
// "yyyy-MM-dd HH:mm:ss[.ffffff]": a space for the 'T', no 'Z'.
func appendSQLTemporal(dst, tok []byte) []byte {
	at := len(dst)
	dst = append(dst, tok...)
	if len(tok) > 12 && dst[at+11] == 'T' {
		dst[at+11] = ' '
	}
	if n := len(dst); n >= 2 && dst[n-2] == 'Z' {
		dst[n-2] = '"'
		dst = dst[:n-1]
	}
	return dst
}

// isZeroDate reports whether a temporal token is MySQL's zero date ("0000-00-00…").
func isZeroDate(tok []byte) bool {
	return len(tok) >= 11 && string(tok[1:11]) == "0000-00-00"
}

// decodeBase64Token appends the bytes of a base64 string token to dst.
func decodeBase64Token(dst, tok []byte) []byte {
	if len(tok) < 2 {
		return dst
	}
	out, err := base64.StdEncoding.AppendDecode(dst, tok[1:len(tok)-1])
	if err != nil {
		return dst // not ours: appendBase64 wrote it
	}
	return out
}

// appendLatin1 appends bytes as a JSON string of one character per byte (U+0000–U+00FF):
// Java's new String(bytes, ISO_8859_1), how Canal hands binary values over as text.
func appendLatin1(dst, b []byte) []byte {
	dst = append(dst, '"')
	for _, x := range b {
		switch {
		case x == '"' || x == '\\':
			dst = append(dst, '\\', x)
		case x < 0x20:
			dst = appendControl(dst, x)
		case x < utf8.RuneSelf:
			dst = append(dst, x)
		default:
			dst = utf8.AppendRune(dst, rune(x))
		}
	}
	return append(dst, '"')
}

// appendControl appends a control character escaped as JSON writes it.
func appendControl(dst []byte, x byte) []byte {
	switch x {
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	}
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', '0', '0', hex[x>>4], hex[x&0xF])
}

// appendJavaFloat appends a float number token as Java's Float.toString or
// Double.toString (bits 32 or 64) writes the value: "1.0", "0.001", "1.0E7", "1.5E-4".
// Canal renders FLOAT and DOUBLE values so. The digits are the shortest that read back
// to the value.
func appendJavaFloat(dst, tok []byte, bits int) []byte {
	f, err := strconv.ParseFloat(stringOf(tok), bits)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, tok...)
	}
	return appendJavaFloatValue(dst, f, bits)
}

func appendJavaFloat32(dst, tok []byte) []byte { return appendJavaFloat(dst, tok, 32) }
func appendJavaFloat64(dst, tok []byte) []byte { return appendJavaFloat(dst, tok, 64) }

// appendJavaFloatValue appends a finite f as Java's Float.toString (bits 32) or
// Double.toString (bits 64) writes it.
func appendJavaFloatValue(dst []byte, f float64, bits int) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		at := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, bits)
		for _, c := range dst[at:] {
			if c == '.' {
				return dst
			}
		}
		return append(dst, '.', '0')
	}
	// Scientific: Go writes "1.5e-04", Java "1.5E-4". Where the shortest form has one
	// digit, Java writes the two-digit decimal nearest the value (JDK 19's spec, and
	// what Java 17 writes at the extremes): Double.MIN_VALUE is 4.9E-324, not 5.0E-324,
	// and a float's smallest 1.4E-45 (an outside trial compared them as strings).
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, bits)
	if len(s) > 1 && s[1] == 'e' || len(s) > 2 && s[0] == '-' && s[2] == 'e' {
		s = strconv.AppendFloat(buf[:0], f, 'e', 1, bits)
	}
	e := 0
	for e < len(s) && s[e] != 'e' {
		e++
	}
	mant, exp := s[:e], s[e+1:]
	dst = append(dst, mant...)
	hasPoint := false
	for _, c := range mant {
		if c == '.' {
			hasPoint = true
		}
	}
	if !hasPoint {
		dst = append(dst, '.', '0')
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	exp = exp[1:]
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	return append(dst, exp...)
}

// enumIndex is the 1-based index of an ENUM token's value in c.Enum (0: MySQL's invalid
// ”), or the token's number when the column has no value list.
func enumIndex(c *Column, tok []byte) (uint64, bool) {
	if len(tok) > 0 && tok[0] != '"' {
		n, err := strconv.ParseUint(stringOf(tok), 10, 64)
		return n, err == nil
	}
	s, ok := unquoteSimple(tok)
	if !ok {
		return 0, false
	}
	for i, v := range c.Enum {
		if v == s {
			return uint64(i + 1), true
		}
	}
	return 0, s == ""
}

// setBits is the bit set of a SET token's members ("a,b") in c.Set, or the token's number
// when the column has no value list.
func setBits(c *Column, tok []byte) (uint64, bool) {
	if len(tok) > 0 && tok[0] != '"' {
		n, err := strconv.ParseUint(stringOf(tok), 10, 64)
		return n, err == nil
	}
	s, ok := unquoteSimple(tok)
	if !ok {
		return 0, false
	}
	var bits uint64
	for start := 0; start < len(s); {
		end := start
		for end < len(s) && s[end] != ',' {
			end++
		}
		for i, v := range c.Set {
			if i < 64 && v == s[start:end] {
				bits |= 1 << uint(i)
			}
		}
		start = end + 1
	}
	return bits, true
}

// unquoteSimple returns a JSON string token's text when it has no escapes (enum and set
// values seldom do), else false; strconv.Unquote handles the rest, allocating.
func unquoteSimple(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	body := tok[1 : len(tok)-1]
	for _, c := range body {
		if c == '\\' {
			s, err := strconv.Unquote(string(tok))
			return s, err == nil
		}
	}
	return stringOf(body), true
}
