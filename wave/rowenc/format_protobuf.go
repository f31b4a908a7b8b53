package rowenc

import (
	"fmt"
	"sync"
)

// The two protobuf formats in the registry (format.go): `protobuf`, BinLake's own row
// message (protobuf.go), and `canal-protobuf`, Canal's Kafka message (canalpb.go).

// Names of the protobuf formats, as subscriptions spell them.
const (
	FormatProtobuf      = "protobuf"
	FormatCanalProtobuf = "canal-protobuf"
)

func init() {
	RegisterFormat(FormatProtobuf, func(opts map[string]string) (Format, error) {
		if _, err := ParseFormatOptions(FormatProtobuf, opts, nil); err != nil {
			return nil, err
		}
		return protobufFormat{}, nil
	})
	RegisterFormat(FormatCanalProtobuf, func(opts map[string]string) (Format, error) {
		if _, err := ParseFormatOptions(FormatCanalProtobuf, opts, nil); err != nil {
			return nil, err
		}
		return canalProtobufFormat{}, nil
	})
}

// rowScratch is the buffers a row is rendered with in the protobuf formats. A Format is
// a comparable value that many encoders share, so it keeps none of its own: the Encoder
// hands its own over in the Row (Row.scratch), and a Row made elsewhere gets one from a
// pool.
type rowScratch struct {
	typed typedScratch
	canal canalScratch
}

var rowScratchPool = sync.Pool{New: func() any { return new(rowScratch) }}

// rowImages is the row images r reads, of whichever kind the event was decoded into.
func rowImages(r *Row) (*Rows, error) {
	rows := r.After.rows
	if rows == nil {
		rows = r.Before.rows
	}
	if rows == nil {
		return nil, fmt.Errorf("%s.%s: a row with no image", r.Table.Database, r.Table.Name)
	}
	return rows, nil
}

type protobufFormat struct{}

func (protobufFormat) Name() string     { return FormatProtobuf }
func (protobufFormat) Tombstones() bool { return false }

func (protobufFormat) AppendRow(dst []byte, r *Row) ([]byte, error) {
	rows, err := rowImages(r)
	if err != nil {
		return dst, err
	}
	t := r.Table
	rs := r.scratch
	if rs == nil {
		rs = rowScratchPool.Get().(*rowScratch)
		defer rowScratchPool.Put(rs)
	}
	s := &rs.typed
	dst = appendPBHead(dst, s, t, r.Type, r.Meta)
	dst = appendPBCommit(dst, r.Meta)
	switch {
	case rows.raw != nil:
		return encodePBRow(dst, s, t, imageAt(rows.raw, r.Before), imageAt(rows.raw, r.After))
	case rows.query != nil:
		return encodePBRow(dst, s, t, imageAt(rows.query, r.Before), imageAt(rows.query, r.After))
	default:
		return encodePBRow(dst, s, t, imageAt(rows.rows, r.Before), imageAt(rows.rows, r.After))
	}
}

func (protobufFormat) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) {
	return EncodeDDLProto(dst, d.Database, d.Table, d.Meta, d.SQL), true, nil
}

type canalProtobufFormat struct{}

func (canalProtobufFormat) Name() string     { return FormatCanalProtobuf }
func (canalProtobufFormat) Tombstones() bool { return false }

func (canalProtobufFormat) AppendRow(dst []byte, r *Row) ([]byte, error) {
	return withCanalScratch(dst, r, encodeCanalRow)
}

// AppendRowPart appends the row's RowData (GroupFormat): Canal's producer puts the rows
// of a rows event that go to one partition in one Entry, as BinLake's groups do.
func (canalProtobufFormat) AppendRowPart(dst []byte, r *Row) ([]byte, error) {
	return withCanalScratch(dst, r, appendCanalRowData)
}

// withCanalScratch checks r's images, then appends with enc and the row's scratch: the
// Encoder's, or one from the pool for a Row made elsewhere.
func withCanalScratch(dst []byte, r *Row, enc func([]byte, *canalScratch, *Row) ([]byte, error)) ([]byte, error) {
	if _, err := rowImages(r); err != nil {
		return dst, err
	}
	s := r.scratch
	if s == nil {
		s = rowScratchPool.Get().(*rowScratch)
		defer rowScratchPool.Put(s)
	}
	return enc(dst, &s.canal, r)
}

// AppendGroupHead appends the Packet, Entry and RowChange before the rows' RowDatas.
func (canalProtobufFormat) AppendGroupHead(dst []byte, r *Row, n int) []byte {
	s := r.scratch
	if s == nil {
		s = rowScratchPool.Get().(*rowScratch)
		defer rowScratchPool.Put(s)
	}
	return appendCanalRowsHead(dst, &s.canal, r, n)
}

func (canalProtobufFormat) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) {
	return EncodeDDLCanal(dst, d.Database, d.Table, d.Meta, d.SQL), true, nil
}
