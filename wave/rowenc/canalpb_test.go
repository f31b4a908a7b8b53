package rowenc

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/wave/rowenc/canalpb"
)

// decodeCanal decodes a canal-protobuf message as Canal's client does (Packet, then
// Messages, then each Entry and its RowChange) with the generated types, and checks
// that nothing in it is unknown to them and that it re-encodes to the same size. (Not
// to the same bytes: Go's proto.Marshal writes oneof members after the other fields,
// Canal's Java builders, and so this encoder, in field-number order.)
func decodeCanal(t testing.TB, b []byte) (*canalpb.Entry, *canalpb.RowChange) {
	t.Helper()
	canon := func(m proto.Message, b []byte) {
		t.Helper()
		require.Empty(t, m.ProtoReflect().GetUnknown(), "%T has fields its type does not know", m)
		require.Equal(t, len(b), proto.Size(m), "%T: re-encoded size", m)
	}
	var p canalpb.Packet
	require.NoError(t, proto.Unmarshal(b, &p))
	canon(&p, b)
	require.Equal(t, canalpb.PacketType_MESSAGES, p.GetType())
	require.EqualValues(t, 1, p.GetVersion())
	var ms canalpb.Messages
	require.NoError(t, proto.Unmarshal(p.GetBody(), &ms))
	canon(&ms, p.GetBody())
	require.Len(t, ms.GetMessages(), 1, "one entry per message")
	var e canalpb.Entry
	require.NoError(t, proto.Unmarshal(ms.GetMessages()[0], &e))
	canon(&e, ms.GetMessages()[0])
	require.Equal(t, canalpb.EntryType_ROWDATA, e.GetEntryType())
	var rc canalpb.RowChange
	require.NoError(t, proto.Unmarshal(e.GetStoreValue(), &rc))
	canon(&rc, e.GetStoreValue())
	return &e, &rc
}

// canalCol is what a test expects of one Column.
type canalCol struct {
	value     string
	null      bool
	sqlType   int
	mysqlType string
}

// TestCanalProtobufValues: each kind of column as Canal renders it, in an insert.
func TestCanalProtobufValues(t *testing.T) {
	tb, rows := allKindsTable()
	m := Meta{Instance: "orders", TS: 1764424800, GTID: "0-1-202", File: "bin.000001", Pos: 1234}
	want := map[string]canalCol{
		"id": {"1", false, sqlBigint, "bigint unsigned"},
		"k2": {"ü", false, sqlVarchar, "varchar"},
		"ti": {"-128", false, sqlTinyint, "tinyint"},
		"tu": {"255", false, sqlSmallint, "tinyint unsigned"}, // above TINYINT's signed range
		"mi": {"-8388608", false, sqlInteger, "mediumint"},
		"bi": {"-9223372036854775808", false, sqlBigint, "bigint"},
		"yr": {"2026", false, sqlVarchar, "year"},
		"bt": {"5", false, sqlBit, "bit"},
		"fl": {"1.1", false, sqlReal, "float"},
		"db": {"-2.5E-300", false, sqlDouble, "double"},
		"dc": {"12345678901234567890.1234567890", false, sqlDecimal, "decimal"},
		"dt": {"2026-12-01 10:11:12.123456", false, sqlTimestamp, "datetime(6)"},
		"ts": {"2026-12-01 10:11:12.000005", false, sqlTimestamp, "timestamp(6)"},
		"da": {"2024-02-29", false, sqlDate, "date"},
		"tm": {"-838:59:59", false, sqlTime, "time"},
		"js": {`{"a":[1,2.50,"ü"]}`, false, sqlVarchar, "json"},
		"mj": {`[true,null]`, false, sqlClob, "longtext"},
		"bl": {"\x00\x01\u00ff", false, sqlBlob, "blob"},
		"vb": {"\x00\u00fe", false, sqlBlob, "varbinary"},
		"tx": {"emoji 😀 中文 q\" \n", false, sqlClob, "text"},
		"en": {"2", false, sqlInteger, "enum('small','medium')"},
		"st": {"5", false, sqlBit, "set('a','b','c')"},
		"ge": {"\x01\x02", false, sqlBlob, "geometry"},
	}
	b, err := EncodeRowCanal(nil, tb, TypeInsert, m, nil, rows[0])
	require.NoError(t, err)
	e, rc := decodeCanal(t, b)
	h := e.GetHeader()
	require.Equal(t, "bin.000001", h.GetLogfileName())
	require.EqualValues(t, 1234, h.GetLogfileOffset())
	require.EqualValues(t, 1764424800000, h.GetExecuteTime())
	require.Equal(t, "shop", h.GetSchemaName())
	require.Equal(t, "kinds", h.GetTableName())
	require.Equal(t, canalpb.EventType_INSERT, h.GetEventType())
	require.Equal(t, canalpb.Type_MYSQL, h.GetSourceType())
	require.Equal(t, "0-1-202", h.GetGtid())
	require.Equal(t, "UTF-8", h.GetServerenCode())
	require.Equal(t, canalpb.EventType_INSERT, rc.GetEventType())
	require.False(t, rc.GetIsDdl())
	require.Len(t, rc.GetRowDatas(), 1)
	rd := rc.GetRowDatas()[0]
	require.Empty(t, rd.GetBeforeColumns())
	require.Len(t, rd.GetAfterColumns(), len(tb.Columns))
	for i, c := range rd.GetAfterColumns() {
		w, ok := want[c.GetName()]
		require.True(t, ok, "column %s", c.GetName())
		require.EqualValues(t, i, c.GetIndex())
		require.Equal(t, w, canalCol{c.GetValue(), c.GetIsNull(), int(c.GetSqlType()), c.GetMysqlType()}, "column %s", c.GetName())
		require.Equal(t, i < 2, c.GetIsKey(), "column %s isKey", c.GetName())
		require.True(t, c.GetUpdated(), "column %s of an insert is updated, as Canal marks it", c.GetName())
	}
}

// TestCanalProtobufTypes: update, delete, snapshot, NULLs and the unsigned bumps.
func TestCanalProtobufTypes(t *testing.T) {
	tb, rows := allKindsTable()
	m := Meta{File: "bin.000002", Pos: 4}
	t.Run("update marks the changed after columns", func(t *testing.T) {
		b, err := EncodeRowCanal(nil, tb, TypeUpdate, m, rows[1], rows[2])
		require.NoError(t, err)
		_, rc := decodeCanal(t, b)
		require.Equal(t, canalpb.EventType_UPDATE, rc.GetEventType())
		rd := rc.GetRowDatas()[0]
		require.Len(t, rd.GetBeforeColumns(), len(tb.Columns))
		require.Len(t, rd.GetAfterColumns(), len(tb.Columns))
		for i, c := range rd.GetAfterColumns() {
			before := rd.GetBeforeColumns()[i]
			require.False(t, before.GetUpdated())
			switch c.GetName() {
			case "id":
				require.Equal(t, "3", c.GetValue())
				require.Equal(t, "18446744073709551615", before.GetValue())
				require.EqualValues(t, sqlDecimal, before.GetSqlType(), "BIGINT UNSIGNED above the signed range")
				require.True(t, c.GetUpdated())
			case "k2":
				require.Equal(t, "a\ufffdb", before.GetValue(), "invalid UTF-8 replaced")
				require.Equal(t, "", c.GetValue())
				require.False(t, c.GetIsNull())
				require.True(t, c.GetUpdated())
			default:
				require.True(t, c.GetIsNull(), "column %s", c.GetName())
				require.Empty(t, c.GetValue())
				require.Equal(t, !before.GetIsNull(), c.GetUpdated(), "column %s", c.GetName())
			}
		}
		zero := map[string]string{"yr": "0000", "fl": "0.0", "dt": "0000-00-00 00:00:00", "ts": "0000-00-00 00:00:00",
			"da": "0000-00-00", "tm": "00:00:00", "en": "0", "st": "0", "tu": "255",
			"dc": "-0.00"} // canal-json's text (a server never stores a negative zero)
		for _, c := range rd.GetBeforeColumns() {
			if w, ok := zero[c.GetName()]; ok {
				require.Equal(t, w, c.GetValue(), "column %s", c.GetName())
			}
		}
	})
	t.Run("delete carries the row before", func(t *testing.T) {
		b, err := EncodeRowCanal(nil, tb, TypeDelete, m, rows[0], nil)
		require.NoError(t, err)
		_, rc := decodeCanal(t, b)
		require.Equal(t, canalpb.EventType_DELETE, rc.GetEventType())
		rd := rc.GetRowDatas()[0]
		require.Empty(t, rd.GetAfterColumns())
		require.Len(t, rd.GetBeforeColumns(), len(tb.Columns))
		for _, c := range rd.GetBeforeColumns() {
			require.False(t, c.GetUpdated())
		}
	})
	t.Run("snapshot row as an insert", func(t *testing.T) {
		b, err := EncodeRowCanal(nil, tb, TypeSnapshot, m, nil, rows[2])
		require.NoError(t, err)
		e, rc := decodeCanal(t, b)
		require.Equal(t, canalpb.EventType_INSERT, e.GetHeader().GetEventType())
		require.Equal(t, canalpb.EventType_INSERT, rc.GetEventType())
	})
	t.Run("unsigned bumps", func(t *testing.T) {
		for _, tc := range []struct {
			typ  byte
			v    any
			want int
		}{
			{mysql.MYSQL_TYPE_TINY, int8(127), sqlTinyint}, {mysql.MYSQL_TYPE_TINY, int8(-128), sqlSmallint},
			{mysql.MYSQL_TYPE_SHORT, int16(-1), sqlInteger}, {mysql.MYSQL_TYPE_INT24, int32(-1), sqlInteger},
			{mysql.MYSQL_TYPE_LONG, int32(-1), sqlBigint}, {mysql.MYSQL_TYPE_LONG, int32(5), sqlInteger},
			{mysql.MYSQL_TYPE_LONGLONG, int64(math.MaxInt64), sqlBigint},
		} {
			tb := &Table{Database: "d", Name: "t", Columns: []Column{{Name: "u", Type: tc.typ, Unsigned: true}}}
			b, err := EncodeRowCanal(nil, tb, TypeInsert, Meta{}, nil, []any{tc.v})
			require.NoError(t, err)
			_, rc := decodeCanal(t, b)
			require.EqualValues(t, tc.want, rc.GetRowDatas()[0].GetAfterColumns()[0].GetSqlType(), "%d %v", tc.typ, tc.v)
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := EncodeRowCanal(nil, testTable(), TypeInsert, Meta{}, nil, []any{uint64(1)})
		require.ErrorContains(t, err, "row has 1 values, table map 3 columns")
		_, err = EncodeRowCanal(nil, testTable(), TypeInsert, Meta{}, nil, []any{uint64(1), struct{}{}, nil})
		require.ErrorContains(t, err, "column amount: unsupported value type")
	})
}

// TestCanalProtobufDDL: a DDL entry says isDdl, carries the statement and the event type
// Canal's parser gives it.
func TestCanalProtobufDDL(t *testing.T) {
	for sql, want := range map[string]canalpb.EventType{
		"CREATE TABLE t (a INT)":               canalpb.EventType_CREATE,
		"create temporary table t (a int)":     canalpb.EventType_CREATE,
		"/* gh-ost */ ALTER TABLE t ADD b INT": canalpb.EventType_ALTER,
		"DROP TABLE IF EXISTS t":               canalpb.EventType_ERASE,
		"TRUNCATE TABLE t":                     canalpb.EventType_TRUNCATE,
		"RENAME TABLE t TO u":                  canalpb.EventType_RENAME,
		"CREATE UNIQUE INDEX i ON t (a)":       canalpb.EventType_CINDEX,
		"DROP INDEX i ON t":                    canalpb.EventType_DINDEX,
		"-- note\nGRANT SELECT ON t TO u":      canalpb.EventType_QUERY,
		"ALTER TABLE t ADD INDEX i (a)":        canalpb.EventType_CINDEX,
		"ALTER TABLE t DROP KEY i":             canalpb.EventType_DINDEX,
		"ALTER TABLE t RENAME TO u":            canalpb.EventType_RENAME,
		"CREATE DATABASE d":                    canalpb.EventType_QUERY,
	} {
		m := Meta{TS: 5, File: "bin.000003", Pos: 77, Commit: true}
		e, rc := decodeCanal(t, EncodeDDLCanal(nil, "shop", "t", m, sql))
		require.True(t, rc.GetIsDdl(), sql)
		require.Equal(t, sql, rc.GetSql())
		require.Equal(t, "shop", rc.GetDdlSchemaName())
		require.Equal(t, want, rc.GetEventType(), sql)
		require.Equal(t, want, e.GetHeader().GetEventType(), sql)
		require.Equal(t, "t", e.GetHeader().GetTableName())
		require.Empty(t, rc.GetRowDatas())
	}
}

// TestCanalProtobufGolden pins the bytes of protoCases' messages in canal-protobuf
// (testdata/canal-protobuf.golden); -update-golden rewrites it.
func TestCanalProtobufGolden(t *testing.T) {
	tb, cases := protoCases()
	var out bytes.Buffer
	for _, tc := range cases {
		b, err := EncodeRowCanal(nil, tb, tc.typ, tc.meta, tc.before, tc.after)
		require.NoError(t, err)
		decodeCanal(t, b)
		fmt.Fprintf(&out, "%s\t%x\n", tc.name, b)
	}
	m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 99, Commit: true}
	fmt.Fprintf(&out, "ddl\t%x\n", EncodeDDLCanal(nil, "shop", "kinds", m, "ALTER TABLE kinds ADD COLUMN x INT"))
	requireGolden(t, filepath.Join("testdata", "canal-protobuf.golden"), out.Bytes())
}

// TestCanalProtobufJSONText: a JSON column's value, which canal-protobuf takes from its
// json rendering without quoting and unquoting it (but for an update's after value), is
// the text of its canal-json value, in every message type: documents with escapes,
// U+2028, invalid bytes in a string, text that is not JSON, an empty document (NULL);
// an update's unchanged document is not updated.
func TestCanalProtobufJSONText(t *testing.T) {
	tb := &Table{Database: "d", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true},
		{Name: "js", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "mj", Type: mysql.MYSQL_TYPE_BLOB, JSON: true},
		{Name: "same", Type: mysql.MYSQL_TYPE_JSON},
	}}
	tb.Prepare()
	before := []any{int32(1), []byte(`{"q": "a\"b\\c\u2028", "n": [1, 2]}`), []byte("{\"bad\": \"x\xffy\"}"), []byte(`[1, 2]`)}
	after := []any{int32(1), []byte("  "), []byte(`{not json`), []byte(`[1,2]`)}
	for _, tc := range []struct {
		typ           string
		before, after []any
	}{{TypeInsert, nil, before}, {TypeInsert, nil, after}, {TypeDelete, before, nil}, {TypeUpdate, before, after}} {
		b, err := EncodeRowCanal(nil, tb, tc.typ, Meta{}, tc.before, tc.after)
		require.NoError(t, err)
		_, rc := decodeCanal(t, b)
		rows := Rows{rows: []values{tc.before, tc.after}}
		images := map[string]Image{"before": {rows: &rows, t: tb, i: 0}, "after": {rows: &rows, t: tb, i: 1}}
		for name, cols := range map[string][]*canalpb.Column{"before": rc.GetRowDatas()[0].GetBeforeColumns(), "after": rc.GetRowDatas()[0].GetAfterColumns()} {
			if images[name].IsNil() || (name == "before" && tc.before == nil) || (name == "after" && tc.after == nil) {
				require.Empty(t, cols, name)
				continue
			}
			require.Len(t, cols, len(tb.Columns), name)
			for i, c := range cols {
				tok, err := appendCanalValue(nil, images[name], i)
				require.NoError(t, err)
				want, null := "", isNullToken(tok)
				if !null {
					text, ok := jsonenc.AppendUnquoted(nil, tok)
					require.True(t, ok)
					want = string(text)
				}
				require.Equal(t, null, c.GetIsNull(), "%s %s %s", tc.typ, name, c.GetName())
				require.Equal(t, want, c.GetValue(), "%s %s %s", tc.typ, name, c.GetName())
			}
		}
		if tc.typ == TypeUpdate {
			updated := map[string]bool{}
			for _, c := range rc.GetRowDatas()[0].GetAfterColumns() {
				updated[c.GetName()] = c.GetUpdated()
			}
			require.Equal(t, map[string]bool{"id": false, "js": true, "mj": true, "same": false}, updated)
		}
	}
}
