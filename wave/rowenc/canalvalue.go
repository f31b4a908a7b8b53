package rowenc

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Canal's rendering of a column (Canal 1.1.7's LogEventConvert and RowsLogBuffer, which
// both of its Kafka formats carry: FlatMessage's data/old/sqlType/mysqlType and the
// protobuf Entry's Column): every value is text, and sqlType is a java.sql.Types code.
// It is built on the typed values (typedvalue.go), so it reads every kind of row image.
//
// Canal's conventions, followed here: integers in decimal, and an unsigned value above
// the signed range of its width moves sqlType one size up (TINYINT→SMALLINT,
// SMALLINT/MEDIUMINT→INTEGER, INTEGER→BIGINT, BIGINT→DECIMAL); FLOAT and DOUBLE as
// Java's Float.toString and Double.toString; DECIMAL as BigDecimal.toPlainString;
// DATETIME and TIMESTAMP as "yyyy-MM-dd HH:mm:ss" with the column's fractional digits;
// DATE "yyyy-MM-dd"; TIME "HH:mm:ss[.f]"; YEAR its four digits (VARCHAR); BIT its
// number; ENUM its index (1 for the first value, 0 for the invalid entry) and SET its
// bits as a number, as the binlog has them (mysqlType lists the values); CHAR, VARCHAR,
// TEXT and JSON as their text; BINARY, VARBINARY, BLOB and GEOMETRY as the ISO-8859-1
// string of their bytes (each byte one character), sqlType BLOB. Where BinLake differs:
// a TIMESTAMP is rendered in UTC (Canal renders it in its JVM's time zone: run it with
// TZ=UTC to compare), and a JSON document is compact (Canal prints MySQL's spaced form).

// java.sql.Types codes.
const (
	javaBit       int32 = -7
	javaTinyInt   int32 = -6
	javaSmallInt  int32 = 5
	javaInteger   int32 = 4
	javaBigInt    int32 = -5
	javaReal      int32 = 7
	javaDouble    int32 = 8
	javaDecimal   int32 = 3
	javaChar      int32 = 1
	javaVarchar   int32 = 12
	javaDate      int32 = 91
	javaTime      int32 = 92
	javaTimestamp int32 = 93
	javaBlob      int32 = 2004
	javaClob      int32 = 2005
	javaOther     int32 = 1111
)

// canalColumn is one column of one row image as Canal renders it; value is valid until
// the next call with the same scratch.
type canalColumn struct {
	value   []byte
	isNull  bool
	sqlType int32
}

// canalValue renders column c's typed value v as Canal does; its text goes into s.
func canalValue(s *typedScratch, c *Column, v typedValue) canalColumn {
	if v.kind == tvNull {
		return canalColumn{isNull: true, sqlType: canalSQLType(c)}
	}
	out := s.valid[:0]
	cc := canalColumn{sqlType: canalSQLType(c)}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		if v.kind == tvUint {
			out = strconv.AppendUint(out, v.u, 10)
			if c.Unsigned && v.u > signedMax(c.Type) {
				cc.sqlType = unsignedSQLType(c.Type)
			}
		} else {
			out = strconv.AppendInt(out, v.i, 10)
		}
	case mysql.MYSQL_TYPE_YEAR:
		if v.i == 0 {
			out = append(out, "0000"...)
		} else {
			out = strconv.AppendInt(out, v.i, 10)
		}
	case mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_DOUBLE:
		bits := 64
		if v.kind == tvFloat {
			bits = 32
		}
		out = appendJavaFloat(out, v.f, bits)
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		out = appendPlainDecimal(out, v.b)
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		// The typed value is ISO 8601 ('T', a TIMESTAMP's 'Z'); Canal's has a space.
		out = append(out, bytes.TrimSuffix(v.b, []byte("Z"))...)
		if i := bytes.IndexByte(out, 'T'); i >= 0 {
			out[i] = ' '
		}
	case mysql.MYSQL_TYPE_ENUM:
		if v.kind == tvString {
			out = strconv.AppendInt(out, int64(enumIndex(c.Enum, v.b)), 10)
		} else {
			out = strconv.AppendInt(out, v.i, 10)
		}
	case mysql.MYSQL_TYPE_SET:
		if v.kind == tvString {
			out = strconv.AppendUint(out, setBits(c.Set, v.b), 10)
		} else {
			out = strconv.AppendUint(out, v.u, 10)
		}
	default:
		switch v.kind {
		case tvInt:
			out = strconv.AppendInt(out, v.i, 10)
		case tvUint:
			out = strconv.AppendUint(out, v.u, 10)
		case tvBytes:
			out = appendLatin1(out, v.b)
		default:
			out = appendValidUTF8(out, v.b)
		}
	}
	s.valid = out
	cc.value = out
	return cc
}

// canalSQLType is the java.sql.Types code Canal gives a column of c's type (before the
// unsigned bump, which depends on the value).
func canalSQLType(c *Column) int32 {
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return javaTinyInt
	case mysql.MYSQL_TYPE_SHORT:
		return javaSmallInt
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_ENUM:
		return javaInteger
	case mysql.MYSQL_TYPE_LONGLONG:
		return javaBigInt
	case mysql.MYSQL_TYPE_FLOAT:
		return javaReal
	case mysql.MYSQL_TYPE_DOUBLE:
		return javaDouble
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		return javaDecimal
	case mysql.MYSQL_TYPE_BIT, mysql.MYSQL_TYPE_SET:
		return javaBit
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return javaTimestamp
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return javaTime
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return javaDate
	case mysql.MYSQL_TYPE_YEAR, mysql.MYSQL_TYPE_JSON:
		return javaVarchar
	case mysql.MYSQL_TYPE_GEOMETRY:
		return javaBlob
	case mysql.MYSQL_TYPE_BLOB:
		if c.Binary {
			return javaBlob
		}
		return javaClob // TEXT, and MariaDB's JSON (a LONGTEXT)
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		if c.Binary {
			return javaBlob
		}
		return javaVarchar
	case mysql.MYSQL_TYPE_STRING:
		if c.Binary {
			return javaBlob
		}
		return javaChar
	}
	return javaOther
}

// signedMax is the largest signed value of an integer type's width.
func signedMax(t byte) uint64 {
	switch t {
	case mysql.MYSQL_TYPE_TINY:
		return math.MaxInt8
	case mysql.MYSQL_TYPE_SHORT:
		return math.MaxInt16
	case mysql.MYSQL_TYPE_INT24:
		return 1<<23 - 1
	case mysql.MYSQL_TYPE_LONG:
		return math.MaxInt32
	}
	return math.MaxInt64
}

// unsignedSQLType is the type Canal moves an unsigned value above the signed range to.
func unsignedSQLType(t byte) int32 {
	switch t {
	case mysql.MYSQL_TYPE_TINY:
		return javaSmallInt
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24:
		return javaInteger
	case mysql.MYSQL_TYPE_LONG:
		return javaBigInt
	}
	return javaDecimal
}

// enumIndex is the binlog's index of an ENUM value: 1 for the first, 0 for the invalid
// entry "" (or a name not in the list).
func enumIndex(names []string, v []byte) int {
	for i, n := range names {
		if n == string(v) {
			return i + 1
		}
	}
	return 0
}

// setBits is the binlog's bits of a SET value written as its names joined by ','.
func setBits(names []string, v []byte) uint64 {
	var bits uint64
	for len(v) > 0 {
		name := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			name, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		for i, n := range names {
			if i < 64 && n == string(name) {
				bits |= 1 << uint(i)
				break
			}
		}
	}
	return bits
}

// appendLatin1 appends b as Canal's new String(b, ISO_8859_1) encodes in UTF-8: each
// byte the character of the same number.
func appendLatin1(dst, b []byte) []byte {
	for _, x := range b {
		if x < 0x80 {
			dst = append(dst, x)
		} else {
			dst = append(dst, 0xc0|x>>6, 0x80|x&0x3f)
		}
	}
	return dst
}

// appendPlainDecimal appends a decimal's text as BigDecimal.toPlainString writes it:
// the same digits, without the sign of a zero (a BigDecimal has no negative zero).
func appendPlainDecimal(dst, text []byte) []byte {
	if len(text) > 1 && text[0] == '-' && strings.Trim(string(text[1:]), "0.") == "" {
		text = text[1:]
	}
	return append(dst, text...)
}

// appendJavaFloat appends f as Java's Double.toString (bits 64) or Float.toString (bits
// 32) writes it: the shortest digits that read back as f, in plain notation with at
// least one decimal for 1e-3 <= |f| < 1e7 ("100.0", "0.001"), else as d.dddE±n
// ("1.0E7", "1.5E-4").
func appendJavaFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		at := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, bits)
		if bytes.IndexByte(dst[at:], '.') < 0 {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits) // -d.ddde±dd
	mant, exp, _ := bytes.Cut(e, []byte("e"))
	dst = append(dst, mant...)
	if bytes.IndexByte(mant, '.') < 0 {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	n, _ := strconv.Atoi(string(exp[1:]))
	return strconv.AppendInt(dst, int64(n), 10)
}

// canalMySQLTypes is the mysqlType of each of t's columns (canalMySQLType).
func canalMySQLTypes(t *Table) []string {
	types := make([]string, len(t.Columns))
	for i := range t.Columns {
		types[i] = canalMySQLType(&t.Columns[i])
	}
	return types
}

// canalMySQLType is a column's type as Canal's mysqlType gives it (information_schema's
// COLUMN_TYPE, as MySQL 8 writes it: no display widths), from what the table map said
// (MapColumns): "bigint unsigned", "decimal(20,4)", "datetime(6)", "enum('a','b')",
// "mediumblob". Lengths of character and binary strings and of BIT are left out (the
// binlog gives a string's size in bytes, not characters), and so are a decimal's
// precision and a TIME's digits when the table map was not read (a snapshot's table).
func canalMySQLType(c *Column) string {
	unsigned := func(s string) string {
		if c.Unsigned {
			return s + " unsigned"
		}
		return s
	}
	digits := func(s string, n uint8) string {
		if n > 0 {
			return s + "(" + strconv.Itoa(int(n)) + ")"
		}
		return s
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return unsigned("tinyint")
	case mysql.MYSQL_TYPE_SHORT:
		return unsigned("smallint")
	case mysql.MYSQL_TYPE_INT24:
		return unsigned("mediumint")
	case mysql.MYSQL_TYPE_LONG:
		return unsigned("int")
	case mysql.MYSQL_TYPE_LONGLONG:
		return unsigned("bigint")
	case mysql.MYSQL_TYPE_FLOAT:
		return unsigned("float")
	case mysql.MYSQL_TYPE_DOUBLE:
		return unsigned("double")
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		if c.raw.kind == rawDecimal {
			return unsigned("decimal(" + strconv.Itoa(int(c.raw.prec)) + "," + strconv.Itoa(int(c.raw.scale)) + ")")
		}
		return unsigned("decimal")
	case mysql.MYSQL_TYPE_YEAR:
		return "year"
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return "date"
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return digits("time", c.raw.dec)
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return digits("datetime", c.Frac)
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return digits("timestamp", c.Frac)
	case mysql.MYSQL_TYPE_BIT:
		return "bit"
	case mysql.MYSQL_TYPE_ENUM:
		return "enum(" + quotedList(c.Enum) + ")"
	case mysql.MYSQL_TYPE_SET:
		return "set(" + quotedList(c.Set) + ")"
	case mysql.MYSQL_TYPE_JSON:
		return "json"
	case mysql.MYSQL_TYPE_GEOMETRY:
		return "geometry"
	case mysql.MYSQL_TYPE_BLOB:
		if c.JSON {
			return "longtext" // MariaDB's JSON
		}
		size := ""
		if c.raw.kind == rawBlob && c.raw.width <= 4 {
			size = [5]string{"", "tiny", "", "medium", "long"}[c.raw.width]
		}
		if c.Binary {
			return size + "blob"
		}
		return size + "text"
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		if c.Binary {
			return "varbinary"
		}
		return "varchar"
	case mysql.MYSQL_TYPE_STRING:
		if c.Binary {
			return "binary"
		}
		return "char"
	}
	return "unknown"
}

// quotedList is an ENUM's or SET's values as COLUMN_TYPE lists them: 'a','b', a quote
// doubled.
func quotedList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(n, "'", "''"))
		b.WriteByte('\'')
	}
	return b.String()
}
