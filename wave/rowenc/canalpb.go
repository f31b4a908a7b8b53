package rowenc

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/binlake/binlake/internal/jsonenc"
)

// The `canal-protobuf` format: what Canal 1.1.7's Kafka producer writes with
// flatMessage=false (CanalMessageSerializerUtil with filterTransactionEntry, its
// default): a CanalPacket.Packet of type MESSAGES whose body is a Messages holding
// CanalEntry.Entry bytes, each a ROWDATA entry whose storeValue is a RowChange
// (proto/canal/canal.proto; Go types in wave/rowenc/canalpb). Canal puts a batch of
// entries in one Kafka message; BinLake puts one row's entry in each, keyed as every
// format is, so that a row's changes stay in order on one partition (Canal's client
// reads a message of one entry as a batch of one). Canal's own Java client
// (KafkaCanalConnector) reads it.
//
// An insert carries its row in afterColumns, every column updated=true; a delete in
// beforeColumns; an update both, the changed after columns updated=true (changed as
// Canal decides it: the rendered values differ). A snapshot row comes as an INSERT (Canal
// has no snapshot in its stream). A DDL is an entry whose RowChange has isDdl=true, the
// statement in sql, and the event type its head names (CREATE, ALTER, ERASE, RENAME,
// TRUNCATE, CINDEX, DINDEX, else QUERY). The header carries the binlog file, the
// position the json format's pos carries (after the event; Canal writes the event's
// start), the execute time in milliseconds, schema, table and event type, and the
// transaction's GTID (Canal writes the executed GTID set there, and the transaction's
// GTID in the curtGtid property; BinLake has the GTID only). Each column's value,
// sqlType and mysqlType are canal-json's (format_canaljson.go), so both Canal formats
// carry the same text.

// Field numbers of Canal's messages (proto/canal/canal.proto).
const (
	cpPacketVersion protowire.Number = 2
	cpPacketType    protowire.Number = 3
	cpPacketBody    protowire.Number = 5
	cpMessagesItem  protowire.Number = 2

	cpEntryHeader     protowire.Number = 1
	cpEntryType       protowire.Number = 2
	cpEntryStoreValue protowire.Number = 3

	cpHeaderVersion      protowire.Number = 1
	cpHeaderLogfileName  protowire.Number = 2
	cpHeaderLogfileOff   protowire.Number = 3
	cpHeaderServerenCode protowire.Number = 5
	cpHeaderExecuteTime  protowire.Number = 6
	cpHeaderSourceType   protowire.Number = 7
	cpHeaderSchemaName   protowire.Number = 8
	cpHeaderTableName    protowire.Number = 9
	cpHeaderEventType    protowire.Number = 11
	cpHeaderGTID         protowire.Number = 13

	cpRowChangeTableID   protowire.Number = 1
	cpRowChangeEventType protowire.Number = 2
	cpRowChangeIsDdl     protowire.Number = 10
	cpRowChangeSQL       protowire.Number = 11
	cpRowChangeRowDatas  protowire.Number = 12
	cpRowChangeDdlSchema protowire.Number = 14

	cpRowDataBefore protowire.Number = 1
	cpRowDataAfter  protowire.Number = 2

	cpColumnIndex     protowire.Number = 1
	cpColumnSQLType   protowire.Number = 2
	cpColumnName      protowire.Number = 3
	cpColumnIsKey     protowire.Number = 4
	cpColumnUpdated   protowire.Number = 5
	cpColumnIsNull    protowire.Number = 6
	cpColumnValue     protowire.Number = 8
	cpColumnMySQLType protowire.Number = 10
)

// Enum values of Canal's messages.
const (
	cpPacketMessages = 7 // PacketType.MESSAGES
	cpEntryRowData   = 2 // EntryType.ROWDATA
	cpSourceMySQL    = 2 // Type.MYSQL

	cpEventInsert   = 1
	cpEventUpdate   = 2
	cpEventDelete   = 3
	cpEventCreate   = 4
	cpEventAlter    = 5
	cpEventErase    = 6
	cpEventQuery    = 7
	cpEventTruncate = 8
	cpEventRename   = 9
	cpEventCIndex   = 10
	cpEventDIndex   = 11
)

// canalScratch is what a canal-protobuf row is rendered with: the canal-json rendering
// of the column being written (tok) and of an update's before value it is compared with
// (before).
type canalScratch struct {
	tok, before []byte
	after       []byte // an update's after value rendered, to compare (canalChanged)
	part        []byte // a row's RowData, before its message's head (encodeCanalRow)

	head     []byte // the header of the last row encoded with it (canalHead)
	headT    *Table
	headType string
	headMeta Meta
}

// appendPBVarintAlways appends a varint field even when it is 0: a member of a oneof
// (Canal's "present" fields) is written whenever it is set.
func appendPBVarintAlways(dst []byte, num protowire.Number, v uint64) []byte {
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

// appendPBBool appends a bool field that is true (proto3 leaves false out).
func appendPBBool(dst []byte, num protowire.Number, b bool) []byte {
	if !b {
		return dst
	}
	return appendPBVarintAlways(dst, num, 1)
}

// canalEvent is Canal's EventType of a row message type.
func canalEvent(typ string) uint64 {
	switch typ {
	case TypeUpdate:
		return cpEventUpdate
	case TypeDelete:
		return cpEventDelete
	}
	return cpEventInsert // insert and snapshot
}

// appendCanalPacketStart opens a Packet of one Entry and writes the Entry's header
// (appendCanalHeader): the caller writes the rest of the Entry and closes all with
// appendCanalPacketEnd.
func appendCanalPacketStart(dst, head []byte) ([]byte, [2]pbLen) {
	var open [2]pbLen
	dst = appendPBVarintAlways(dst, cpPacketVersion, 1)
	dst = appendPBVarintAlways(dst, cpPacketType, cpPacketMessages)
	dst, open[0] = pbBegin(dst, cpPacketBody, 2)
	dst, open[1] = pbBegin(dst, cpMessagesItem, 2)
	dst = append(dst, head...)
	return appendPBVarintAlways(dst, cpEntryType, cpEntryRowData), open
}

// appendCanalRowsHead appends a row message's bytes up to its RowChange's rowDatas, for
// rowDatas fields of n bytes in all: a Packet of one Entry (header, entryType and a
// RowChange of tableId, eventType, isDdl and the rowDatas, which end the message). Its
// lengths are known beforehand, so it is written in one go: the rows of a group are
// encoded before it (AppendRowPart), then copied after it.
func appendCanalRowsHead(dst []byte, s *canalScratch, r *Row, n int) []byte {
	t := r.Table
	event := canalEvent(r.Type)
	head := s.canalHead(t, r.Type, r.Meta)
	var fields [40]byte // the Entry's entryType, and the RowChange's fields before its rowDatas
	entryType := appendPBVarintAlways(fields[:0], cpEntryType, cpEntryRowData)
	rc := entryType[len(entryType):]
	if t.tm != nil {
		rc = appendPBVarint(rc, cpRowChangeTableID, t.tm.TableID)
	}
	rc = appendPBVarintAlways(rc, cpRowChangeEventType, event)
	rc = appendPBVarintAlways(rc, cpRowChangeIsDdl, 0)
	rcLen := len(rc) + n
	entryLen := len(head) + len(entryType) + protowire.SizeTag(cpEntryStoreValue) + protowire.SizeBytes(rcLen)
	bodyLen := protowire.SizeTag(cpMessagesItem) + protowire.SizeBytes(entryLen)
	dst = appendPBVarintAlways(dst, cpPacketVersion, 1)
	dst = appendPBVarintAlways(dst, cpPacketType, cpPacketMessages)
	dst = protowire.AppendTag(dst, cpPacketBody, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(bodyLen))
	dst = protowire.AppendTag(dst, cpMessagesItem, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(entryLen))
	dst = append(dst, head...)
	dst = append(dst, entryType...)
	dst = protowire.AppendTag(dst, cpEntryStoreValue, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(rcLen))
	return append(dst, rc...)
}

// appendCanalHeader appends an Entry's header field.
func appendCanalHeader(dst []byte, db, table string, event uint64, m Meta) []byte {
	dst, hdr := pbBegin(dst, cpEntryHeader, 1)
	dst = appendPBVarintAlways(dst, cpHeaderVersion, 1)
	dst = appendPBString(dst, cpHeaderLogfileName, m.File)
	dst = appendPBVarint(dst, cpHeaderLogfileOff, uint64(m.Pos))
	dst = appendPBString(dst, cpHeaderServerenCode, "UTF-8")
	dst = appendPBVarint(dst, cpHeaderExecuteTime, uint64(m.TS*1000))
	dst = appendPBVarintAlways(dst, cpHeaderSourceType, cpSourceMySQL)
	dst = appendPBString(dst, cpHeaderSchemaName, db)
	dst = appendPBString(dst, cpHeaderTableName, table)
	dst = appendPBVarintAlways(dst, cpHeaderEventType, event)
	dst = appendPBString(dst, cpHeaderGTID, m.GTID)
	return pbEnd(dst, hdr)
}

// canalHead is s's header of a row of t, made again only when the last row encoded with
// s had another one (the rows of an event share theirs: commit and xid are not in it).
func (s *canalScratch) canalHead(t *Table, typ string, m Meta) []byte {
	m.Commit, m.XID = false, 0
	if s.headT != t || s.headType != typ || s.headMeta != m || s.head == nil {
		s.head = appendCanalHeader(s.head[:0], t.Database, t.Name, canalEvent(typ), m)
		s.headT, s.headType, s.headMeta = t, typ, m
	}
	return s.head
}

func appendCanalPacketEnd(dst []byte, open [2]pbLen) []byte {
	return pbEnd(pbEnd(dst, open[1]), open[0])
}

// encodeCanalRow appends the canal-protobuf message of one row change: the head of a
// group of one row, then its RowData.
func encodeCanalRow(dst []byte, s *canalScratch, r *Row) ([]byte, error) {
	part, err := appendCanalRowData(s.part[:0], s, r)
	s.part = part
	if err != nil {
		return dst, err
	}
	dst = appendCanalRowsHead(dst, s, r, len(part))
	return append(dst, part...), nil
}

// appendCanalRowData appends one row change as a RowChange's rowDatas field: its before
// columns, after columns, or both.
func appendCanalRowData(dst []byte, s *canalScratch, r *Row) ([]byte, error) {
	cols := r.Table.canalCols
	if cols == nil {
		cols = canalColumnFields(r.Table) // an unprepared table (tests)
	}
	dst, rd := pbBegin(dst, cpRowChangeRowDatas, 2)
	var err error
	if !r.Before.IsNil() {
		if dst, err = appendCanalColumns(dst, s, r, cols, cpRowDataBefore, r.Before); err != nil {
			return dst, err
		}
	}
	if !r.After.IsNil() {
		if dst, err = appendCanalColumns(dst, s, r, cols, cpRowDataAfter, r.After); err != nil {
			return dst, err
		}
	}
	return pbEnd(dst, rd), nil
}

// appendCanalColumns appends every column of image as Columns in field num (before or
// after). The values are canal-json's (appendCanalValue, canalSQLType), so that both
// Canal formats carry the same text; the kinds whose text is the field's own formatting
// are written straight from it (appendCanalDirect), the others rendered
// (appendCanalColumnRendered).
func appendCanalColumns(dst []byte, s *canalScratch, r *Row, cols []canalColumnField, num protowire.Number, image Image) ([]byte, error) {
	t := r.Table
	isAfter := num == cpRowDataAfter
	for i := range t.Columns {
		c := &t.Columns[i]
		tok, v, ok, err := appendCanalDirect(s.tok[:0], image, c, &cols[i], i)
		s.tok = tok
		switch {
		case err != nil:
			return dst, err
		case !ok:
			if dst, err = appendCanalColumnRendered(dst, s, r, cols, num, i, image); err != nil {
				return dst, err
			}
			continue
		}
		updated := isAfter
		if isAfter && !r.Before.IsNil() {
			if updated, err = canalChanged(s, r, c, &cols[i], i, v); err != nil {
				return dst, err
			}
		}
		dst = appendCanalColumn(dst, num, &cols[i], i, c, v, updated)
	}
	return dst, nil
}

// canalChanged reports whether column i of an update changed, as Canal's isUpdate
// decides it: its canal-json values differ. after is the after value, written directly;
// when both values' texts are their fields' own bytes, comparing the texts is comparing
// the values (not so for text that is not valid UTF-8: canal-json writes an invalid
// byte as an escaped U+FFFD, distinct from a U+FFFD in the text), else both values are
// rendered and compared as appendCanalColumnRendered does.
func canalChanged(s *canalScratch, r *Row, c *Column, cf *canalColumnField, i int, after canalText) (bool, error) {
	before, b, ok, err := appendCanalDirect(s.before[:0], r.Before, c, cf, i)
	s.before = before
	if err != nil {
		return false, err
	}
	if ok && b.exact && after.exact {
		return b.null != after.null || string(b.text) != string(after.text), nil
	}
	if s.before, err = appendCanalValue(s.before[:0], r.Before, i); err != nil {
		return false, err
	}
	if s.after, err = appendCanalValue(s.after[:0], r.After, i); err != nil {
		return false, err
	}
	return string(s.before) != string(s.after), nil
}

// appendCanalColumn appends one Column in field num: the column's constant fields
// (cf), whether it was updated, and its value.
func appendCanalColumn(dst []byte, num protowire.Number, cf *canalColumnField, i int, c *Column, v canalText, updated bool) []byte {
	var col pbLen
	dst, col = pbBegin(dst, num, 1)
	if v.sqlType == cf.sqlType {
		dst = append(dst, cf.head...)
	} else { // an unsigned value beyond the signed range
		dst = appendCanalColumnHead(dst, i, v.sqlType, c)
	}
	// Single-byte tags, written as bytes: this is per column and row.
	if updated {
		dst = append(dst, byte(cpColumnUpdated)<<3|byte(protowire.VarintType), 1)
	}
	dst = append(dst, byte(cpColumnIsNull)<<3|byte(protowire.VarintType), byte(protowire.EncodeBool(v.null)))
	switch n := len(v.text); {
	case n == 0: // an empty text is no field at all (proto3)
	case n < 0x80:
		dst = append(append(dst, byte(cpColumnValue)<<3|byte(protowire.BytesType), byte(n)), v.text...)
	default:
		dst = protowire.AppendTag(dst, cpColumnValue, protowire.BytesType)
		dst = protowire.AppendBytes(dst, v.text)
	}
	dst = append(dst, cf.mysqlType...)
	return pbEnd(dst, col)
}

// appendCanalColumnRendered appends column i of image as a Column in field num, its
// value rendered as canal-json's and unquoted into the message. In the after image, a
// column is updated when there is no before image (an insert) or its value differs from
// before's, as Canal's isUpdate decides.
func appendCanalColumnRendered(dst []byte, s *canalScratch, r *Row, cols []canalColumnField, num protowire.Number, i int, image Image) ([]byte, error) {
	isAfter := num == cpRowDataAfter
	c := &r.Table.Columns[i]
	// A JSON column's canal-json value is its json rendering quoted as a JSON
	// string, whose text is that rendering itself (made valid UTF-8): taken as it
	// is, without quoting and unquoting it, but where an update's after value is
	// compared with the before value's canal-json rendering.
	docText := cols[i].json && !(isAfter && !r.Before.IsNil())
	var tok []byte
	var err error
	if docText {
		tok, err = image.AppendJSON(s.tok[:0], i)
	} else {
		tok, err = appendCanalValue(s.tok[:0], image, i)
	}
	s.tok = tok
	if err != nil {
		return dst, err
	}
	isNull := image.isSQLNull(i, tok)
	updated := false
	if isAfter {
		updated = true
		if !r.Before.IsNil() {
			before, err := appendCanalValue(s.before[:0], r.Before, i)
			s.before = before
			if err != nil {
				return dst, err
			}
			updated = string(before) != string(tok)
		}
	}
	var col pbLen
	dst, col = pbBegin(dst, num, 1)
	if sqlType := canalSQLTypeOf(c, tok); sqlType == cols[i].sqlType {
		dst = append(dst, cols[i].head...)
	} else { // an unsigned value beyond the signed range
		dst = appendCanalColumnHead(dst, i, sqlType, c)
	}
	dst = appendPBBool(dst, cpColumnUpdated, updated)
	dst = appendPBVarintAlways(dst, cpColumnIsNull, protowire.EncodeBool(isNull))
	if !isNull {
		// The text is unquoted straight into the message, its length patched in
		// after it (pbEnd); an empty text is no field at all (proto3).
		tag := len(dst)
		var l pbLen
		dst, l = pbBegin(dst, cpColumnValue, protowire.SizeVarint(uint64(len(tok))))
		body := len(dst)
		ok := true
		if docText {
			dst = appendValidUTF8(dst, tok)
		} else {
			dst, ok = jsonenc.AppendUnquoted(dst, tok)
		}
		switch {
		case !ok:
			return dst, fmt.Errorf("column %s: canal value %.40s is not a JSON string", c.Name, tok)
		case len(dst) == body:
			dst = dst[:tag]
		default:
			dst = pbEnd(dst, l)
		}
	}
	dst = append(dst, cols[i].mysqlType...)
	return pbEnd(dst, col), nil
}

// canalColumnField is a column's Column fields that are the same in every row: its
// encoded index, sqlType, name and isKey (head; sqlType is the column's unless an
// unsigned value is beyond the signed range: canalSQLTypeOf) and mysqlType
// (canal-json's, appendCanalMySQLType).
type canalColumnField struct {
	head      []byte
	sqlType   int
	mysqlType []byte
	kind      valueKind // kindOf the column
	json      bool      // a JSON column (kindJSON)
}

// appendCanalColumnHead appends a Column's fields 1 to 4: index, sqlType, name, isKey.
func appendCanalColumnHead(dst []byte, i, sqlType int, c *Column) []byte {
	dst = appendPBVarint(dst, cpColumnIndex, uint64(i))
	dst = appendPBVarint(dst, cpColumnSQLType, uint64(int64(sqlType))) // int32: negative as ten bytes
	dst = appendPBString(dst, cpColumnName, c.Name)
	return appendPBBool(dst, cpColumnIsKey, c.PK)
}

// canalColumnFields is each column's canalColumnField, for Table.Prepare to keep: a row
// copies them.
func canalColumnFields(t *Table) []canalColumnField {
	cols := make([]canalColumnField, len(t.Columns))
	var tok, text []byte
	for i := range t.Columns {
		tok = appendCanalMySQLType(tok[:0], &t.Columns[i])
		text, _ = jsonenc.AppendUnquoted(text[:0], tok)
		c := &t.Columns[i]
		sqlType := canalSQLTypeOf(c, nil)
		cols[i] = canalColumnField{head: appendCanalColumnHead(nil, i, sqlType, c), sqlType: sqlType, kind: kindOf(c), json: kindOf(c) == kindJSON,
			mysqlType: appendPBString(nil, cpColumnMySQLType, string(text))}
	}
	return cols
}

// EncodeDDLCanal appends the canal-protobuf message of a DDL statement: an entry whose
// RowChange says isDdl, with the statement and its event type.
func EncodeDDLCanal(dst []byte, database, table string, m Meta, sql string) []byte {
	event := canalDDLEvent(sql)
	dst, open := appendCanalPacketStart(dst, appendCanalHeader(nil, database, table, event, m))
	dst, sv := pbBegin(dst, cpEntryStoreValue, 2)
	dst = appendPBVarintAlways(dst, cpRowChangeEventType, event)
	dst = appendPBVarintAlways(dst, cpRowChangeIsDdl, 1)
	dst = appendPBString(dst, cpRowChangeSQL, sql)
	dst = appendPBString(dst, cpRowChangeDdlSchema, database)
	dst = pbEnd(dst, sv)
	return appendCanalPacketEnd(dst, open)
}

// canalDDLEvent is the EventType number of the type canal-json gives a statement
// (CanalDDLType).
func canalDDLEvent(sql string) uint64 {
	switch CanalDDLType(sql) {
	case "CREATE":
		return cpEventCreate
	case "ALTER":
		return cpEventAlter
	case "ERASE":
		return cpEventErase
	case "TRUNCATE":
		return cpEventTruncate
	case "RENAME":
		return cpEventRename
	case "CINDEX":
		return cpEventCIndex
	case "DINDEX":
		return cpEventDIndex
	}
	return cpEventQuery
}

// EncodeRowCanal appends the canal-protobuf message of one row change given as
// go-mysql's values (EncodeRow's, in this format).
func EncodeRowCanal(dst []byte, t *Table, typ string, m Meta, before, after []any) ([]byte, error) {
	rows := Rows{rows: []values{before, after}}
	r := Row{Table: t, Type: typ, Meta: m, Before: Image{rows: &rows, t: t, i: -1}, After: Image{rows: &rows, t: t, i: -1}}
	if before != nil {
		r.Before.i = 0
	}
	if after != nil {
		r.After.i = 1
	}
	image := after
	if image == nil {
		image = before
	}
	if len(image) != len(t.Columns) || (before != nil && after != nil && len(before) != len(after)) {
		return dst, errColumnCount(t, len(image))
	}
	var s canalScratch
	return encodeCanalRow(dst, &s, &r)
}
