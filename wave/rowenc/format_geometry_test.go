package rowenc

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// geometryRow is an update of a table with a POINT, a GEOMETRY, a LINESTRING and a POINT
// holding bytes that are no geometry (a value BinLake cannot read), as go-mysql decodes
// them: MySQL's SRID, then the WKB.
func geometryRow(t *testing.T) *Row {
	tb := &Table{Database: "d", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true},
		{Name: "p", Type: mysql.MYSQL_TYPE_GEOMETRY, Geometry: GeometryPoint},
		{Name: "g", Type: mysql.MYSQL_TYPE_GEOMETRY},
		{Name: "l", Type: mysql.MYSQL_TYPE_GEOMETRY, Geometry: GeometryLineString},
		{Name: "bad", Type: mysql.MYSQL_TYPE_GEOMETRY, Geometry: GeometryPoint},
		{Name: "none", Type: mysql.MYSQL_TYPE_GEOMETRY},
	}}
	tb.Prepare()
	point := withSRID(4326, wkbHex(t, wktCases[8].wkb)) // POINT (-122.4194155 37.7749295)
	polygon := withSRID(0, wkbHex(t, wktCases[2].wkb))  // POLYGON ((0 0, 10 0, …), (…))
	line := withSRID(3857, wkbHex(t, wktCases[1].wkb))  // LINESTRING (0 0, 1.5 -2.25)
	before := values{int32(1), withSRID(0, wkbHex(t, wktCases[0].wkb)), polygon, line, []byte{1, 2, 3}, nil}
	after := values{int32(1), point, polygon, line, []byte{1, 2, 3}, nil}
	rows := Rows{rows: []values{before, after}}
	return &Row{Table: tb, Type: TypeUpdate, Before: Image{rows: &rows, t: tb, i: 0}, After: Image{rows: &rows, t: tb, i: 1}}
}

// TestGeometryMaxwell: Maxwell writes a geometry as JTS's WKT without the SRID; a value
// that is no geometry stays base64 (Maxwell would stop on it).
func TestGeometryMaxwell(t *testing.T) {
	msg := appendRowOf(t, FormatMaxwellJSON, nil, geometryRow(t))
	var m struct{ Data, Old map[string]any }
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	want := map[string]any{"id": float64(1), "p": "POINT (-122.4194155 37.7749295)",
		"g": "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (1 1, 2 1, 2 2, 1 1))", "l": "LINESTRING (0 0, 1.5 -2.25)",
		"bad": "AQID", "none": nil}
	for k, v := range want {
		if m.Data[k] != v {
			t.Errorf("data %s: %#v, want %#v", k, m.Data[k], v)
		}
	}
	if len(m.Old) != 1 || m.Old["p"] != "POINT (1 2)" {
		t.Errorf("old: %v, want only p POINT (1 2)", m.Old)
	}
}

// TestGeometryDebezium: Debezium's MySQL connector sends a POINT column as its Point
// struct and any other geometry column as its Geometry struct: the WKB without MySQL's
// SRID in base64, the SRID (null for 0); the schema names them.
func TestGeometryDebezium(t *testing.T) {
	msg := appendRowOf(t, FormatDebeziumJSON, map[string]string{"schema": "true"}, geometryRow(t))
	b64 := func(i int) string { return base64.StdEncoding.EncodeToString(wkbHex(t, wktCases[i].wkb)) }
	for _, want := range []string{
		`"after":{"id":1,"p":{"x":-122.4194155,"y":37.7749295,"wkb":"AQEAAADf+xu015pewFKazeMw40JA","srid":4326},` +
			`"g":{"wkb":"` + b64(2) + `","srid":null},"l":{"wkb":"` + b64(1) + `","srid":3857},"bad":"AQID","none":null}`,
		`"before":{"id":1,"p":{"x":1.0,"y":2.0,"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":null},`,
		`{"type":"struct","fields":[{"type":"double","optional":false,"field":"x"},{"type":"double","optional":false,"field":"y"},` +
			`{"type":"bytes","optional":true,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],"optional":true,` +
			`"name":"io.debezium.data.geometry.Point","version":1,"doc":"Geometry (POINT)","field":"p"}`,
		`{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],` +
			`"optional":true,"name":"io.debezium.data.geometry.Geometry","version":1,"doc":"Geometry","field":"g"}`,
	} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("want %s in\n%s", want, msg)
		}
	}
	if !json.Valid(msg) {
		t.Errorf("not valid JSON: %s", msg)
	}
}

// TestGeometryCanal: Canal sends a geometry's bytes (SRID and WKB) as ISO-8859-1 text,
// sqlType BLOB, and the column's type in mysqlType ("point", "linestring").
func TestGeometryCanal(t *testing.T) {
	r := geometryRow(t)
	msg := appendRowOf(t, FormatCanalJSON, nil, r)
	var m struct {
		Data      []map[string]*string
		MySQLType map[string]string `json:"mysqlType"`
		SQLType   map[string]int    `json:"sqlType"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	types := map[string]string{"p": "point", "g": "geometry", "l": "linestring", "bad": "point", "none": "geometry"}
	for col, typ := range types {
		if m.MySQLType[col] != typ || m.SQLType[col] != sqlBlob {
			t.Errorf("%s: mysqlType %q sqlType %d, want %q %d", col, m.MySQLType[col], m.SQLType[col], typ, sqlBlob)
		}
	}
	want := string(withSRID(4326, wkbHex(t, wktCases[8].wkb)))
	if p := m.Data[0]["p"]; p == nil || latin1Bytes(*p) != want {
		t.Errorf("p: %v, want the value's bytes %q", p, want)
	}
	pb := appendRowOf(t, FormatCanalProtobuf, nil, r)
	_, rc := decodeCanal(t, pb)
	for _, c := range rc.RowDatas[0].AfterColumns {
		if typ, ok := types[c.GetName()]; ok && c.GetMysqlType() != typ {
			t.Errorf("canal-protobuf %s: mysqlType %q, want %q", c.GetName(), c.GetMysqlType(), typ)
		}
	}
}

func appendRowOf(t *testing.T, format string, opts map[string]string, r *Row) []byte {
	t.Helper()
	f, err := NewFormat(format, opts)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := f.AppendRow(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// latin1Bytes is the bytes of a text of one character per byte (U+0000–U+00FF).
func latin1Bytes(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}
