package rowenc

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/wave/rowenc/canalpb"
)

// kafkaPartition is the partition kafka-go's writer (and bus/kafka's Partition) sends a
// key to among n: what a Target's Partition says in the wave.
func kafkaPartition(n int) func(key []byte) (int, bool) {
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	b := &kafkago.Murmur2Balancer{}
	return func(key []byte) (int, bool) { return b.Balance(kafkago.Message{Key: key}, parts...), true }
}

// groupEvent is an event of typ of benchTable's rows (an update: pairs of them), as
// go-mysql decodes them.
func groupEvent(typ string) *Event {
	t, rows := benchTable()
	vals := make([]values, len(rows))
	for i, r := range rows {
		vals[i] = r
	}
	return &Event{Table: t, Type: typ, Rows: Rows{rows: vals},
		Meta: Meta{Instance: "shop-1", TS: 1764583872, GTID: "0-1-9", File: "bin.000007", Pos: 4242}}
}

// encodeCopy encodes ev for targets and copies the messages out of the Encoder's arena.
func encodeCopy(t *testing.T, e *Encoder, ev *Event, targets []Target, keep Keep) []Message {
	t.Helper()
	msgs, err := e.Encode(ev, targets, true, 5, keep)
	require.NoError(t, err)
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Key: bytes.Clone(m.Key), Value: bytes.Clone(m.Value), By: m.By, Rows: m.Rows}
	}
	return out
}

// canalRowDatas decodes a canal-protobuf message's header and RowDatas (decodeCanal
// checks that nothing in it is unknown to Canal's types and that it is canonical).
func canalRowDatas(t *testing.T, value []byte) (*canalpb.Header, []*canalpb.RowData) {
	t.Helper()
	e, rc := decodeCanal(t, value)
	return e.GetHeader(), rc.GetRowDatas()
}

// TestGroupKeepsPartitions: grouped, canal-protobuf's rows of one event go one message
// per partition, keyed by the group's first row, and every row lands on the partition
// it lands on alone, after the same rows as alone: the messages of each partition carry
// the RowDatas of the per-row messages of that partition, in the same order, under the
// same header. A group of one row is the row's own message.
func TestGroupKeepsPartitions(t *testing.T) {
	f, err := NewFormat(FormatCanalProtobuf, nil)
	require.NoError(t, err)
	for _, typ := range []string{TypeInsert, TypeUpdate, TypeDelete, TypeSnapshot} {
		for _, n := range []int{1, 3, 7} {
			t.Run(fmt.Sprintf("%s/%d-partitions", typ, n), func(t *testing.T) {
				ev := groupEvent(typ)
				partition := kafkaPartition(n)
				var e Encoder
				alone := encodeCopy(t, &e, ev, []Target{{By: PartitionPK, Format: f}}, nil)
				grouped := encodeCopy(t, &e, ev, []Target{{By: PartitionPK, Format: f, Partition: partition}}, nil)

				want := map[int][]*canalpb.RowData{} // each partition's rows, alone
				var header *canalpb.Header
				for _, m := range alone {
					require.Equal(t, 1, m.Rows)
					h, rds := canalRowDatas(t, m.Value)
					require.Len(t, rds, 1)
					header = h
					p, _ := partition(m.Key)
					want[p] = append(want[p], rds[0])
				}
				got := map[int][]*canalpb.RowData{}
				rows := 0
				for _, m := range grouped {
					h, rds := canalRowDatas(t, m.Value)
					require.True(t, proto.Equal(header, h), "a group's header is its rows'")
					require.Len(t, rds, m.Rows)
					p, _ := partition(m.Key)
					got[p] = append(got[p], rds...)
					rows += m.Rows
					if m.Rows == 1 {
						require.Contains(t, alone, m, "a group of one row is its own message")
					}
				}
				require.Equal(t, len(alone), rows, "every row in a group")
				require.Len(t, grouped, len(want), "one message per partition")
				for p, rds := range want {
					require.Len(t, got[p], len(rds), "partition %d", p)
					for i := range rds {
						require.True(t, proto.Equal(rds[i], got[p][i]), "partition %d row %d", p, i)
					}
				}
			})
		}
	}
}

// TestGroupBytes: a group holds at most GroupBytes (key and value); the partition's next
// rows start another group, after it, keeping the rows' order; a row larger than the
// bound is a message of its own.
func TestGroupBytes(t *testing.T) {
	f, _ := NewFormat(FormatCanalProtobuf, nil)
	ev := groupEvent(TypeInsert)
	var e Encoder
	alone := encodeCopy(t, &e, ev, []Target{{By: PartitionTable, Format: f}}, nil)
	for _, bound := range []int{1, 600, 2000, 5000} {
		grouped := encodeCopy(t, &e, ev, []Target{{By: PartitionTable, Format: f, Partition: kafkaPartition(3), GroupBytes: bound}}, nil)
		var rds []*canalpb.RowData
		for _, m := range grouped {
			if m.Rows > 1 {
				require.LessOrEqual(t, len(m.Key)+len(m.Value), bound)
			}
			require.Equal(t, alone[0].Key, m.Key, "by table: one key")
			_, r := canalRowDatas(t, m.Value)
			rds = append(rds, r...)
		}
		require.Len(t, rds, len(alone), "bound %d", bound)
		for i, m := range alone {
			_, r := canalRowDatas(t, m.Value)
			require.True(t, proto.Equal(r[0], rds[i]), "bound %d row %d in order", bound, i)
		}
		switch bound {
		case 1:
			require.Equal(t, alone, grouped, "every row alone")
		case 5000:
			require.Less(t, len(grouped), len(alone)/5)
		}
	}
}

// TestGroupFallsBack: while the partitions are not known, or the format does not group,
// the messages are the per-row ones, byte for byte; and the Partition is asked once per
// event when it does not know.
func TestGroupFallsBack(t *testing.T) {
	defer func(f func() time.Time) { wallNow = f }(wallNow)
	wallNow = func() time.Time { return time.UnixMilli(1764583873123) }
	ev := groupEvent(TypeUpdate)
	for _, name := range FormatNames() {
		f, _ := NewFormat(name, nil)
		var e Encoder
		alone := encodeCopy(t, &e, ev, []Target{{By: PartitionPK, Format: f}}, nil)
		asked := 0
		unknown := func([]byte) (int, bool) { asked++; return 0, false }
		require.Equal(t, alone, encodeCopy(t, &e, ev, []Target{{By: PartitionPK, Format: f, Partition: unknown}}, nil), name)
		if _, ok := f.(GroupFormat); ok {
			require.Equal(t, 1, asked, name)
		} else {
			require.Zero(t, asked, "%s does not group", name)
			require.Equal(t, alone, encodeCopy(t, &e, ev, []Target{{By: PartitionPK, Format: f, Partition: kafkaPartition(3)}}, nil), name)
		}
	}
}

// TestGroupTargets: targets of one grouping format share the rows' encoding, each
// grouped by its own keys; another format's target beside them is unchanged; keep sees
// each group with its first row's key and can drop it.
func TestGroupTargets(t *testing.T) {
	cp, _ := NewFormat(FormatCanalProtobuf, nil)
	ev := groupEvent(TypeInsert)
	var e Encoder
	json := encodeCopy(t, &e, ev, []Target{{By: PartitionPK}}, nil)
	byTable := encodeCopy(t, &e, ev, []Target{{By: PartitionTable, Format: cp, Partition: kafkaPartition(3)}}, nil)
	byPK := encodeCopy(t, &e, ev, []Target{{By: PartitionPK, Format: cp, Partition: kafkaPartition(3)}}, nil)
	require.Len(t, byTable, 1)
	require.Equal(t, len(json), byTable[0].Rows)

	var kept []string
	keep := func(_ *Event, key, value []byte, _ Meta) (bool, error) {
		kept = append(kept, string(key))
		return !bytes.HasPrefix(value, []byte("{")) || len(kept)%2 == 0, nil // drops every other json row
	}
	all := encodeCopy(t, &e, ev, []Target{{By: PartitionPK}, {By: PartitionTable, Format: cp, Partition: kafkaPartition(3)},
		{By: PartitionPK, Format: cp, Partition: kafkaPartition(3)}}, keep)
	var gotJSON, gotTable, gotPK []Message
	for _, m := range all {
		switch m.By {
		case 0:
			gotJSON = append(gotJSON, m)
		case 1:
			gotTable = append(gotTable, m)
		case 2:
			gotPK = append(gotPK, m)
		}
	}
	require.Len(t, gotJSON, len(json)/2)
	for i, m := range gotJSON {
		m.By = 0
		require.Equal(t, json[2*i+1], m)
	}
	for i := range gotTable {
		gotTable[i].By = 0
	}
	for i := range gotPK {
		gotPK[i].By = 0
	}
	require.Equal(t, byTable, gotTable)
	require.Equal(t, byPK, gotPK)
	require.Len(t, kept, len(json)+len(byTable)+len(byPK))
}
