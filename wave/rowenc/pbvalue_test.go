package rowenc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestPBLength: a length-delimited field written with pbBegin and pbEnd is what
// protowire writes for the same body, whatever room was left for its length: the
// length fits it, needs more (the body moves up) or less (the body moves down).
func TestPBLength(t *testing.T) {
	for _, room := range []int{1, 2} {
		for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 70000} {
			t.Run(fmt.Sprintf("room %d body %d", room, n), func(t *testing.T) {
				body := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
				want := protowire.AppendBytes(protowire.AppendTag([]byte("head"), 12, protowire.BytesType), body)
				got, l := pbBegin([]byte("head"), 12, room)
				got = pbEnd(append(got, body...), l)
				require.Equal(t, want, got)
			})
		}
	}
}

// TestProtoValuesWrittenInPlace: the values the protobuf writer renders as it writes
// them carry what the JSON message carries, in bytes proto.Marshal would write: a
// DATETIME in another location than UTC, a text whose invalid bytes make it outgrow
// the room left for its length, a JSON document with invalid bytes in a string, one
// that compacts below the room left for it, and one that is not JSON.
func TestProtoValuesWrittenInPlace(t *testing.T) {
	tb := &Table{Database: "d", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG},
		{Name: "dt", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 3},
		{Name: "tx", Type: mysql.MYSQL_TYPE_VARCHAR},
		{Name: "js", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "sp", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "bad", Type: mysql.MYSQL_TYPE_JSON},
	}}
	tb.Prepare()
	row := []any{int32(7), time.Date(2026, 12, 1, 10, 11, 12, 345678000, time.FixedZone("", 3600)),
		strings.Repeat("\xff", 100), []byte(`{"a": "x` + "\xff\xfe" + `y", "b": [1, 2]}`),
		[]byte(`[1,` + strings.Repeat(" ", 200) + `2]`), []byte(`{"unterminated`)}
	for _, typ := range []string{TypeInsert, TypeDelete} {
		before, after := []any(nil), row
		if typ == TypeDelete {
			before, after = row, nil
		}
		js, err := EncodeRow(nil, tb, typ, Meta{}, before, after)
		require.NoError(t, err)
		pb, err := EncodeRowProto(nil, tb, typ, Meta{}, before, after)
		require.NoError(t, err)
		requireProtoMatchesJSON(t, pb, js)
	}
}
