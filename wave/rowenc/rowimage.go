package rowenc

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Rows events are read in place: the capture finds each column's field in the event's
// bytes (scanRows) and encodes it straight from there (appendRaw), instead of letting
// go-mysql box every value of every row into an interface first and then type-switching
// on it (go-mysql's row decoding and the garbage it leaves were a third of the wave's
// CPU). go-mysql still parses the event's header, and still decodes whatever this file
// does not read: MySQL's binary JSON, the pre-5.6 temporal types, compressed and partial
// events, and rows logged without every column (binlog_row_image other than FULL).
// Both ways give the same message, byte for byte (FuzzRawAsDecoded).

// rawKind is how a column's field is laid out in a row image.
type rawKind uint8

const (
	rawNone       rawKind = iota // not read in place: the event goes through go-mysql
	rawInt                       // little-endian integer of width bytes
	rawYear                      // one byte, years since 1900 (0 is 0)
	rawFloat                     // IEEE 754 single
	rawDouble                    // IEEE 754 double
	rawDecimal                   // MySQL's packed decimal of width bytes
	rawDate                      // 3 bytes: day | month<<5 | year<<9
	rawTime2                     // TIME(dec)
	rawDatetime2                 // DATETIME(dec)
	rawTimestamp2                // TIMESTAMP(dec)
	rawBit                       // big-endian bits of width bytes
	rawEnum                      // little-endian index of width bytes
	rawSet                       // little-endian member bits of width bytes
	rawString                    // a width-byte length, then the bytes (CHAR, VARCHAR)
	rawBlob                      // a width-byte length, then the bytes (BLOB, TEXT, GEOMETRY)
)

// rawCol is how one column's values lie in a row image, from its table-map type and
// metadata, resolved as go-mysql's decodeValue resolves them.
type rawCol struct {
	kind        rawKind
	width       uint8 // fixed width in bytes; the length prefix's width for rawString and rawBlob
	prec, scale uint8 // rawDecimal
	dec         uint8 // fractional-second digits of rawTime2, rawDatetime2, rawTimestamp2
}

// fixedCols are the column kinds whose width the wire type alone gives.
var fixedCols = map[byte]rawCol{
	mysql.MYSQL_TYPE_TINY:     {kind: rawInt, width: 1},
	mysql.MYSQL_TYPE_SHORT:    {kind: rawInt, width: 2},
	mysql.MYSQL_TYPE_INT24:    {kind: rawInt, width: 3},
	mysql.MYSQL_TYPE_LONG:     {kind: rawInt, width: 4},
	mysql.MYSQL_TYPE_LONGLONG: {kind: rawInt, width: 8},
	mysql.MYSQL_TYPE_YEAR:     {kind: rawYear, width: 1},
	mysql.MYSQL_TYPE_FLOAT:    {kind: rawFloat, width: 4},
	mysql.MYSQL_TYPE_DOUBLE:   {kind: rawDouble, width: 8},
	mysql.MYSQL_TYPE_DATE:     {kind: rawDate, width: 3},
}

// newRawCol describes a column of wire type tp with table-map metadata meta; kind is
// rawNone for what is left to go-mysql.
func newRawCol(tp byte, meta uint16) rawCol {
	if rc, ok := fixedCols[tp]; ok {
		return rc
	}
	switch tp {
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		prec, scale := int(meta>>8), int(meta&0xff)
		if prec == 0 || prec > 65 || scale > prec || scale > 30 {
			return rawCol{}
		}
		return rawCol{kind: rawDecimal, width: uint8(decimalSize(prec, scale)), prec: uint8(prec), scale: uint8(scale)}
	case mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
		if meta > 6 {
			return rawCol{}
		}
		fracBytes := uint8(meta+1) / 2
		switch tp {
		case mysql.MYSQL_TYPE_TIME2:
			return rawCol{kind: rawTime2, width: 3 + fracBytes, dec: uint8(meta)}
		case mysql.MYSQL_TYPE_DATETIME2:
			return rawCol{kind: rawDatetime2, width: 5 + fracBytes, dec: uint8(meta)}
		}
		return rawCol{kind: rawTimestamp2, width: 4 + fracBytes, dec: uint8(meta)}
	case mysql.MYSQL_TYPE_BIT:
		nbits := int(meta>>8)*8 + int(meta&0xff)
		if n := (nbits + 7) / 8; n >= 1 && n <= 8 {
			return rawCol{kind: rawBit, width: uint8(n)}
		}
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return rawCol{kind: rawString, width: lengthWidth(int(meta))}
	case mysql.MYSQL_TYPE_STRING:
		return stringCol(meta)
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY:
		if meta >= 1 && meta <= 4 {
			return rawCol{kind: rawBlob, width: uint8(meta)}
		}
	}
	return rawCol{}
}

// stringType resolves a STRING column's real type and length from its metadata: CHAR,
// ENUM or SET (decodeValue's rule, which carries two bits of a long CHAR's length in the
// type byte).
func stringType(meta uint16) (tp byte, length int) {
	tp, length = mysql.MYSQL_TYPE_STRING, int(meta)
	if meta >= 256 {
		b0, b1 := uint8(meta>>8), uint8(meta&0xff)
		if b0&0x30 != 0x30 {
			length = int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
			tp = b0 | 0x30
		} else {
			length = int(meta & 0xff)
			tp = b0
		}
	}
	return tp, length
}

// stringCol is where a STRING column's values lie (stringType).
func stringCol(meta uint16) rawCol {
	tp, length := stringType(meta)
	switch tp {
	case mysql.MYSQL_TYPE_STRING:
		return rawCol{kind: rawString, width: lengthWidth(length)}
	case mysql.MYSQL_TYPE_ENUM:
		if n := meta & 0xff; n == 1 || n == 2 {
			return rawCol{kind: rawEnum, width: uint8(n)}
		}
	case mysql.MYSQL_TYPE_SET:
		if n := meta & 0xff; n >= 1 && n <= 8 {
			return rawCol{kind: rawSet, width: uint8(n)}
		}
	}
	return rawCol{}
}

// lengthWidth is the width of a string's length prefix: one byte below 256 bytes of
// declared length, else two.
func lengthWidth(maxLen int) uint8 {
	if maxLen < 256 {
		return 1
	}
	return 2
}

// decimalDigitBytes is the packed size of 0–8 leftover decimal digits.
var decimalDigitBytes = [9]int{0, 1, 1, 2, 2, 3, 3, 4, 4}

// decimalSize is the packed size of a DECIMAL(prec, scale): four bytes per nine digits
// on each side of the point, fewer for the rest.
func decimalSize(prec, scale int) int {
	intg := prec - scale
	return intg/9*4 + decimalDigitBytes[intg%9] + scale/9*4 + decimalDigitBytes[scale%9]
}

// span is where one column's field lies in a rows event's bytes; n < 0 is SQL NULL.
type span struct{ off, n int32 }

// rawImage is one row image read in place: the event's bytes and one span per column.
type rawImage struct {
	data  []byte
	spans []span
}

func (r rawImage) isNil() bool { return r.spans == nil }
func (r rawImage) len() int    { return len(r.spans) }

func (r rawImage) field(i int) []byte {
	sp := r.spans[i]
	return r.data[sp.off : sp.off+sp.n]
}

func (r rawImage) appendValue(dst []byte, c *Column, i int) ([]byte, error) {
	if r.spans[i].n < 0 {
		return append(dst, "null"...), nil
	}
	return appendRaw(dst, c, r.field(i))
}

// sameAs reports whether column i is the same in r and o, deciding as sameValue decides
// for go-mysql's values of the same fields: JSON documents and floating-point values by
// their encoding, the values go-mysql gives as text or time.Time as those, the rest by
// their bytes (equal bytes decode alike, different bytes differently).
func (r rawImage) sameAs(o rawImage, c *Column, i int) (bool, error) {
	xNull, yNull := r.spans[i].n < 0, o.spans[i].n < 0
	isJSON := c.Type == mysql.MYSQL_TYPE_JSON || c.JSON
	switch {
	case isJSON && !xNull && !yNull && string(r.field(i)) == string(o.field(i)):
		return true, nil
	case isJSON && xNull != yNull:
		return false, nil // SQL NULL and a document null: alike in json only (sameValue)
	case isJSON:
		return sameEncoding(r, o, c, i)
	case xNull:
		return yNull, nil
	case c.raw.kind == rawFloat || c.raw.kind == rawDouble:
		return sameEncoding(r, o, c, i) // -0 and 0 differ, NaN and NULL are both null
	case yNull:
		return false, nil
	}
	x, y := r.field(i), o.field(i)
	if string(x) == string(y) {
		return true, nil
	}
	return sameDecoded(&c.raw, x, y)
}

// sameEncoding reports whether column i encodes alike in both images.
func sameEncoding(r, o rawImage, c *Column, i int) (bool, error) {
	s := scratchPool.Get().(*[2][]byte)
	defer scratchPool.Put(s)
	var err error
	if s[0], err = r.appendValue(s[0][:0], c, i); err != nil {
		return false, err
	}
	if s[1], err = o.appendValue(s[1][:0], c, i); err != nil {
		return false, err
	}
	return string(s[0]) == string(s[1]), nil
}

// sameDecoded compares two different fields of the kinds go-mysql hands over as text or
// time.Time as sameValue compares those: times by instant, text by text (fields no
// server writes can differ and still read alike). A DATETIME is its text (rowsDecoder).
func sameDecoded(rc *rawCol, x, y []byte) (bool, error) {
	switch rc.kind {
	case rawTimestamp2:
		secX, secY := int64(uintBE(x[:4])), int64(uintBE(y[:4]))
		if secX != 0 || secY != 0 {
			return secX != 0 && secY != 0 &&
				time.Unix(secX, fracMicros(x[4:], rc.dec)*1000).Equal(time.Unix(secY, fracMicros(y[4:], rc.dec)*1000)), nil
		}
	case rawDecimal, rawDate, rawTime2, rawDatetime2:
	default:
		return false, nil
	}
	var a, b [96]byte
	tx, err := appendRawText(a[:0], rc, x)
	if err != nil {
		return false, err
	}
	ty, err := appendRawText(b[:0], rc, y)
	if err != nil {
		return false, err
	}
	return string(tx) == string(ty), nil
}

// errTruncated is a row image that ends inside a field.
var errTruncated = errors.New("row image ends inside a column")

// readableInPlace reports whether a rows event of type et, decoded by go-mysql up to its
// rows (DecodeHeader), can be read in place against table t: a plain (uncompressed,
// not partial) event, of t's very table map, with every column logged and every column
// of a kind this file reads.
func readableInPlace(et replication.EventType, e *replication.RowsEvent, t *Table) bool {
	switch et {
	case replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
	default:
		return false
	}
	if !t.inPlace || len(t.Columns) == 0 || e.Table == nil || e.Table != t.tm || int(e.ColumnCount) != len(t.Columns) {
		return false
	}
	return WholeRows(e)
}

// WholeRows reports whether every row image of e holds every column of its table, as
// binlog_row_image=FULL logs them. MINIMAL logs an update's or delete's before image as
// its key and every after image as the columns the statement set; NOBLOB leaves out the
// BLOB and TEXT columns that did not change (either may be set per session).
func WholeRows(e *replication.RowsEvent) bool {
	n := int(e.ColumnCount)
	return allSet(e.ColumnBitmap1, n) && (e.ColumnBitmap2 == nil || allSet(e.ColumnBitmap2, n))
}

// allSet reports whether the first n bits of bitmap are all set.
func allSet(bitmap []byte, n int) bool {
	if len(bitmap) < (n+7)/8 {
		return false
	}
	for i := 0; i < n/8; i++ {
		if bitmap[i] != 0xff {
			return false
		}
	}
	if rest := n % 8; rest > 0 {
		mask := byte(1<<rest - 1)
		return bitmap[n/8]&mask == mask
	}
	return true
}

// readImages reads the row images of a rows event's body (its bytes after the header)
// of type typ in place: the fields of all images appended to fields, one rawImage per
// image appended to raws. An update's images come in pairs.
func readImages(fields []span, raws []rawImage, body []byte, t *Table, typ string) ([]span, []rawImage, error) {
	fields, err := scanRows(fields, body, t)
	if err != nil {
		return fields, raws, err
	}
	cols := len(t.Columns)
	if n := len(fields) / cols; typ == TypeUpdate && n%2 != 0 {
		return fields, raws, fmt.Errorf("update event with %d row images: %w", n, errTruncated)
	}
	for i := 0; i+cols <= len(fields); i += cols {
		raws = append(raws, rawImage{data: body, spans: fields[i : i+cols : i+cols]})
	}
	return fields, raws, nil
}

// scanRows finds the fields of every row image in body (a rows event's bytes after its
// header) for table t and appends one span per column and image to spans, images in
// order: the row of an insert or delete, before and after of an update.
func scanRows(spans []span, body []byte, t *Table) ([]span, error) {
	cols := len(t.Columns)
	nullBytes := (cols + 7) / 8
	if len(body) > 1<<31-1 {
		return spans, fmt.Errorf("rows event of %d bytes", len(body))
	}
	pos := 0
	for pos < len(body) {
		if len(body)-pos < nullBytes {
			return spans, errTruncated
		}
		nulls := body[pos : pos+nullBytes]
		pos += nullBytes
		for i := range t.Columns {
			if nulls[i>>3]&(1<<(i&7)) != 0 {
				spans = append(spans, span{off: int32(pos), n: -1})
				continue
			}
			n, err := fieldSize(&t.Columns[i].raw, body[pos:])
			if err != nil {
				return spans, fmt.Errorf("column %s: %w", t.Columns[i].Name, err)
			}
			spans = append(spans, span{off: int32(pos), n: int32(n)})
			pos += n
		}
	}
	return spans, nil
}

// fieldSize is the size of the field of column rc at the start of b.
func fieldSize(rc *rawCol, b []byte) (int, error) {
	n := int(rc.width)
	if rc.kind == rawString || rc.kind == rawBlob {
		if len(b) < n {
			return 0, errTruncated
		}
		n += int(uintLE(b[:n]))
	}
	if n > len(b) || n < 0 {
		return 0, errTruncated
	}
	return n, nil
}

// uintLE and uintBE read an unsigned integer of len(b) ≤ 8 bytes.
func uintLE(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func uintBE(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// signExtend turns the low width bytes of v into a signed value.
func signExtend(v uint64, width int) int64 {
	shift := uint(64 - 8*width)
	return int64(v<<shift) >> shift
}
