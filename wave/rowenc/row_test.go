package rowenc

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestAppendValue covers every type go-mysql's row decoder produces, with the column
// facts that change its meaning.
func TestAppendValue(t *testing.T) {
	col := func(typ byte) Column { return Column{Name: "c", Type: typ} }
	frac := func(typ byte, digits uint8) Column { return Column{Name: "c", Type: typ, Frac: digits} }
	unsigned := func(typ byte) Column { return Column{Name: "c", Type: typ, Unsigned: true} }
	tests := []struct {
		name string
		col  Column
		v    any
		want string
	}{
		{"null", col(mysql.MYSQL_TYPE_LONG), nil, `null`},
		{"tinyint", col(mysql.MYSQL_TYPE_TINY), int8(-128), `-128`},
		{"tinyint unsigned decoded signed", unsigned(mysql.MYSQL_TYPE_TINY), int8(-1), `255`},
		{"tinyint unsigned", unsigned(mysql.MYSQL_TYPE_TINY), uint8(255), `255`},
		{"smallint unsigned decoded signed", unsigned(mysql.MYSQL_TYPE_SHORT), int16(-1), `65535`},
		{"mediumint unsigned decoded signed", unsigned(mysql.MYSQL_TYPE_INT24), int32(-1), `16777215`},
		{"mediumint", col(mysql.MYSQL_TYPE_INT24), int32(-8388608), `-8388608`},
		{"int unsigned decoded signed", unsigned(mysql.MYSQL_TYPE_LONG), int32(-1), `4294967295`},
		{"int unsigned", unsigned(mysql.MYSQL_TYPE_LONG), uint32(4294967295), `4294967295`},
		{"bigint", col(mysql.MYSQL_TYPE_LONGLONG), int64(-9223372036854775808), `-9223372036854775808`},
		{"bigint unsigned decoded signed", unsigned(mysql.MYSQL_TYPE_LONGLONG), int64(-1), `18446744073709551615`},
		{"bigint unsigned", unsigned(mysql.MYSQL_TYPE_LONGLONG), uint64(18446744073709551615), `18446744073709551615`},
		{"year", col(mysql.MYSQL_TYPE_YEAR), int(2024), `2024`},
		{"bit", col(mysql.MYSQL_TYPE_BIT), int64(5), `5`},
		{"float", col(mysql.MYSQL_TYPE_FLOAT), float32(1.1), `1.1`},
		{"double", col(mysql.MYSQL_TYPE_DOUBLE), float64(-2.5e-300), `-2.5e-300`},
		{"decimal exact", col(mysql.MYSQL_TYPE_NEWDECIMAL), "12345678901234567890.1234567890", `"12345678901234567890.1234567890"`},
		{"decimal negative zero scale", col(mysql.MYSQL_TYPE_NEWDECIMAL), "-0.00", `"-0.00"`},
		{"datetime", col(mysql.MYSQL_TYPE_DATETIME2), "2024-01-02 03:04:05.123456", `"2024-01-02T03:04:05.123456"`},
		{"datetime zero", col(mysql.MYSQL_TYPE_DATETIME2), "0000-00-00 00:00:00", `"0000-00-00T00:00:00"`},
		{"timestamp UTC", col(mysql.MYSQL_TYPE_TIMESTAMP2), "2024-01-02 03:04:05", `"2024-01-02T03:04:05Z"`},
		{"timestamp zero", col(mysql.MYSQL_TYPE_TIMESTAMP2), "0000-00-00 00:00:00", `"0000-00-00T00:00:00"`},
		{"date", col(mysql.MYSQL_TYPE_DATE), "2024-02-29", `"2024-02-29"`},
		{"time negative", col(mysql.MYSQL_TYPE_TIME2), "-838:59:59", `"-838:59:59"`},
		{"mysql json", col(mysql.MYSQL_TYPE_JSON), `{"a": [1, 2.50, "ü"]}`, `{"a":[1,2.50,"ü"]}`},
		{"mysql json empty", col(mysql.MYSQL_TYPE_JSON), "", `null`},
		{"mysql json bytes empty", col(mysql.MYSQL_TYPE_JSON), []byte{}, `null`},
		{"mariadb json longtext", Column{Name: "c", Type: mysql.MYSQL_TYPE_BLOB, JSON: true}, []byte(`[true, null]`), `[true,null]`},
		{"json invalid kept as string", Column{Name: "c", Type: mysql.MYSQL_TYPE_BLOB, JSON: true}, []byte(`{bad`), `"{bad"`},
		{"varchar utf8mb4", col(mysql.MYSQL_TYPE_VARCHAR), "emoji 😀 中文", `"emoji 😀 中文"`},
		{"varchar escapes", col(mysql.MYSQL_TYPE_VARCHAR), "q\" b\\ \n\t\x01<&>", `"q\" b\\ \n\t\u0001<&>"`},
		{"varchar invalid utf8", col(mysql.MYSQL_TYPE_VARCHAR), "a\xffb", `"a\ufffdb"`},
		{"line separator", col(mysql.MYSQL_TYPE_VARCHAR), "a\u2028b", `"a\u2028b"`},
		{"text blob", col(mysql.MYSQL_TYPE_BLOB), []byte("long text ü"), `"long text ü"`},
		{"blob base64", Column{Name: "c", Type: mysql.MYSQL_TYPE_BLOB, Binary: true}, []byte{0, 1, 0xff}, `"AAH/"`},
		{"varbinary base64", Column{Name: "c", Type: mysql.MYSQL_TYPE_VARCHAR, Binary: true}, "\x00\xfe", `"AP4="`},
		{"binary empty", Column{Name: "c", Type: mysql.MYSQL_TYPE_STRING, Binary: true}, "", `""`},
		{"geometry base64", col(mysql.MYSQL_TYPE_GEOMETRY), []byte{1, 2}, `"AQI="`},
		{"enum", Column{Name: "c", Type: mysql.MYSQL_TYPE_ENUM, Enum: []string{"a", "b"}}, int64(2), `"b"`},
		{"enum invalid entry", Column{Name: "c", Type: mysql.MYSQL_TYPE_ENUM, Enum: []string{"a"}}, int64(0), `""`},
		{"enum without metadata", col(mysql.MYSQL_TYPE_ENUM), int64(3), `3`},
		{"set", Column{Name: "c", Type: mysql.MYSQL_TYPE_SET, Set: []string{"x", "y", "z"}}, int64(5), `"x,z"`},
		{"set empty", Column{Name: "c", Type: mysql.MYSQL_TYPE_SET, Set: []string{"x"}}, int64(0), `""`},
		{"set names escaped", Column{Name: "c", Type: mysql.MYSQL_TYPE_SET, Set: []string{`a"b`, "x", "t\tab"}}, int64(5), `"a\"b,t\tab"`},
		{"datetime without time part", col(mysql.MYSQL_TYPE_DATETIME2), "2024-01-02", `"2024-01-02"`},
		// go-mysql's text of a DATETIME (ParseTime off): the dates MySQL stores under
		// ALLOW_INVALID_DATES as they are stored, never moved to a real date.
		{"datetime February 30th", frac(mysql.MYSQL_TYPE_DATETIME2, 1), "2024-02-30 10:00:00.5", `"2024-02-30T10:00:00.5"`},
		{"datetime February 29th, not a leap year", col(mysql.MYSQL_TYPE_DATETIME2), "2023-02-29 00:00:00", `"2023-02-29T00:00:00"`},
		{"datetime April 31st", frac(mysql.MYSQL_TYPE_DATETIME2, 6), "2025-04-31 23:59:59.999999", `"2025-04-31T23:59:59.999999"`},
		{"datetime zero day", col(mysql.MYSQL_TYPE_DATETIME2), "2024-05-00 01:02:03", `"2024-05-00T01:02:03"`},
		{"old datetime February 30th", col(mysql.MYSQL_TYPE_DATETIME), "2024-02-30 10:00:00", `"2024-02-30T10:00:00"`},
		{"date February 31st", col(mysql.MYSQL_TYPE_DATE), "2024-02-31", `"2024-02-31"`},
		{"timestamp text with digits", frac(mysql.MYSQL_TYPE_TIMESTAMP2, 3), "2023-11-14 22:13:20.500", `"2023-11-14T22:13:20.500Z"`},
		{"timestamp text at second 0 with a fraction", frac(mysql.MYSQL_TYPE_TIMESTAMP2, 6), "0000-00-00 00:00:00.000001", `"1970-01-01T00:00:00.000001Z"`},
		// rowsDecoder's DATETIME: an int64 of the field (appendPackedDatetime), written
		// as stored, a date past its month's end too.
		{"packed datetime(1) February 30th", frac(mysql.MYSQL_TYPE_DATETIME2, 1), packedDatetime2(2024, 2, 30, 10, 0, 0, 50, 1), `"2024-02-30T10:00:00.5"`},
		{"packed datetime February 29th, not a leap year", col(mysql.MYSQL_TYPE_DATETIME2), packedDatetime2(2023, 2, 29, 0, 0, 0, 0, 0), `"2023-02-29T00:00:00"`},
		{"packed datetime(6) valid", frac(mysql.MYSQL_TYPE_DATETIME2, 6), packedDatetime2(2026, 12, 1, 10, 11, 12, 123456, 6), `"2026-12-01T10:11:12.123456"`},
		{"packed datetime(3) before 1970", frac(mysql.MYSQL_TYPE_DATETIME2, 3), packedDatetime2(1000, 1, 1, 0, 0, 0, 10, 3), `"1000-01-01T00:00:00.001"`},
		{"packed datetime(2) zero", frac(mysql.MYSQL_TYPE_DATETIME2, 2), packedDatetime2(0, 0, 0, 0, 0, 0, 0, 2), `"0000-00-00T00:00:00.00"`},
		{"packed old datetime February 30th", col(mysql.MYSQL_TYPE_DATETIME), int64(20240230100000), `"2024-02-30T10:00:00"`},
		{"packed old datetime zero", col(mysql.MYSQL_TYPE_DATETIME), int64(0), `"0000-00-00T00:00:00"`},
		{"packed old datetime zero day", col(mysql.MYSQL_TYPE_DATETIME), int64(20240500010203), `"2024-05-00T01:02:03"`},
		// ParseTime on (go-mysql's TIMESTAMP; a DATETIME from EncodeRow's callers): rendered alike.
		{"datetime time", frac(mysql.MYSQL_TYPE_DATETIME2, 6), time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC), `"2024-01-02T03:04:05.123456"`},
		{"datetime time truncated to its digits", frac(mysql.MYSQL_TYPE_DATETIME2, 3), time.Date(2024, 1, 2, 3, 4, 5, 987654000, time.UTC), `"2024-01-02T03:04:05.987"`},
		{"datetime time one digit", frac(mysql.MYSQL_TYPE_DATETIME2, 1), time.Date(2024, 1, 2, 3, 4, 5, 900000000, time.UTC), `"2024-01-02T03:04:05.9"`},
		{"datetime time no digits", frac(mysql.MYSQL_TYPE_DATETIME2, 0), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), `"9999-12-31T23:59:59"`},
		{"old datetime time", col(mysql.MYSQL_TYPE_DATETIME), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), `"1970-01-01T00:00:00"`},
		{"timestamp time in UTC", frac(mysql.MYSQL_TYPE_TIMESTAMP2, 2), time.Date(2024, 1, 2, 5, 4, 5, 120000000, time.FixedZone("UTC+2", 7200)), `"2024-01-02T03:04:05.12Z"`},
		{"old timestamp time", col(mysql.MYSQL_TYPE_TIMESTAMP), time.Unix(1704164645, 0), `"2024-01-02T03:04:05Z"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appendValue(nil, &tc.col, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}

func TestAppendValueUnsupportedType(t *testing.T) {
	_, err := appendValue(nil, &Column{Name: "c"}, struct{}{})
	if err == nil || !strings.Contains(err.Error(), "column c") {
		t.Fatalf("err = %v, want one naming the column", err)
	}
}

func testTable() *Table {
	return &Table{Database: "shop", Name: "orders", PK: []int{0},
		Columns: []Column{
			{Name: "id", Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true, PK: true},
			{Name: "amount", Type: mysql.MYSQL_TYPE_NEWDECIMAL},
			{Name: "note", Type: mysql.MYSQL_TYPE_VARCHAR},
		}}
}

func TestEncodeRow(t *testing.T) {
	tb := testTable()
	m := Meta{Instance: "orders", TS: 1764424800, GTID: "0-1-202", File: "bin.000001", Pos: 1234}
	commit := m
	commit.Commit, commit.XID = true, 88
	tests := []struct {
		name          string
		typ           string
		meta          Meta
		before, after []any
		want          string
	}{
		{"insert", TypeInsert, m, nil, []any{uint64(7), "1.50", "ü"},
			`{"instance":"orders","database":"shop","table":"orders","type":"insert","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"commit":false,"pk":{"id":7},"data":{"id":7,"amount":"1.50","note":"ü"}}`},
		{"update carries changed columns before", TypeUpdate, commit, []any{uint64(7), "1.50", "a"}, []any{uint64(7), "2.00", "a"},
			`{"instance":"orders","database":"shop","table":"orders","type":"update","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"xid":88,"commit":true,"pk":{"id":7},"data":{"id":7,"amount":"2.00","note":"a"},"old":{"amount":"1.50"}}`},
		{"update to null", TypeUpdate, m, []any{uint64(7), "1.50", "a"}, []any{uint64(7), "1.50", nil},
			`{"instance":"orders","database":"shop","table":"orders","type":"update","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"commit":false,"pk":{"id":7},"data":{"id":7,"amount":"1.50","note":null},"old":{"note":"a"}}`},
		{"delete carries the deleted row", TypeDelete, m, []any{uint64(7), "1.50", nil}, nil,
			`{"instance":"orders","database":"shop","table":"orders","type":"delete","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"commit":false,"pk":{"id":7},"data":{"id":7,"amount":"1.50","note":null}}`},
	}
	// Prepared (as the capture's tables are) or not, a table encodes alike.
	prepared := *tb
	prepared.Columns = slices.Clone(tb.Columns)
	prepared.Prepare()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, tb := range []*Table{tb, &prepared} {
				got, err := EncodeRow(nil, tb, tc.typ, tc.meta, tc.before, tc.after)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tc.want {
					t.Errorf("prepared %v: got\n%s\nwant\n%s", tb.names != nil, got, tc.want)
				}
			}
		})
	}
}

// TestEncodeUpdateOld: "old" lists a column when its encoding changed, whatever form
// go-mysql gave the values in, and not when only a JSON document's spacing did.
func TestEncodeUpdateOld(t *testing.T) {
	tb := &Table{Database: "shop", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true},
		{Name: "doc", Type: mysql.MYSQL_TYPE_BLOB, JSON: true},
		{Name: "raw", Type: mysql.MYSQL_TYPE_BLOB, Binary: true},
		{Name: "f", Type: mysql.MYSQL_TYPE_DOUBLE},
	}}
	tests := []struct {
		name          string
		before, after []any
		want          string
	}{
		{"nothing changed", []any{int32(1), []byte(`{"a":1}`), []byte{1}, 1.5}, []any{int32(1), []byte(`{"a":1}`), []byte{1}, 1.5}, `{}`},
		{"json spacing only", []any{int32(1), []byte(`{"a": 1}`), []byte{1}, 1.5}, []any{int32(1), []byte(`{"a":1}`), []byte{1}, 1.5}, `{}`},
		{"json changed", []any{int32(1), []byte(`{"a": 1}`), []byte{1}, 1.5}, []any{int32(1), `{"a":2}`, []byte{1}, 1.5}, `{"doc":{"a":1}}`},
		{"bytes and null", []any{int32(1), nil, []byte{1}, nil}, []any{int32(1), []byte(`{}`), []byte{2}, 2.5}, `{"doc":null,"raw":"AQ==","f":null}`},
		{"float", []any{int32(1), nil, nil, 1.5}, []any{int32(1), nil, nil, 1.25}, `{"f":1.5}`},
		{"json null document to NULL", []any{int32(1), []byte(`null`), nil, nil}, []any{int32(1), nil, nil, nil}, `{"doc":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if old := oldOf(t, tb, tc.before, tc.after); old != tc.want {
				t.Errorf("old %s, want %s", old, tc.want)
			}
		})
	}
}

// oldOf is the "old" member of the update message of before → after.
func oldOf(t *testing.T, tb *Table, before, after []any) string {
	t.Helper()
	got, err := EncodeRow(nil, tb, TypeUpdate, Meta{}, before, after)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct{ Old json.RawMessage }
	if err := json.Unmarshal(got, &msg); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	return string(msg.Old)
}

func TestEncodeRowNoPK(t *testing.T) {
	tb := testTable()
	tb.PK = nil
	got, err := EncodeRow(nil, tb, TypeInsert, Meta{}, nil, []any{uint64(1), "1", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"pk":null`) {
		t.Errorf("got %s, want pk null", got)
	}
	if k := AppendKey(nil, tb, PartitionPK, []any{uint64(1), "1", "x"}); string(k) != "shop.orders" {
		t.Errorf("key %q, want the table for a table without a primary key", k)
	}
}

func TestEncodeRowColumnCountMismatch(t *testing.T) {
	_, err := EncodeRow(nil, testTable(), TypeInsert, Meta{}, nil, []any{uint64(1)})
	if err == nil || !strings.Contains(err.Error(), "shop.orders") {
		t.Fatalf("err = %v, want a mismatch naming the table", err)
	}
}

func TestEncodeDDL(t *testing.T) {
	got := EncodeDDL(nil, "shop", "orders", Meta{Instance: "i", File: "f", Pos: 9, Commit: true}, "ALTER TABLE orders ADD c INT")
	want := `{"instance":"i","database":"shop","table":"orders","type":"ddl","ts":0,"file":"f","pos":9,"commit":true,"sql":"ALTER TABLE orders ADD c INT"}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestAppendKey(t *testing.T) {
	tb := testTable()
	tb.PK = []int{0, 2}
	row := []any{uint64(18446744073709551615), "1", "ü"}
	for by, want := range map[string]string{
		PartitionPK:       `shop.orders:[18446744073709551615,"ü"]`,
		PartitionTable:    "shop.orders",
		PartitionDatabase: "shop",
	} {
		if got := AppendKey(nil, tb, by, row); string(got) != want {
			t.Errorf("%s: key %q, want %q", by, got, want)
		}
	}
}

// TestKeysOfNamesWithTheKeysSyntax: names holding ".", ":" or "`" are backquoted, so that
// two tables' rows never share a key (with log compaction, one would be lost).
func TestKeysOfNamesWithTheKeysSyntax(t *testing.T) {
	key := func(db, table, by string) string {
		tb := &Table{Database: db, Name: table, PK: []int{0}, Columns: []Column{{Name: "id", Type: mysql.MYSQL_TYPE_LONG}}}
		return string(AppendKey(nil, tb, by, []any{int32(1)}))
	}
	for _, tc := range []struct{ db, table, by, want string }{
		{"shop", "orders", PartitionPK, "shop.orders:[1]"},
		{"a.b", "c", PartitionPK, "`a.b`.c:[1]"},
		{"a", "b.c", PartitionPK, "a.`b.c`:[1]"},
		{"a", "b:[1]", PartitionPK, "a.`b:[1]`:[1]"},
		{"we`ird", "t", PartitionTable, "`we``ird`.t"},
		{"a.b", "c", PartitionDatabase, "`a.b`"},
	} {
		if got := key(tc.db, tc.table, tc.by); got != tc.want {
			t.Errorf("%q.%q by %s: key %q, want %q", tc.db, tc.table, tc.by, got, tc.want)
		}
	}
	if key("a.b", "c", PartitionPK) == key("a", "b.c", PartitionPK) {
		t.Error("two tables' rows share a key")
	}
	// A DDL's key is its table's rows' key under partition_by table or database (it was
	// "a.b.c" unquoted, so a table's DDL and rows could take different partitions).
	for _, tc := range []struct{ db, table, by string }{{"a.b", "c", PartitionTable}, {"we`ird", "t:1", PartitionTable}, {"a.b", "c", PartitionDatabase}, {"shop", "orders", PartitionTable}} {
		if got, want := string(AppendDDLKey(nil, tc.db, tc.table, tc.by)), key(tc.db, tc.table, tc.by); got != want {
			t.Errorf("DDL on %q.%q by %s: key %q, want its rows' %q", tc.db, tc.table, tc.by, got, want)
		}
	}
}

// FuzzEncodeRow: any values of any column kind must give valid JSON or an error, never
// a panic.
func FuzzEncodeRow(f *testing.F) {
	f.Add(byte(mysql.MYSQL_TYPE_VARCHAR), false, false, false, "text ü", int64(-1), []byte{0, 1})
	f.Add(byte(mysql.MYSQL_TYPE_JSON), false, false, true, `{"a":1}`, int64(5), []byte(`[1`))
	f.Add(byte(mysql.MYSQL_TYPE_ENUM), true, false, false, "\xff\xfe", int64(-9), []byte{})
	f.Add(byte(mysql.MYSQL_TYPE_SET), false, true, false, "", int64(1<<62), []byte("x"))
	f.Add(byte(mysql.MYSQL_TYPE_LONGLONG), true, false, false, "2024-01-01 00:00:00", int64(-1), []byte(nil))
	f.Fuzz(func(t *testing.T, typ byte, unsigned, binary, isJSON bool, s string, n int64, b []byte) {
		tb := &Table{Database: "d\x00", Name: s, PK: []int{0}, Columns: []Column{
			{Name: "a", Type: typ, Unsigned: unsigned, Binary: binary, JSON: isJSON, Enum: []string{s}, Set: []string{"x", s}},
			{Name: s, Type: typ, Unsigned: unsigned, Binary: binary, JSON: isJSON},
			{Name: "c", Type: typ, Unsigned: unsigned, Binary: binary, JSON: isJSON},
			{Name: "d", Type: typ, Unsigned: unsigned},
		}}
		before := []any{n, s, b, int32(n)}
		after := []any{uint64(n), []byte(s), string(b), float64(n)}
		for _, typ := range []string{TypeInsert, TypeUpdate, TypeDelete} {
			var bf, af []any
			switch typ {
			case TypeInsert:
				af = after
			case TypeUpdate:
				bf, af = before, after
			case TypeDelete:
				bf = before
			}
			out, err := EncodeRow(nil, tb, typ, Meta{Instance: s, GTID: s, File: s}, bf, af)
			if err != nil {
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("invalid JSON: %q", out)
			}
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil || m["type"] != typ {
				t.Fatalf("decoded %v, %v", m, err)
			}
		}
		if out := EncodeDDL(nil, s, s, Meta{}, s); !json.Valid(out) {
			t.Fatalf("invalid DDL JSON: %q", out)
		}
	})
}

// TestEncodeUpdateOldTime: time.Time values (ParseTime on) are compared as instants,
// text (ParseTime off) as text, so an unchanged DATETIME or TIMESTAMP stays out of "old"
// and a changed one is listed.
func TestEncodeUpdateOldTime(t *testing.T) {
	tb := &Table{Database: "shop", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true},
		{Name: "at", Type: mysql.MYSQL_TYPE_TIMESTAMP2, Frac: 3},
	}}
	at := time.Date(2024, 1, 2, 3, 4, 5, 6e6, time.UTC)
	tests := []struct {
		name          string
		before, after any
		want          string
	}{
		{"same instant, other zone", at, at.In(time.FixedZone("UTC+2", 7200)), `{}`},
		{"changed", at, at.Add(time.Millisecond), `{"at":"2024-01-02T03:04:05.006Z"}`},
		{"from text to time", "0000-00-00 00:00:00", at, `{"at":"0000-00-00T00:00:00"}`},
		// go-mysql's text (ParseTime off, the capture's syncer) is compared as text.
		{"same text", "2024-01-02 03:04:05.006", "2024-01-02 03:04:05.006", `{}`},
		{"changed text", "2024-01-02 03:04:05.006", "2024-01-02 03:04:05.007", `{"at":"2024-01-02T03:04:05.006Z"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if old := oldOf(t, tb, []any{int32(1), tc.before}, []any{int32(1), tc.after}); old != tc.want {
				t.Errorf("old = %s, want %s", old, tc.want)
			}
		})
	}
}

// packedDatetime2 is a DATETIME2(dec) field as rowsDecoder has go-mysql hand it over: its
// bytes as a big-endian int64.
func packedDatetime2(year, month, day, hour, minute, second int, stored uint64, dec int) int64 {
	var v int64
	for _, b := range datetime2Bytes(year, month, day, hour, minute, second, stored, dec) {
		v = v<<8 | int64(b)
	}
	return v
}

// TestEncodeUpdateOldPackedDatetime: rowsDecoder's DATETIME values (int64s of their
// fields) are compared by their text, as the fields read in place are (sameDecoded):
// different fields of one text (a fraction's digit the column does not show) are the
// same value, a date past its month's end is not the next month's first.
func TestEncodeUpdateOldPackedDatetime(t *testing.T) {
	tb := &Table{Database: "shop", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true},
		{Name: "at", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 1},
	}}
	feb30 := packedDatetime2(2024, 2, 30, 10, 0, 0, 50, 1)
	tests := []struct {
		name          string
		before, after any
		want          string
	}{
		{"same field", feb30, packedDatetime2(2024, 2, 30, 10, 0, 0, 50, 1), `{}`},
		{"same text, other field", packedDatetime2(2024, 2, 30, 10, 0, 0, 15, 1), packedDatetime2(2024, 2, 30, 10, 0, 0, 10, 1), `{}`},
		{"February 30th to March 1st", feb30, packedDatetime2(2024, 3, 1, 10, 0, 0, 50, 1), `{"at":"2024-02-30T10:00:00.5"}`},
		{"changed fraction", feb30, packedDatetime2(2024, 2, 30, 10, 0, 0, 60, 1), `{"at":"2024-02-30T10:00:00.5"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if old := oldOf(t, tb, []any{int32(1), tc.before}, []any{int32(1), tc.after}); old != tc.want {
				t.Errorf("old = %s, want %s", old, tc.want)
			}
		})
	}
}
