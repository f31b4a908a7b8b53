package rowenc

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/wave/rowenc/rowpb"

	"github.com/stretchr/testify/require"
)

// TestProtobufFormatsThroughEncoder: the Encoder, with a subscription of each format,
// gives for each row of a rows event read in place a protobuf message that carries what
// its json message carries, and a canal-protobuf message Canal's types decode; the
// registry knows both names, and both refuse options.
func TestProtobufFormatsThroughEncoder(t *testing.T) {
	pb, err := NewFormat(FormatProtobuf, nil)
	require.NoError(t, err)
	cp, err := NewFormat(FormatCanalProtobuf, nil)
	require.NoError(t, err)
	for _, name := range []string{FormatProtobuf, FormatCanalProtobuf} {
		_, err := NewFormat(name, map[string]string{"x": "y"})
		require.ErrorContains(t, err, "format "+name+`: option "x": the format has no options`)
	}
	te, e := benchRowsEvent(t)
	te.table.PK = []int{0}
	u, _ := undecodedOf(e)
	_, raws, err := readImages(nil, nil, u.data[u.pos:], te.table, TypeInsert)
	require.NoError(t, err)
	ev := &Event{Table: te.table, Type: TypeInsert, Meta: Meta{Instance: "i", File: "f", Pos: 9}, Rows: Rows{raw: raws}}
	var enc Encoder
	msgs, err := enc.Encode(ev, []Target{{By: PartitionPK}, {By: PartitionPK, Format: pb}, {By: PartitionPK, Format: cp}}, true, 42, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 3*benchEventRows)
	for i := 0; i < len(msgs); i += 3 {
		js, p, c := msgs[i], msgs[i+1], msgs[i+2]
		require.Equal(t, js.Key, p.Key, "keys are the same in every format")
		require.Equal(t, js.Key, c.Key)
		requireProtoMatchesJSON(t, p.Value, js.Value)
		_, rc := decodeCanal(t, c.Value)
		require.Len(t, rc.GetRowDatas()[0].GetAfterColumns(), len(te.table.Columns))
	}
	// The DDL path.
	out, ok, err := pb.AppendDDL(nil, &DDL{Database: "d", Table: "t", Meta: Meta{Commit: true}, SQL: "DROP TABLE t"})
	require.NoError(t, err)
	require.True(t, ok)
	requireProtoMatchesJSON(t, out, EncodeDDL(nil, "d", "t", Meta{Commit: true}, "DROP TABLE t"))
	out, ok, err = cp.AppendDDL(nil, &DDL{Database: "d", Table: "t", SQL: "DROP TABLE t"})
	require.NoError(t, err)
	require.True(t, ok)
	_, rc := decodeCanal(t, out)
	require.True(t, rc.GetIsDdl())
}

// isProtobufFormat reports whether f writes protobuf, not JSON.
func isProtobufFormat(f Format) bool {
	return f.Name() == FormatProtobuf || f.Name() == FormatCanalProtobuf
}

// checkProtobufMessage fails unless value decodes with f's generated types.
func checkProtobufMessage(t *testing.T, f Format, value []byte) {
	t.Helper()
	if f.Name() == FormatCanalProtobuf {
		decodeCanal(t, value)
		return
	}
	var r rowpb.Row
	require.NoError(t, proto.Unmarshal(value, &r), "format %s: %x", f.Name(), value)
}
