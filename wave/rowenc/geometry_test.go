package rowenc

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wkbHex is the WKB of a geometry, from its hex (as MariaDB's HEX(ST_AsWKB(g)) gives it).
func wkbHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withSRID is MySQL's internal form of a geometry: the SRID little-endian, then the WKB.
func withSRID(srid uint32, wkb []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, srid), wkb...)
}

// wktCases are WKB values (MariaDB's, and some by hand) with the text JTS 1.13's
// WKBReader and toText make of them, which Maxwell writes (checked against JTS itself).
var wktCases = []struct{ wkb, wkt string }{
	{"0101000000000000000000F03F0000000000000040", "POINT (1 2)"},
	{"01020000000200000000000000000000000000000000000000000000000000F83F00000000000002C0", "LINESTRING (0 0, 1.5 -2.25)"},
	{"01030000000200000005000000000000000000000000000000000000000000000000002440000000000000000000000000000024400000000000002440000000000000000000000000000024400000000000000000000000000000000004000000000000000000F03F000000000000F03F0000000000000040000000000000F03F00000000000000400000000000000040000000000000F03F000000000000F03F",
		"POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (1 1, 2 1, 2 2, 1 1))"},
	{"0104000000020000000101000000000000000000F03F000000000000F03F010100000000000000000000400000000000000040", "MULTIPOINT ((1 1), (2 2))"},
	{"01050000000200000001020000000200000000000000000000000000000000000000000000000000F03F000000000000F03F0102000000020000000000000000000040000000000000004000000000000008400000000000000840",
		"MULTILINESTRING ((0 0, 1 1), (2 2, 3 3))"},
	{"0106000000020000000103000000010000000400000000000000000000000000000000000000000000000000F03F0000000000000000000000000000F03F000000000000F03F000000000000000000000000000000000103000000010000000400000000000000000014400000000000001440000000000000184000000000000014400000000000001840000000000000184000000000000014400000000000001440",
		"MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))"},
	// Maxwell's own test (test_gis): GEOMETRYCOLLECTION(POINT(1, 1), LINESTRING(…)).
	{"0107000000020000000101000000000000000000F03F000000000000F03F0102000000040000000000000000000000000000000000F03F000000000000F03F00000000000000400000000000000040000000000000084000000000000008400000000000001040",
		"GEOMETRYCOLLECTION (POINT (1 1), LINESTRING (0 1, 1 2, 2 3, 3 4))"},
	{"010700000000000000", "GEOMETRYCOLLECTION EMPTY"},
	{"0101000000DFFB1BB4D79A5EC0529ACDE330E34240", "POINT (-122.4194155 37.7749295)"},
	// 1e20 and 1e-20: no exponent, at most 16 places.
	{"0101000000408CB5781DAF15442342920CA19CC73B", "POINT (100000000000000000000 0)"},
	// Big-endian, and a collection whose members differ in byte order.
	{"00000000013FF00000000000004000000000000000", "POINT (1 2)"},
	{"010400000002000000" + "00000000013FF00000000000004000000000000000" + "010100000000000000000008400000000000001040", "MULTIPOINT ((1 2), (3 4))"},
	// A collection of empty members is empty; one non-empty member is enough.
	{"010700000002000000" + "010700000000000000" + "010500000000000000", "GEOMETRYCOLLECTION EMPTY"},
	{"010700000002000000" + "010700000000000000" + "0101000000000000000000F03F0000000000000040", "GEOMETRYCOLLECTION (GEOMETRYCOLLECTION EMPTY, POINT (1 2))"},
	{"010700000001000000" + "010700000001000000" + "0101000000000000000000F03F0000000000000040", "GEOMETRYCOLLECTION (GEOMETRYCOLLECTION (POINT (1 2)))"},
	{"010200000000000000", "LINESTRING EMPTY"},
	{"010500000002000000" + "010200000000000000" + "01020000000200000000000000000000000000000000000000000000000000F83F00000000000002C0", "MULTILINESTRING (EMPTY, (0 0, 1.5 -2.25))"},
	{"010400000000000000", "MULTIPOINT EMPTY"},
	{"010600000000000000", "MULTIPOLYGON EMPTY"},
	{"010300000000000000", "POLYGON EMPTY"},
	// -0 keeps its sign, as DecimalFormat writes it.
	{"010100000000000000000000800000000000000000", "POINT (-0 0)"},
}

func TestAppendWKT(t *testing.T) {
	for _, tc := range wktCases {
		wkb := wkbHex(t, tc.wkb)
		got, ok := appendWKT([]byte("x"), wkb)
		if !ok || string(got) != "x"+tc.wkt {
			t.Errorf("%s: %q %v, want %q", tc.wkb, got, ok, tc.wkt)
		}
		// MySQL's form: the SRID left out, whatever it is.
		for _, srid := range []uint32{0, 4326} {
			b := withSRID(srid, wkb)
			got, ok := appendGeometryWKT(nil, b)
			if !ok || string(got) != tc.wkt {
				t.Errorf("%s with SRID %d: %q %v, want %q", tc.wkb, srid, got, ok, tc.wkt)
			}
			s, w, ok := splitGeometry(b)
			if !ok || s != srid || string(w) != string(wkb) {
				t.Errorf("splitGeometry(%s with SRID %d) = %d %x %v", tc.wkb, srid, s, w, ok)
			}
		}
	}
}

// TestAppendWKTInvalid: bytes that are not one whole 2-D geometry are refused, dst as it
// was, and never read past their end.
func TestAppendWKTInvalid(t *testing.T) {
	point := "0101000000000000000000F03F0000000000000040"
	deep := strings.Repeat("010700000001000000", maxWKBDepth+1) + point
	for name, s := range map[string]string{
		"empty":                  "",
		"byte order only":        "01",
		"truncated header":       "01010000",
		"truncated point":        point[:len(point)-2],
		"trailing byte":          point + "00",
		"byte order 2":           "02" + point[2:],
		"type 0":                 "010000000000000000000000000000000000000000",
		"type 8":                 "010800000000000000",
		"POINT Z (1001)":         "01E9030000000000000000F03F00000000000000400000000000000840",
		"EWKB SRID flag":         "0101000020E6100000000000000000F03F0000000000000040",
		"NaN":                    "0101000000000000000000F87F0000000000000040",
		"+Inf":                   "0101000000000000000000F07F0000000000000040",
		"count beyond the end":   "0102000000FFFFFFFF",
		"huge collection":        "0107000000FFFFFFFF" + point,
		"multipoint of a line":   "010400000001000000" + "010200000000000000",
		"multipolygon of points": "010600000001000000" + point,
		"bad member":             "010700000001000000" + "05",
		"nested too deep":        deep,
	} {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(name, err)
		}
		if got, ok := appendWKT([]byte("x"), b); ok || string(got) != "x" {
			t.Errorf("%s: %q %v, want refused", name, got, ok)
		}
		if _, _, ok := splitGeometry(withSRID(0, b)); ok {
			t.Errorf("%s: splitGeometry accepted it", name)
		}
	}
	// One level less than too deep is read.
	ok := strings.Repeat("010700000001000000", maxWKBDepth) + point
	if got, good := appendWKT(nil, wkbHex(t, ok)); !good || !strings.HasSuffix(string(got), "(POINT (1 2))"+strings.Repeat(")", maxWKBDepth-1)) {
		t.Errorf("%d nested collections: %.80q… %v", maxWKBDepth, got, good)
	}
	for _, b := range [][]byte{nil, {0, 0, 0}} {
		if got, ok := appendGeometryWKT([]byte("x"), b); ok || string(got) != "x" {
			t.Errorf("appendGeometryWKT(%x): %q %v", b, got, ok)
		}
		if _, _, ok := splitGeometry(b); ok {
			t.Errorf("splitGeometry(%x) accepted it", b)
		}
	}
}

// TestAppendJTSNumber: JTS's WKTWriter's DecimalFormat("0.################"), as Java
// writes each (checked against Java 17 and 25).
func TestAppendJTSNumber(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "-0"}, {1, "1"}, {-1, "-1"}, {0.1, "0.1"}, {1.1, "1.1"},
		{-2.25, "-2.25"}, {1e7, "10000000"}, {1e-7, "0.0000001"}, {123456.789, "123456.789"},
		{0.30000000000000004, "0.3"}, {1.0000000000000002, "1.0000000000000002"},
		// More than 16 places: rounded half-even, a tie by the value itself.
		{1e-20, "0"}, {-1e-20, "-0"}, {0.012345678901234567, "0.0123456789012346"},
		{math.Ldexp(1, -17), "0.0000076293945312"}, {0.99999999999999994, "0.9999999999999999"},
		{0.000099999999999999995, "0.0001"},
		// Whole numbers: Java's long digits from 2⁵³ to 2⁶³, its shortest above.
		{9007199254740992, "9007199254740992"}, {9007199254740994, "9007199254740994"},
		{39835710113512488, "39835710113512488"}, {1<<60 + 1<<8, "1152921504606847230"},
		{1 << 62, "4611686018427387900"}, {-(1 << 62), "-4611686018427387900"},
		{9.223372036854775e18, "9223372036854774800"}, {1e19, "10000000000000000000"},
		{1e20, "100000000000000000000"}, {1.2345678901234566e25, "12345678901234566000000000"},
		{5e-324, "0"},
	} {
		if got := string(appendJTSNumber(nil, tc.f)); got != tc.want {
			t.Errorf("%v (%#x): %s, want %s", tc.f, math.Float64bits(tc.f), got, tc.want)
		}
	}
}

// TestAppendWKTMatchesJTS: random geometries, as JTS 1.13 writes them
// (testdata/geometry/jts-wkt.txt).
func TestAppendWKTMatchesJTS(t *testing.T) {
	for _, f := range javaCases(t, "jts-wkt.txt") {
		if got, ok := appendWKT(nil, wkbHex(t, f[0])); !ok || string(got) != f[1] {
			t.Errorf("%s:\n got %s (%v)\nwant %s", f[0], got, ok, f[1])
		}
	}
}

// TestAppendJTSNumberMatchesJava: numbers of every size, as Java's DecimalFormat writes
// them (testdata/geometry/java-decimalformat.txt).
func TestAppendJTSNumberMatchesJava(t *testing.T) {
	for _, f := range javaCases(t, "java-decimalformat.txt") {
		bits, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		v := math.Float64frombits(bits)
		if got := string(appendJTSNumber(nil, v)); got != f[1] {
			t.Errorf("%v (%s): %s, want %s", v, f[0], got, f[1])
		}
	}
}

// javaCases reads the tab-separated pairs of a file of testdata/geometry, # lines left out.
func javaCases(t *testing.T, name string) [][2]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "geometry", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		a, b, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: %q", name, line)
		}
		out = append(out, [2]string{a, b})
	}
	if len(out) < 100 {
		t.Fatalf("%s: %d cases", name, len(out))
	}
	return out
}

func TestWKBPoint(t *testing.T) {
	x, y, ok := wkbPoint(wkbHex(t, "0101000000DFFB1BB4D79A5EC0529ACDE330E34240"))
	if !ok || x != -122.4194155 || y != 37.7749295 {
		t.Errorf("point: %v %v %v", x, y, ok)
	}
	for _, s := range []string{"010700000000000000", "01020000000200000000000000000000000000000000000000000000000000F83F00000000000002C0",
		"0101000000000000000000F87F0000000000000040", "0101000000000000000000F03F00000000000000"} {
		if _, _, ok := wkbPoint(wkbHex(t, s)); ok {
			t.Errorf("%s read as a point", s)
		}
	}
}

// TestDebeziumSRID: the SRID is Java's int of its 4 bytes (Debezium's ByteBuffer.getInt),
// null for 0.
func TestDebeziumSRID(t *testing.T) {
	for srid, want := range map[uint32]string{0: `,"srid":null}`, 4326: `,"srid":4326}`, 0xFFFFFFFF: `,"srid":-1}`} {
		if got := string(appendDebeziumSRID(nil, srid)); got != want {
			t.Errorf("%d: %s, want %s", srid, got, want)
		}
	}
}

func TestGeometryTypeNamed(t *testing.T) {
	for name, want := range map[string]GeometryType{"geometry": GeometryAny, "POINT": GeometryPoint, "linestring": GeometryLineString,
		"polygon": GeometryPolygon, "multipoint": GeometryMultiPoint, "multilinestring": GeometryMultiLineString,
		"multipolygon": GeometryMultiPolygon, "geometrycollection": GeometryCollection, "geomcollection": GeometryCollection, "blob": GeometryAny} {
		if got := GeometryTypeNamed(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if s := GeometryType(99).String(); s != "geometry" {
		t.Errorf("an unknown type is %q", s)
	}
}

// TestAppendWKTAllocates: a value is written into dst without allocating.
func TestAppendWKTAllocates(t *testing.T) {
	wkb := wkbHex(t, wktCases[2].wkb)
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { appendWKT(buf, wkb) }); n != 0 {
		t.Errorf("%.1f allocations", n)
	}
}

// FuzzAppendWKT: no input panics or reads out of bounds; a refused one leaves dst as it
// was, and splitGeometry agrees; an accepted one is ASCII WKT with its parentheses
// balanced, and the same whatever dst held.
func FuzzAppendWKT(f *testing.F) {
	for _, tc := range wktCases {
		f.Add(wkbHex(f, tc.wkb))
	}
	f.Add([]byte{})
	f.Add([]byte{1, 7, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, wkb []byte) {
		got, ok := appendWKT([]byte("prefix"), wkb)
		if _, _, split := splitGeometry(withSRID(1, wkb)); split != ok {
			t.Fatalf("appendWKT %v, splitGeometry %v", ok, split)
		}
		if !ok {
			if string(got) != "prefix" {
				t.Fatalf("refused, but dst is %q", got)
			}
			return
		}
		if !strings.HasPrefix(string(got), "prefix") {
			t.Fatalf("dst lost its prefix: %q", got)
		}
		wkt := got[len("prefix"):]
		alone, _ := appendWKT(nil, wkb)
		if string(alone) != string(wkt) {
			t.Fatalf("%q after a prefix, %q alone", wkt, alone)
		}
		depth := 0
		for _, c := range wkt {
			switch {
			case c == '(':
				depth++
			case c == ')':
				depth--
			case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == ' ', c == ',', c == '.', c == '-':
			default:
				t.Fatalf("%q: byte %q", wkt, c)
			}
			if depth < 0 {
				t.Fatalf("%q: unbalanced", wkt)
			}
		}
		if depth != 0 {
			t.Fatalf("%q: unbalanced", wkt)
		}
	})
}

// FuzzAppendJTSNumber: every finite number is written as a plain decimal that reads back
// within the 16 places' rounding.
func FuzzAppendJTSNumber(f *testing.F) {
	for _, v := range []float64{0, 1.5, -1e-20, 1e20, 1<<60 + 1<<8, 0.012345678901234567} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		s := string(appendJTSNumber(nil, v))
		if strings.ContainsAny(s, "eE+") || strings.HasSuffix(s, ".") || strings.Contains(s, ".") && strings.HasSuffix(s, "0") {
			t.Fatalf("%v: %q", v, s)
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%v: %q: %v", v, s, err)
		}
		ulp := math.Abs(math.Nextafter(v, math.Inf(1)) - v)
		if d := math.Abs(back - v); d > 0.5e-16+4*ulp && d > math.Abs(v)*1e-15 {
			t.Fatalf("%v: %q reads back as %v", v, s, back)
		}
	})
}
