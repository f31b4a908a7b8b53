package rowenc

import (
	"slices"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// maxBareTables bounds rowsDecoder's memory: table ids grow with every ALTER and FLUSH
// TABLES, so past this many it forgets them all and starts over.
const maxBareTables = 4096

// undecoded is what the syncer's rows-event decoder (DecodeHeader) leaves in a
// RowsEvent's Rows, as its one row's one value: the event's bytes and where its rows
// begin. The capture then reads the rows in place (rowimage.go) or has go-mysql decode
// them (rowsDecoder.decodeRows); rows of tables nobody subscribed to are never decoded.
type undecoded struct {
	data []byte
	pos  int
}

// DecodeHeader is the syncer's RowsEventDecodeFunc: go-mysql parses the event's header
// (table id, table map, column bitmaps) and leaves the rows undecoded.
func DecodeHeader(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	e.Rows = [][]any{{&undecoded{data: data, pos: pos}}}
	return nil
}

// undecodedOf is the event's rows as DecodeHeader left them, or false when they were
// decoded already.
func undecodedOf(e *replication.RowsEvent) (*undecoded, bool) {
	if len(e.Rows) != 1 || len(e.Rows[0]) != 1 {
		return nil, false
	}
	u, ok := e.Rows[0][0].(*undecoded)
	return u, ok
}

// rowsDecoder decodes the rows of events the capture does not read in place, as go-mysql
// does, but against a copy of the table map (a bare one) without its signedness bitmap,
// and with its DATETIME columns posing as integers:
//
//   - go-mysql turns the signedness bitmap into a new map for every row it decodes,
//     while EncodeRow reads signedness from its own Column.Unsigned and reinterprets the
//     signed values go-mysql then gives (appendInt);
//   - with ParseTime on (the capture's syncer: a TIMESTAMP as a time.Time, not formatted
//     with time.Format) go-mysql builds a DATETIME's time.Time with time.Date, which
//     moves a date stored under ALLOW_INVALID_DATES (2024-02-30) into the next month,
//     and off it formats every DATETIME with fmt.Sprintf. So a DATETIME2 column poses as
//     a BIT of its width (go-mysql hands over its bytes, big-endian, as an int64) and a
//     DATETIME as a BIGINT (its packed decimal digits): EncodeRow writes the date and
//     clock from them as stored, as the rows read in place do (appendPackedDatetime).
//
// It belongs to one capture session's goroutine.
type rowsDecoder struct {
	bare map[uint64]bareTable
}

// bareTable is a table map and its copy without signedness.
type bareTable struct {
	orig, bare *replication.TableMapEvent
}

func newRowsDecoder() *rowsDecoder {
	return &rowsDecoder{bare: map[uint64]bareTable{}}
}

// decodeRows is the rest of replication.RowsEvent.Decode after DecodeHeader, with the
// bare table map swapped in and the original put back after it.
func (d *rowsDecoder) decodeRows(e *replication.RowsEvent, u *undecoded) error {
	e.Rows = nil
	if tm := e.Table; tm != nil {
		if bare := d.bareOf(tm); bare != tm {
			e.Table = bare
			defer func() { e.Table = tm }()
		}
	}
	return e.DecodeData(u.pos, u.data)
}

// bareOf is tm's bare copy, or tm itself when it has no signedness bitmap and no
// DATETIME column.
func (d *rowsDecoder) bareOf(tm *replication.TableMapEvent) *replication.TableMapEvent {
	if b, ok := d.bare[tm.TableID]; ok && b.orig == tm {
		return b.bare
	}
	if len(d.bare) >= maxBareTables {
		clear(d.bare)
	}
	types, meta := packedDatetimes(tm)
	bare := tm
	if len(tm.SignednessBitmap) > 0 || types != nil {
		if types == nil {
			types, meta = tm.ColumnType, tm.ColumnMeta
		}
		// Only the fields row decoding reads, not a copy of the whole event: go-mysql
		// fills caches inside a TableMapEvent lazily (ColumnNameString), and the
		// syncer's parser goroutine reads the original while the capture decodes.
		bare = &replication.TableMapEvent{TableID: tm.TableID, Flags: tm.Flags, Schema: tm.Schema, Table: tm.Table,
			ColumnCount: tm.ColumnCount, ColumnType: types, ColumnMeta: meta, NullBitmap: tm.NullBitmap}
	}
	d.bare[tm.TableID] = bareTable{orig: tm, bare: bare}
	return bare
}

// packedDatetimes is tm's column types and metadata with each DATETIME2 column a BIT of
// the DATETIME2's width and each DATETIME a BIGINT (rowsDecoder), or nil when tm has
// neither.
func packedDatetimes(tm *replication.TableMapEvent) (types []byte, meta []uint16) {
	for i, tp := range tm.ColumnType {
		if i >= len(tm.ColumnMeta) {
			break
		}
		var asType byte
		var asMeta uint16
		switch {
		case tp == mysql.MYSQL_TYPE_DATETIME2 && tm.ColumnMeta[i] <= 6: // 5 to 8 bytes
			asType, asMeta = mysql.MYSQL_TYPE_BIT, uint16(datetime2Width(uint8(tm.ColumnMeta[i])))<<8
		case tp == mysql.MYSQL_TYPE_DATETIME:
			asType = mysql.MYSQL_TYPE_LONGLONG
		default:
			continue
		}
		if types == nil {
			types, meta = slices.Clone(tm.ColumnType), slices.Clone(tm.ColumnMeta)
		}
		types[i], meta[i] = asType, asMeta
	}
	return types, meta
}
