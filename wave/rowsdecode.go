package wave

import "github.com/go-mysql-org/go-mysql/replication"

// maxBareTables bounds rowsDecoder's memory: table ids grow with every ALTER and FLUSH
// TABLES, so past this many it forgets them all and starts over.
const maxBareTables = 4096

// rowsDecoder decodes rows events as go-mysql does, but against a copy of the table map
// without its signedness bitmap: go-mysql turns that bitmap into a new map for every row
// it decodes (5% of the wave's CPU at full speed), while EncodeRow reads signedness from
// its own Column.Unsigned and reinterprets the signed values go-mysql then gives
// (appendInt). It runs on go-mysql's parser goroutine, one per syncer, as the syncer's
// RowsEventDecodeFunc; nothing else touches it.
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

// decode is replication.RowsEvent.Decode with the bare table map swapped in for
// DecodeData and the original put back after it.
func (d *rowsDecoder) decode(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	if tm := e.Table; tm != nil && len(tm.SignednessBitmap) > 0 {
		e.Table = d.bareOf(tm)
		defer func() { e.Table = tm }()
	}
	return e.DecodeData(pos, data)
}

func (d *rowsDecoder) bareOf(tm *replication.TableMapEvent) *replication.TableMapEvent {
	if b, ok := d.bare[tm.TableID]; ok && b.orig == tm {
		return b.bare
	}
	if len(d.bare) >= maxBareTables {
		clear(d.bare)
	}
	// Only the fields row decoding reads, not a copy of the whole event: go-mysql fills
	// caches inside a TableMapEvent lazily (ColumnNameString), and the capture calls
	// those on its own goroutine while this one decodes.
	bare := &replication.TableMapEvent{TableID: tm.TableID, Flags: tm.Flags, Schema: tm.Schema, Table: tm.Table,
		ColumnCount: tm.ColumnCount, ColumnType: tm.ColumnType, ColumnMeta: tm.ColumnMeta, NullBitmap: tm.NullBitmap}
	d.bare[tm.TableID] = bareTable{orig: tm, bare: bare}
	return bare
}
