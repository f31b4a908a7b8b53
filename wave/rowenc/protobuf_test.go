package rowenc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/wave/rowenc/rowpb"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite the format golden files under testdata/")

// protoJSONish turns a decoded binlake.v1.Row into what encoding/json (UseNumber) makes
// of the JSON row message of the same row: both forms must carry the same fields.
func protoJSONish(t testing.TB, r *rowpb.Row) map[string]any {
	t.Helper()
	m := map[string]any{
		"instance": r.GetInstance(), "database": r.GetDatabase(), "table": r.GetTable(),
		"type": strings.ToLower(strings.TrimPrefix(r.GetType().String(), "TYPE_")),
		"ts":   json.Number(strconv.FormatInt(r.GetTs(), 10)), "file": r.GetFile(),
		"pos": json.Number(strconv.FormatUint(r.GetPos(), 10)), "commit": r.GetCommit(),
	}
	if r.GetGtid() != "" {
		m["gtid"] = r.GetGtid()
	}
	if r.GetXid() != 0 {
		m["xid"] = json.Number(strconv.FormatUint(r.GetXid(), 10))
	}
	if r.GetType() == rowpb.Type_TYPE_DDL {
		m["sql"] = r.GetSql()
		return m
	}
	fields := func(fs []*rowpb.Field) map[string]any {
		out := map[string]any{}
		for _, f := range fs {
			out[f.GetName()] = protoValueJSONish(t, f)
		}
		return out
	}
	m["pk"] = nil
	if len(r.GetPk()) > 0 {
		m["pk"] = fields(r.GetPk())
	}
	m["data"] = fields(r.GetData())
	if r.GetType() == rowpb.Type_TYPE_UPDATE {
		m["old"] = fields(r.GetOld())
	}
	return m
}

func protoValueJSONish(t testing.TB, f *rowpb.Field) any {
	switch v := f.GetValue().(type) {
	case *rowpb.Field_Null:
		require.True(t, v.Null, "field %s: null is set to false", f.GetName())
		return nil
	case *rowpb.Field_Int:
		return json.Number(strconv.FormatInt(v.Int, 10))
	case *rowpb.Field_Uint:
		return json.Number(strconv.FormatUint(v.Uint, 10))
	case *rowpb.Field_Float:
		return json.Number(strconv.FormatFloat(float64(v.Float), 'g', -1, 32))
	case *rowpb.Field_Double:
		return json.Number(strconv.FormatFloat(v.Double, 'g', -1, 64))
	case *rowpb.Field_String_:
		return v.String_
	case *rowpb.Field_Bytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case *rowpb.Field_Json:
		return decodeJSONish(t, []byte(v.Json))
	}
	t.Fatalf("field %s has no value", f.GetName())
	return nil
}

func decodeJSONish(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%s", b)
	return v
}

// requireProtoMatchesJSON decodes a protobuf row message with the generated types and
// fails unless it carries what the JSON message of the same row carries, and unless its
// bytes are those proto.Marshal writes for what it decoded.
func requireProtoMatchesJSON(t testing.TB, pb, js []byte) {
	t.Helper()
	var r rowpb.Row
	require.NoError(t, proto.Unmarshal(pb, &r), "protobuf message %x", pb)
	require.Equal(t, decodeJSONish(t, js), any(protoJSONish(t, &r)), "json: %s", js)
	canon, err := proto.MarshalOptions{Deterministic: true}.Marshal(&r)
	require.NoError(t, err)
	require.Equal(t, canon, pb, "the encoder's bytes differ from proto.Marshal's")
}

// allKindsTable is a table with a column of every kind the row message handles, and
// rows of it as go-mysql decodes them: edges, NULLs, utf8mb4 and invalid text.
func allKindsTable() (*Table, [][]any) {
	tb := &Table{Database: "shop", Name: "kinds", PK: []int{0, 1}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true, PK: true},
		{Name: "k2", Type: mysql.MYSQL_TYPE_VARCHAR, PK: true},
		{Name: "ti", Type: mysql.MYSQL_TYPE_TINY},
		{Name: "tu", Type: mysql.MYSQL_TYPE_TINY, Unsigned: true},
		{Name: "mi", Type: mysql.MYSQL_TYPE_INT24},
		{Name: "bi", Type: mysql.MYSQL_TYPE_LONGLONG},
		{Name: "yr", Type: mysql.MYSQL_TYPE_YEAR},
		{Name: "bt", Type: mysql.MYSQL_TYPE_BIT},
		{Name: "fl", Type: mysql.MYSQL_TYPE_FLOAT},
		{Name: "db", Type: mysql.MYSQL_TYPE_DOUBLE},
		{Name: "dc", Type: mysql.MYSQL_TYPE_NEWDECIMAL},
		{Name: "dt", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 6},
		{Name: "ts", Type: mysql.MYSQL_TYPE_TIMESTAMP2, Frac: 6},
		{Name: "da", Type: mysql.MYSQL_TYPE_DATE},
		{Name: "tm", Type: mysql.MYSQL_TYPE_TIME2},
		{Name: "js", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "mj", Type: mysql.MYSQL_TYPE_BLOB, JSON: true},
		{Name: "bl", Type: mysql.MYSQL_TYPE_BLOB, Binary: true},
		{Name: "vb", Type: mysql.MYSQL_TYPE_VARCHAR, Binary: true},
		{Name: "tx", Type: mysql.MYSQL_TYPE_BLOB},
		{Name: "en", Type: mysql.MYSQL_TYPE_ENUM, Enum: []string{"small", "medium"}},
		{Name: "st", Type: mysql.MYSQL_TYPE_SET, Set: []string{"a", "b", "c"}},
		{Name: "ge", Type: mysql.MYSQL_TYPE_GEOMETRY},
	}}
	rows := [][]any{
		{uint64(1), "ü", int8(-128), int8(-1), int32(-8388608), int64(-9223372036854775808), int(2026), int64(5),
			float32(1.1), -2.5e-300, "12345678901234567890.1234567890",
			time.Date(2026, 12, 1, 10, 11, 12, 123456000, time.UTC), time.Date(2026, 12, 1, 12, 11, 12, 5000, time.FixedZone("", 7200)),
			"2024-02-29", "-838:59:59", `{"a": [1, 2.50, "ü"]}`, []byte(`[true, null]`), []byte{0, 1, 0xff}, "\x00\xfe",
			[]byte("emoji 😀 中文 q\" \n"), int64(2), int64(5), []byte{1, 2}},
		{int64(-1), "a\xffb", int8(0), uint8(255), int32(0), int64(0), int(0), int64(0),
			float32(0), 0.0, "-0.00", "0000-00-00 00:00:00", "0000-00-00 00:00:00",
			"0000-00-00", "00:00:00", "", []byte(`{bad`), []byte{}, "", []byte(""), int64(0), int64(0), []byte{}},
		{uint64(3), "", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
	return tb, rows
}

// protoCases are the messages of allKindsTable as each type carries them.
type protoCase struct {
	name          string
	typ           string
	meta          Meta
	before, after []any
}

func protoCases() (*Table, []protoCase) {
	tb, rows := allKindsTable()
	m := Meta{Instance: "orders", TS: 1764424800, GTID: "0-1-202", File: "bin.000001", Pos: 1234}
	commit := m
	commit.Commit, commit.XID = true, 88
	return tb, []protoCase{
		{"insert", TypeInsert, m, nil, rows[0]},
		{"insert zero values", TypeInsert, Meta{File: "bin.000002"}, nil, rows[1]},
		{"snapshot nulls", TypeSnapshot, m, nil, rows[2]},
		{"update", TypeUpdate, commit, rows[0], rows[1]},
		{"update to nulls", TypeUpdate, m, rows[1], rows[2]},
		{"update no change", TypeUpdate, m, rows[0], rows[0]},
		{"delete", TypeDelete, commit, rows[0], nil},
	}
}

// TestProtoMatchesJSON: every kind of value, NULLs, zero values and a table with a
// composite key, in each message type, carry in the protobuf message what they carry
// in the JSON one, decoded with the generated types.
func TestProtoMatchesJSON(t *testing.T) {
	tb, cases := protoCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, err := EncodeRow(nil, tb, tc.typ, tc.meta, tc.before, tc.after)
			require.NoError(t, err)
			pb, err := EncodeRowProto(nil, tb, tc.typ, tc.meta, tc.before, tc.after)
			require.NoError(t, err)
			requireProtoMatchesJSON(t, pb, js)
		})
	}
	t.Run("ddl", func(t *testing.T) {
		m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 99, Commit: true}
		sql := "ALTER TABLE kinds ADD COLUMN x INT COMMENT 'bin \xff'"
		requireProtoMatchesJSON(t, EncodeDDLProto(nil, "shop", "kinds", m, sql), EncodeDDL(nil, "shop", "kinds", m, sql))
	})
	t.Run("no primary key", func(t *testing.T) {
		tb := &Table{Database: "d", Name: "t", Columns: []Column{{Name: "a", Type: mysql.MYSQL_TYPE_LONG}}}
		js, err := EncodeRow(nil, tb, TypeInsert, Meta{}, nil, []any{int32(1)})
		require.NoError(t, err)
		pb, err := EncodeRowProto(nil, tb, TypeInsert, Meta{}, nil, []any{int32(1)})
		require.NoError(t, err)
		requireProtoMatchesJSON(t, pb, js)
	})
}

// TestProtoRowErrors: a row that does not fit its table, or a value of a type go-mysql
// never gives, is an error naming the problem, as in the JSON form.
func TestProtoRowErrors(t *testing.T) {
	tb := testTable()
	_, err := EncodeRowProto(nil, tb, TypeInsert, Meta{}, nil, []any{uint64(1)})
	require.ErrorContains(t, err, "row has 1 values, table map 3 columns")
	_, err = EncodeRowProto(nil, tb, TypeInsert, Meta{}, nil, []any{uint64(1), struct{}{}, nil})
	require.ErrorContains(t, err, "column amount: unsupported value type struct {}")
}

// TestProtoGolden pins the bytes of protoCases' messages (testdata/protobuf.golden, one
// message per line in hex after its case's name); -update-golden rewrites it.
func TestProtoGolden(t *testing.T) {
	tb, cases := protoCases()
	var out bytes.Buffer
	for _, tc := range cases {
		pb, err := EncodeRowProto(nil, tb, tc.typ, tc.meta, tc.before, tc.after)
		require.NoError(t, err)
		fmt.Fprintf(&out, "%s\t%x\n", tc.name, pb)
	}
	m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 99, Commit: true}
	fmt.Fprintf(&out, "ddl\t%x\n", EncodeDDLProto(nil, "shop", "kinds", m, "ALTER TABLE kinds ADD COLUMN x INT"))
	requireGolden(t, filepath.Join("testdata", "protobuf.golden"), out.Bytes())
}

// requireGolden compares got with the golden file path, or rewrites it with -update-golden.
func requireGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run %s -update-golden to write it", t.Name())
	require.Equal(t, string(want), string(got), "%s is out of date (run with -update-golden after checking the change)", path)
}

// FuzzProtoMatchesJSON checks, for any table of the kinds read in place and any field
// values, that the protobuf message of every row, read in place and decoded by go-mysql,
// carries what the JSON message of the same row carries.
func FuzzProtoMatchesJSON(f *testing.F) {
	f.Add([]byte{0, 4, 9, 11, 14, 17, 19}, []byte("\x01\x02\x03 some bytes \xff\x80\x00 of a row"), uint8(0), uint8(0))
	f.Add([]byte{8, 10, 12, 13, 15, 16, 18, 20}, bytes.Repeat([]byte{0x80, 0x7f, 3}, 40), uint8(1), uint8(7))
	f.Add([]byte{1, 2, 3, 5, 6, 7}, bytes.Repeat([]byte{0xff, 0}, 30), uint8(2), uint8(3))
	for op := range uint8(3) {
		kinds, src := invalidDatesSeed()
		f.Add(kinds, src, op, uint8(0))
	}
	f.Fuzz(func(t *testing.T, kinds, src []byte, op, flags uint8) {
		if len(kinds) == 0 || len(kinds) > 24 {
			return
		}
		cols := fuzzColumns(kinds, flags)
		te := newTestEvents(t, cols)
		if !te.table.inPlace {
			return
		}
		te.table.PK = []int{0}
		et := []replication.EventType{replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2}[op%3]
		typ := map[replication.EventType]string{replication.WRITE_ROWS_EVENTv2: TypeInsert,
			replication.UPDATE_ROWS_EVENTv2: TypeUpdate, replication.DELETE_ROWS_EVENTv2: TypeDelete}[et]
		images := 2
		if typ == TypeUpdate {
			images = 4
		}
		e, err := te.rowsEvent(t, et, rowBytes(cols, te.table, images, src))
		if err != nil {
			return
		}
		u, _ := undecodedOf(e)
		_, raws, err := readImages(nil, nil, u.data[u.pos:], te.table, typ)
		if err != nil {
			return
		}
		m := Meta{Instance: "i", File: "f", Pos: 4}
		checkProtoImages(t, te.table, typ, m, raws)
		if err := newRowsDecoder().decodeRows(e, u); err != nil {
			return // fields no server writes, which go-mysql refuses (FuzzRawAsDecoded)
		}
		decoded := make([]values, len(e.Rows))
		for i := range e.Rows {
			decoded[i] = e.Rows[i]
		}
		checkProtoImages(t, te.table, typ, m, decoded)
	})
}

// checkProtoImages encodes each row of images in both formats and compares them.
func checkProtoImages[I typedImage[I]](t *testing.T, tb *Table, typ string, m Meta, images []I) {
	step := 1
	if typ == TypeUpdate {
		step = 2
	}
	var s typedScratch
	for i := 0; i+step <= len(images); i += step {
		var before, after I
		switch typ {
		case TypeInsert:
			after = images[i]
		case TypeDelete:
			before = images[i]
		default:
			before, after = images[i], images[i+1]
		}
		js, errJS := encodeRow(appendHeader(nil, nil, tb.Database, tb.Name, typ, m), tb, before, after)
		pb, errPB := encodePBRow(appendPBCommit(appendPBHeader(nil, tb.Database, tb.Name, typ, m), m), &s, tb, before, after)
		require.Equal(t, errJS == nil, errPB == nil, "json: %v, protobuf: %v", errJS, errPB)
		if errJS == nil {
			requireProtoMatchesJSON(t, pb, js)
		}
	}
}
