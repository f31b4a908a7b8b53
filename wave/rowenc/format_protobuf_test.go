package rowenc

import (
	"runtime"
	"testing"

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

// BenchmarkRowsEventFormats is BenchmarkRowsEvent's event (100 inserted rows read in
// place) through the Encoder with one subscription of each format: ns/row, allocs/row
// (the event's one arena, shared by its rows) and bytes/row of the messages.
func BenchmarkRowsEventFormats(b *testing.B) {
	te, e := benchRowsEvent(b)
	te.table.PK = []int{0}
	te.table.Prepare()
	u, _ := undecodedOf(e)
	m := Meta{Instance: "shop-1", TS: 1764583872, GTID: "0-1-123456", File: "mysql-bin.000042", Pos: 4567890}
	for _, name := range []string{FormatJSON, FormatProtobuf, FormatCanalProtobuf} {
		f, err := NewFormat(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		targets := []Target{{By: PartitionPK, Format: f}}
		b.Run(name, func(b *testing.B) {
			var enc Encoder
			var fields []span
			var raws []rawImage
			var size int
			var before, after runtime.MemStats
			b.ReportAllocs()
			runtime.ReadMemStats(&before)
			for b.Loop() {
				var err error
				if fields, raws, err = readImages(fields[:0], raws[:0], u.data[u.pos:], te.table, TypeInsert); err != nil {
					b.Fatal(err)
				}
				ev := Event{Table: te.table, Type: TypeInsert, Meta: m, Rows: Rows{raw: raws}}
				msgs, err := enc.Encode(&ev, targets, true, 7, nil)
				if err != nil {
					b.Fatal(err)
				}
				size = 0
				for _, msg := range msgs {
					size += len(msg.Value)
				}
			}
			runtime.ReadMemStats(&after)
			rows := float64(b.N * benchEventRows)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/rows, "allocs/row")
			b.ReportMetric(float64(size)/benchEventRows, "bytes/row")
		})
	}
}
