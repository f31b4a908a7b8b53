package rowenc

import "github.com/go-mysql-org/go-mysql/replication"

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
// does, but against a copy of the table map without its signedness bitmap: go-mysql
// turns that bitmap into a new map for every row it decodes, while EncodeRow reads
// signedness from its own Column.Unsigned and reinterprets the signed values go-mysql
// then gives (appendInt). It belongs to one capture session's goroutine.
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
	if tm := e.Table; tm != nil && len(tm.SignednessBitmap) > 0 {
		e.Table = d.bareOf(tm)
		defer func() { e.Table = tm }()
	}
	return e.DecodeData(u.pos, u.data)
}

func (d *rowsDecoder) bareOf(tm *replication.TableMapEvent) *replication.TableMapEvent {
	if b, ok := d.bare[tm.TableID]; ok && b.orig == tm {
		return b.bare
	}
	if len(d.bare) >= maxBareTables {
		clear(d.bare)
	}
	// Only the fields row decoding reads, not a copy of the whole event: go-mysql fills
	// caches inside a TableMapEvent lazily (ColumnNameString), and the syncer's parser
	// goroutine reads the original while the capture decodes.
	bare := &replication.TableMapEvent{TableID: tm.TableID, Flags: tm.Flags, Schema: tm.Schema, Table: tm.Table,
		ColumnCount: tm.ColumnCount, ColumnType: tm.ColumnType, ColumnMeta: tm.ColumnMeta, NullBitmap: tm.NullBitmap}
	d.bare[tm.TableID] = bareTable{orig: tm, bare: bare}
	return bare
}
