package rowenc

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

// A GEOMETRY value, as the binlog and a SELECT hand it over, is MySQL's internal form:
// the SRID as 4 bytes little-endian, then the geometry in OGC well-known binary (WKB, 2-D:
// a byte-order byte, a uint32 type, the body). The json and protobuf formats send those
// bytes as they are; maxwell-json sends the geometry as Maxwell's WKT (appendWKT) and
// debezium-json as Debezium's {wkb, srid} struct (splitGeometry, wkbPoint).

// GeometryType is the declared type of a GEOMETRY column, numbered as the table map's
// optional metadata (GEOMETRY_TYPE, binlog_row_metadata=FULL) numbers it on MySQL and
// MariaDB. It is GeometryAny for a GEOMETRY column and when the type is not known.
type GeometryType uint8

const (
	GeometryAny GeometryType = iota
	GeometryPoint
	GeometryLineString
	GeometryPolygon
	GeometryMultiPoint
	GeometryMultiLineString
	GeometryMultiPolygon
	GeometryCollection
)

// geometryTypeNames are the column types' names as MySQL 8 writes them
// (information_schema's DATA_TYPE; MariaDB's name for a collection is
// "geometrycollection").
var geometryTypeNames = [...]string{"geometry", "point", "linestring", "polygon", "multipoint",
	"multilinestring", "multipolygon", "geomcollection"}

// String is the type's name as MySQL 8 writes it ("point", "geomcollection").
func (g GeometryType) String() string {
	if int(g) < len(geometryTypeNames) {
		return geometryTypeNames[g]
	}
	return "geometry"
}

// GeometryTypeNamed is the GeometryType of a column type's name (information_schema's
// DATA_TYPE: "point", "geometrycollection" or MySQL 8's "geomcollection"); GeometryAny
// for any other name.
func GeometryTypeNamed(name string) GeometryType {
	name = strings.ToLower(name)
	if name == "geometrycollection" {
		return GeometryCollection
	}
	for i, n := range geometryTypeNames {
		if n == name {
			return GeometryType(i)
		}
	}
	return GeometryAny
}

// splitGeometry splits a MySQL geometry value into its SRID and its WKB, which must be
// one whole geometry that appendWKT can write; ok is false for anything else.
func splitGeometry(b []byte) (srid uint32, wkb []byte, ok bool) {
	if len(b) < 4 {
		return 0, nil, false
	}
	wkb = b[4:]
	r := wkbReader{b: wkb}
	if !r.geometry(0, 0) || len(r.b) != 0 {
		return 0, nil, false
	}
	return binary.LittleEndian.Uint32(b), wkb, true
}

// wkbPoint reads the coordinates of a WKB point (21 bytes: byte order, type 1, x, y), as
// Debezium's Point does; ok is false for anything else, or a coordinate not finite.
func wkbPoint(wkb []byte) (x, y float64, ok bool) {
	r := wkbReader{b: wkb}
	if len(wkb) != 21 || !r.header() || r.typ != wkbTypePoint {
		return 0, 0, false
	}
	return r.coords()
}

// appendGeometryWKT appends a MySQL geometry value (SRID, then WKB) as the WKT Maxwell
// writes for it: the SRID left out, the WKB written by appendWKT. ok is false, with dst
// as it was, when b is not such a value.
func appendGeometryWKT(dst, b []byte) ([]byte, bool) {
	if len(b) < 4 {
		return dst, false
	}
	return appendWKT(dst, b[4:])
}

// appendWKT appends a WKB geometry as the well-known text JTS's WKTWriter (1.13, which
// Maxwell writes geometry values with) makes of it: the type's name, a space, the body
// ("POINT (1 2)", "LINESTRING (0 0, 1.5 -2)", "MULTIPOINT ((1 2), (3 4))",
// "GEOMETRYCOLLECTION (POINT (1 2), POLYGON EMPTY)"); a collection of empty geometries
// is EMPTY itself; numbers as appendJTSNumber writes them. ok is false, with dst as it
// was, when wkb is not one whole 2-D WKB geometry with finite coordinates: a truncated or
// overlong value, an unknown type or byte order, a collection holding the wrong type or
// nested deeper than maxWKBDepth.
func appendWKT(dst, wkb []byte) ([]byte, bool) {
	r := wkbReader{b: wkb, out: dst, write: true}
	if !r.geometry(0, 0) || len(r.b) != 0 {
		return dst, false
	}
	return r.out, true
}

// WKB geometry types (2-D).
const (
	wkbTypePoint = 1 + iota
	wkbTypeLineString
	wkbTypePolygon
	wkbTypeMultiPoint
	wkbTypeMultiLineString
	wkbTypeMultiPolygon
	wkbTypeGeometryCollection
)

var wkbTypeNames = [...]string{"", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT",
	"MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION"}

// maxWKBDepth bounds how deep geometry collections nest in a value appendWKT reads.
const maxWKBDepth = 64

// wkbReader reads WKB from b, consuming it, and appends the WKT to out when write is set.
type wkbReader struct {
	b     []byte
	out   []byte
	write bool
	order binary.ByteOrder // of the geometry being read
	typ   uint32
}

// header reads a geometry's byte order and type.
func (r *wkbReader) header() bool {
	if len(r.b) < 5 {
		return false
	}
	switch r.b[0] {
	case 0:
		r.order = binary.BigEndian
	case 1:
		r.order = binary.LittleEndian
	default:
		return false
	}
	r.typ = r.order.Uint32(r.b[1:5])
	r.b = r.b[5:]
	return r.typ >= wkbTypePoint && r.typ <= wkbTypeGeometryCollection
}

// count reads a uint32 count of items of at least size bytes each: false when the rest of
// the value cannot hold them.
func (r *wkbReader) count(size int) (int, bool) {
	if len(r.b) < 4 {
		return 0, false
	}
	n := r.order.Uint32(r.b)
	r.b = r.b[4:]
	if uint64(n)*uint64(size) > uint64(len(r.b)) {
		return 0, false
	}
	return int(n), true
}

// coords reads a point's x and y, which must be finite.
func (r *wkbReader) coords() (x, y float64, ok bool) {
	if len(r.b) < 16 {
		return 0, 0, false
	}
	x = math.Float64frombits(r.order.Uint64(r.b))
	y = math.Float64frombits(r.order.Uint64(r.b[8:]))
	r.b = r.b[16:]
	if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, 0, false
	}
	return x, y, true
}

func (r *wkbReader) put(s string) {
	if r.write {
		r.out = append(r.out, s...)
	}
}

// coordinate reads a point's coordinates and writes them as "x y".
func (r *wkbReader) coordinate() bool {
	x, y, ok := r.coords()
	if ok && r.write {
		r.out = appendJTSNumber(r.out, x)
		r.out = append(r.out, ' ')
		r.out = appendJTSNumber(r.out, y)
	}
	return ok
}

// geometry reads one geometry, of type want (any when 0), and writes its tagged text:
// "POINT (1 2)".
func (r *wkbReader) geometry(depth int, want uint32) bool {
	if !r.header() || want != 0 && r.typ != want {
		return false
	}
	r.put(wkbTypeNames[r.typ])
	r.put(" ")
	_, ok := r.body(depth)
	return ok
}

// body reads the body of a geometry of type r.typ, its header read, and writes its text:
// "(1 2)", or "EMPTY" for an empty geometry (then empty is true).
func (r *wkbReader) body(depth int) (empty, ok bool) {
	switch r.typ {
	case wkbTypePoint:
		r.put("(")
		ok = r.coordinate()
		r.put(")")
		return false, ok
	case wkbTypeLineString:
		return r.points()
	case wkbTypePolygon:
		return r.polygon()
	}
	// A collection: its members each have a header of their own.
	if depth >= maxWKBDepth {
		return false, false
	}
	typ := r.typ
	n, ok := r.count(5)
	if !ok {
		return false, false
	}
	at := len(r.out)
	r.put("(")
	empty = true
	for i := range n {
		if i > 0 {
			r.put(", ")
		}
		var e bool
		switch typ {
		case wkbTypeMultiPoint:
			// JTS writes a multipoint's members in parentheses of their own.
			if !r.header() || r.typ != wkbTypePoint {
				return false, false
			}
			e, ok = r.body(depth + 1)
		case wkbTypeMultiLineString, wkbTypeMultiPolygon:
			if !r.header() || r.typ != typ-3 {
				return false, false
			}
			e, ok = r.body(depth + 1)
		default:
			if !r.header() {
				return false, false
			}
			r.put(wkbTypeNames[r.typ])
			r.put(" ")
			e, ok = r.body(depth + 1)
		}
		if !ok {
			return false, false
		}
		empty = empty && e
	}
	r.put(")")
	if empty {
		// JTS: a collection is empty when all its members are.
		r.out = r.out[:at]
		r.put("EMPTY")
	}
	return empty, true
}

// points reads a line string's (or ring's) points: "(0 0, 1 1)", or EMPTY.
func (r *wkbReader) points() (empty, ok bool) {
	n, ok := r.count(16)
	if !ok {
		return false, false
	}
	if n == 0 {
		r.put("EMPTY")
		return true, true
	}
	r.put("(")
	for i := range n {
		if i > 0 {
			r.put(", ")
		}
		if !r.coordinate() {
			return false, false
		}
	}
	r.put(")")
	return false, true
}

// polygon reads a polygon's rings: "((0 0, 1 0, 0 1, 0 0), (…))"; EMPTY when it has none
// or its exterior ring is empty (JTS's Polygon.isEmpty).
func (r *wkbReader) polygon() (empty, ok bool) {
	n, ok := r.count(4)
	if !ok {
		return false, false
	}
	at := len(r.out)
	r.put("(")
	empty = true
	for i := range n {
		if i > 0 {
			r.put(", ")
		}
		e, ok := r.points()
		if !ok {
			return false, false
		}
		if i == 0 {
			empty = e
		}
	}
	r.put(")")
	if empty {
		r.out = r.out[:at]
		r.put("EMPTY")
	}
	return empty, true
}

// appendJTSNumber appends f as JTS's WKTWriter writes a coordinate (a DecimalFormat
// "0.################" with Java's rounding, HALF_EVEN): Java's shortest digits for f,
// never in exponent form, rounded to at most 16 digits after the point, trailing zeros
// and a bare point left out: "1", "-0.5", "100000000000000000000", "0" for 1e-20 and "-0"
// for -1e-20 (DecimalFormat keeps the sign of a negative value it rounds to zero).
func appendJTSNumber(dst []byte, f float64) []byte {
	const places = 16
	if a := math.Abs(f); a >= 1<<53 && a < 1<<63 && a == math.Trunc(a) {
		return appendJavaLongDigits(dst, f)
	}
	at := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	point := -1
	for i := at; i < len(dst); i++ {
		if dst[i] == '.' {
			point = i
			break
		}
	}
	if point < 0 || len(dst)-point-1 <= places {
		return dst
	}
	// More than 16 digits after the point: DecimalFormat rounds the shortest digits
	// half-even, and a tie there (the dropped digits exactly 5) by the value itself,
	// which strconv's correctly rounded 16 places give (as Java since 8).
	cut := point + 1 + places
	dropped := dst[cut:]
	up := dropped[0] > '5'
	if dropped[0] == '5' {
		tail := false
		for _, c := range dropped[1:] {
			if c != '0' {
				tail = true
				break
			}
		}
		if !tail {
			dst = strconv.AppendFloat(dst[:at], f, 'f', places, 64)
			return trimFraction(dst, at)
		}
		up = true
	}
	dst = dst[:cut]
	if up {
		i := cut - 1
		for ; i >= at; i-- {
			c := dst[i]
			if c == '.' || c == '-' {
				continue
			}
			if c < '9' {
				dst[i]++
				break
			}
			dst[i] = '0'
		}
		if i < at {
			// Carried past the first digit: 9.99… became 0.00…, the 1 goes in front.
			first := at
			if dst[at] == '-' {
				first++
			}
			dst = append(dst, 0)
			copy(dst[first+1:], dst[first:])
			dst[first] = '1'
		}
	}
	return trimFraction(dst, at)
}

// appendJavaLongDigits appends a whole number f, 2⁵³ ≤ |f| < 2⁶³, with the digits
// Java's FloatingDecimal gives DecimalFormat for it, which are not the shortest: the
// integer's own, exact below 2⁵⁸, above that with its last digit (below 2⁶¹) or last two
// rounded half up to zeros (2⁶⁰+2⁸ is "1152921504606847230", where the shortest digits
// give 1152921504606847200).
func appendJavaLongDigits(dst []byte, f float64) []byte {
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	v := uint64(f)
	_, exp := math.Frexp(f) // f = m × 2^exp, ½ ≤ m < 1: 2^(exp-1) ≤ f < 2^exp
	drop := 0
	switch binExp := exp - 1; {
	case binExp >= 61:
		drop = 2
	case binExp >= 58:
		drop = 1
	}
	pow := uint64(1)
	for range drop {
		pow *= 10
	}
	if drop > 0 {
		rest := v % pow
		v /= pow
		if rest >= pow/2 {
			v++
		}
	}
	dst = strconv.AppendUint(dst, v, 10)
	for range drop {
		dst = append(dst, '0')
	}
	return dst
}

// trimFraction drops the trailing zeros of a number's fraction at dst[at:], and its
// point when nothing follows it.
func trimFraction(dst []byte, at int) []byte {
	point := -1
	for i := at; i < len(dst); i++ {
		if dst[i] == '.' {
			point = i
			break
		}
	}
	if point < 0 {
		return dst
	}
	end := len(dst)
	for end > point+1 && dst[end-1] == '0' {
		end--
	}
	if end == point+1 {
		end = point
	}
	return dst[:end]
}
