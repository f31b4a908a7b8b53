package rowenc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestFormatGolden")

// goldenTable has a column of every type the json format handles, as go-mysql decodes
// them (TestAppendValue's values).
func goldenTable() *Table {
	t := &Table{Database: "shop", Name: "every_type", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true, PK: true},
		{Name: "i8", Type: mysql.MYSQL_TYPE_TINY},
		{Name: "u8", Type: mysql.MYSQL_TYPE_TINY, Unsigned: true},
		{Name: "i16", Type: mysql.MYSQL_TYPE_SHORT},
		{Name: "i24", Type: mysql.MYSQL_TYPE_INT24},
		{Name: "i32", Type: mysql.MYSQL_TYPE_LONG},
		{Name: "u32", Type: mysql.MYSQL_TYPE_LONG, Unsigned: true},
		{Name: "i64", Type: mysql.MYSQL_TYPE_LONGLONG},
		{Name: "u64", Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true},
		{Name: "f32", Type: mysql.MYSQL_TYPE_FLOAT},
		{Name: "f64", Type: mysql.MYSQL_TYPE_DOUBLE},
		{Name: "amount", Type: mysql.MYSQL_TYPE_NEWDECIMAL, Precision: 24, Scale: 4},
		{Name: "dt6", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 6},
		{Name: "ts6", Type: mysql.MYSQL_TYPE_TIMESTAMP2, Frac: 6},
		{Name: "dt0", Type: mysql.MYSQL_TYPE_DATETIME2},
		{Name: "d", Type: mysql.MYSQL_TYPE_DATE},
		{Name: "t", Type: mysql.MYSQL_TYPE_TIME2},
		{Name: "y", Type: mysql.MYSQL_TYPE_YEAR},
		{Name: "bits", Type: mysql.MYSQL_TYPE_BIT, Bits: 10},
		{Name: "status", Type: mysql.MYSQL_TYPE_ENUM, Enum: []string{"new", "paid", "it's"}},
		{Name: "tags", Type: mysql.MYSQL_TYPE_SET, Set: []string{"a", "b", "c"}},
		{Name: "doc", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "blob", Type: mysql.MYSQL_TYPE_BLOB, Binary: true},
		{Name: "bin", Type: mysql.MYSQL_TYPE_STRING, Binary: true},
		{Name: "txt", Type: mysql.MYSQL_TYPE_BLOB},
		{Name: "name", Type: mysql.MYSQL_TYPE_VARCHAR},
		{Name: "code", Type: mysql.MYSQL_TYPE_STRING},
		{Name: "gone", Type: mysql.MYSQL_TYPE_VARCHAR},
		{Name: "pt", Type: mysql.MYSQL_TYPE_GEOMETRY, Geometry: GeometryPoint},
		{Name: "shape", Type: mysql.MYSQL_TYPE_GEOMETRY},
	}}
	t.Prepare()
	return t
}

func goldenRows() (first, second values) {
	first = values{int64(-1), int8(-128), int8(-1), int16(-32768), int32(-8388608), int32(-2147483648), int32(-1), int64(-9223372036854775808), int64(-1),
		float32(1.1), float64(-2.5e-300), "12345678901234567890.1234",
		time.Date(2026, 12, 1, 10, 11, 12, 123456000, time.UTC), time.Date(2026, 12, 1, 8, 9, 10, 654321000, time.UTC), "0000-00-00 00:00:00",
		"2024-02-29", "-838:59:59", int(2024), int64(5), int64(3), int64(5), []byte(`{"a": [1, 2.50, "ü"], "q": "x\"y"}`),
		[]byte{0, 1, 0x7f, 0x80, 0xff, '"'}, "\x00\xfe\x01\x02", []byte("long text ü\n"), "emoji 😀 中文 \"q\"", "ab", nil,
		goldenGeometry(4326, wktCases[8].wkb), goldenGeometry(0, wktCases[6].wkb)}
	second = values{int64(-1), int8(7), int8(7), int16(1), int32(2), int32(3), int32(4), int64(5), int64(6),
		float32(0), float64(12345678.5), "-0.5000",
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(2038, 1, 19, 3, 14, 7, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		"0000-00-00", "12:34:56", int(0), int64(0), int64(0), int64(0), []byte(`[]`),
		[]byte{}, "", []byte(""), "", "", "x",
		goldenGeometry(0, wktCases[0].wkb), []byte{1, 2}} // not a geometry: its bytes' base64 in every format
	return first, second
}

// goldenGeometry is a GEOMETRY value as go-mysql hands it over: the SRID, then the WKB.
func goldenGeometry(srid uint32, wkbHex string) []byte {
	wkb, err := hex.DecodeString(wkbHex)
	if err != nil {
		panic(err)
	}
	return withSRID(srid, wkb)
}

// TestFormatGolden pins each format's bytes for a fixed set of rows of every column type:
// an insert, an update, a delete, a snapshot row and a DDL (testdata/formats/<format>
// .golden; go test -run TestFormatGolden -update rewrites them). Every message is valid
// JSON.
func TestFormatGolden(t *testing.T) {
	defer func(f func() time.Time) { wallNow = f }(wallNow)
	wallNow = func() time.Time { return time.UnixMilli(1764583873123) }
	tb := goldenTable()
	first, second := goldenRows()
	rows := Rows{rows: []values{first, second}}
	m := Meta{Instance: "shop-1", TS: 1764583872, GTID: "0-1-77", File: "bin.000042", Pos: 4567}
	commit := m
	commit.Commit, commit.XID = true, 99
	cases := []struct {
		typ    string
		meta   Meta
		bi, ai int
	}{
		{TypeInsert, m, -1, 0}, {TypeUpdate, commit, 0, 1}, {TypeDelete, m, 1, -1}, {TypeSnapshot, Meta{Instance: "shop-1", TS: 1764583872}, -1, 0},
	}
	formats := []struct {
		file string
		name string
		opts map[string]string
	}{
		{"json", FormatJSON, nil},
		{"canal-json", FormatCanalJSON, nil},
		{"maxwell-json", FormatMaxwellJSON, nil},
		{"maxwell-json-snapshot-insert", FormatMaxwellJSON, map[string]string{"snapshot_type": "insert"}},
		{"maxwell-json-position", FormatMaxwellJSON, map[string]string{"binlog_position": "true"}},
		{"debezium-json", FormatDebeziumJSON, nil},
		{"debezium-json-schema", FormatDebeziumJSON, map[string]string{"schema": "true"}},
		{"debezium-json-numeric", FormatDebeziumJSON, map[string]string{"schema": "true", "decimal": "precise", "temporal": "epoch"}},
		{"debezium-json-double", FormatDebeziumJSON, map[string]string{"decimal": "double"}},
	}
	for _, ft := range formats {
		t.Run(ft.file, func(t *testing.T) {
			f, err := NewFormat(ft.name, ft.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for _, tc := range cases {
				r := &Row{Table: tb, Type: tc.typ, Meta: tc.meta,
					Before: Image{rows: &rows, t: tb, i: tc.bi}, After: Image{rows: &rows, t: tb, i: tc.ai}}
				if tc.bi < 0 {
					r.Before = NoImage
				}
				if tc.ai < 0 {
					r.After = NoImage
				}
				msg, err := f.AppendRow(nil, r)
				if err != nil {
					t.Fatalf("%s: %v", tc.typ, err)
				}
				if !json.Valid(msg) {
					t.Errorf("%s: not valid JSON: %s", tc.typ, msg)
				}
				out.WriteString(tc.typ + "\t")
				out.Write(msg)
				out.WriteByte('\n')
			}
			ddl, ok, err := f.AppendDDL(nil, &DDL{Database: "shop", Table: "every_type", Meta: commit, SQL: "ALTER TABLE every_type ADD COLUMN `note` varchar(10) /* \"why\" */"})
			switch {
			case err != nil:
				t.Fatal(err)
			case !ok:
				out.WriteString("ddl\t(none)\n")
			default:
				if !json.Valid(ddl) {
					t.Errorf("ddl: not valid JSON: %s", ddl)
				}
				out.WriteString("ddl\t")
				out.Write(ddl)
				out.WriteByte('\n')
			}
			path := filepath.Join("testdata", "formats", ft.file+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestFormatGolden -update writes it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%s differs from %s:\n%s", ft.file, path, out.Bytes())
			}
		})
	}
}
