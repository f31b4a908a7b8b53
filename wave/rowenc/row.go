package rowenc

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/jsonenc"
)

// Event types of a row message (docs/design.md, "Row message").
const (
	TypeInsert = "insert"
	TypeUpdate = "update"
	TypeDelete = "delete"
	TypeDDL    = "ddl"
	// TypeSnapshot is a row the table held when a snapshot read it (wave/capture).
	TypeSnapshot = "snapshot"
)

// Partitioning choices of a subscription: what the Kafka message key is made of
// (AppendKey).
const (
	PartitionPK       = "pk" // db.table + primary key: a row's changes stay in order (default)
	PartitionTable    = "table"
	PartitionDatabase = "database"
)

// BinaryCollation is the collation id of the "binary" character set: columns with it
// hold bytes, not text, and are encoded as base64.
const BinaryCollation = 63

// Column describes one column of a table as far as encoding needs: its name and how to
// turn go-mysql's decoded value into JSON.
type Column struct {
	Name string
	// Type is the binlog column type (mysql.MYSQL_TYPE_*), with ENUM and SET resolved
	// from the STRING type's metadata.
	Type     byte
	Unsigned bool
	// Binary marks byte columns (BINARY, VARBINARY, BLOB): base64 in the message.
	Binary bool
	// Charset, when not nil, is a text column's character set, which is not UTF-8: its
	// values from the binlog are decoded from it (Reader.Read); a snapshot's come from
	// the server as UTF-8 already.
	Charset *Charset
	// Pad is the declared length in bytes of a CHAR or BINARY column (its table-map
	// metadata; CharLength). The binlog leaves out the 0x00 bytes the server pads a
	// BINARY value with, which a SELECT returns: a Binary value is padded back to Pad.
	Pad int
	// JSON marks JSON columns; MariaDB stores them as LONGTEXT, so this comes from the
	// schema there (a json_valid check constraint).
	JSON bool
	// BlobBytes is a BLOB or TEXT column's length prefix in bytes (its table-map
	// metadata): 1 TINY, 2 plain, 3 MEDIUM, 4 LONG; 0 when not known. canal's mysqlType
	// names the type by it (it said text for a LONGTEXT).
	BlobBytes uint8
	// Precision and Scale are a DECIMAL column's declared DECIMAL(precision, scale) (its
	// table-map metadata, or the snapshot's column length and decimals); Precision 0 when
	// not known. debezium-json's schema of a precise DECIMAL states both.
	Precision, Scale uint8
	// Bits is a BIT column's declared width, BIT(n)'s n (its table-map metadata, or the
	// snapshot's column length); 0 when not known. debezium-json sends BIT(1) as a
	// boolean and a wider one as Debezium's Bits (bytes, little-endian).
	Bits uint8
	// Fixed is a MariaDB UUID, INET4 or INET6 column (its schema's DATA_TYPE): the binlog
	// holds its stored bytes, which go out as the text a SELECT shows.
	Fixed FixedText
	// NotNull marks a column declared NOT NULL (the table map's null bitmap, or the
	// snapshot's column flags): debezium-json's schema makes it required, as Debezium's.
	NotNull bool
	// Enum and Set are the value lists of ENUM and SET columns.
	Enum []string
	Set  []string
	PK   bool
	// Frac is the fractional-second digits of a DATETIME2, TIMESTAMP2 or TIME2 column
	// (its table-map metadata), which every value is written with: go-mysql hands a
	// DATETIME or TIMESTAMP over as a time.Time, which does not carry them, and a TIME
	// without its fraction when that is zero.
	Frac uint8
	// Geometry is a GEOMETRY column's declared type (POINT, POLYGON, …; the table map's
	// GEOMETRY_TYPE metadata, or the schema's DATA_TYPE): debezium-json sends a POINT
	// column's values as Debezium's Point, canal-json names the type in mysqlType.
	// GeometryAny when not known.
	Geometry GeometryType

	key []byte // `"<Name>":`, encoded by Table.Prepare
	raw rawCol // where its values lie in a row image, when read in place (rowimage.go)
}

// BitWidth is a BIT column's declared width from its table-map metadata (go-mysql's
// ColumnMeta: whole bytes in the high byte, the bits of a partial one in the low).
func BitWidth(meta uint16) uint8 { return uint8(min(int(meta>>8)*8+int(meta&0xff), 64)) }

// DecimalPrecision is the precision of a DECIMAL column from a result set's column
// length (the server's display length: the digits, a point when there are decimals, a
// sign unless unsigned); 0 when that does not add up.
func DecimalPrecision(length uint32, decimals uint8, unsigned bool) uint8 {
	n := int(length)
	if decimals > 0 {
		n--
	}
	if !unsigned {
		n--
	}
	if n < 1 || n > 65 || n < int(decimals) {
		return 0
	}
	return uint8(n)
}

// Table is the column layout of a table at one point in the binlog.
type Table struct {
	Database string
	Name     string
	Columns  []Column
	// PK holds the indexes of the primary key columns, in key order; empty when the
	// table has none.
	PK []int

	names []byte // `,"database":<Database>,"table":<Name>`, encoded by Prepare
	// pbNames is each column's name as the protobuf format encodes it (pbFieldNames),
	// canalCols its name and type as canal-protobuf does (canalColumnFields); both made
	// by Prepare.
	pbNames   [][]byte
	canalCols []canalColumnField
	// tm is the table map the capture last saw for the table; inPlace: every column's
	// values can be read in place (rowimage.go).
	tm      *replication.TableMapEvent
	inPlace bool
	// charsets: a column has a Charset, whose binlog text Reader.Read decodes.
	charsets bool
}

// Prepare encodes the JSON every message of the table repeats (its names, each column's
// key) once, so that EncodeRow copies them instead of escaping them for every row. A
// Table works unprepared too; it must not change after Prepare.
func (t *Table) Prepare() {
	t.names = appendNames(nil, t.Database, t.Name)
	for i := range t.Columns {
		c := &t.Columns[i]
		c.key = append(jsonenc.AppendString(nil, c.Name), ':')
	}
	t.pbNames = pbFieldNames(t)
	t.canalCols = canalColumnFields(t)
}

func appendNames(dst []byte, db, table string) []byte {
	dst = append(dst, `,"database":`...)
	dst = jsonenc.AppendString(dst, db)
	dst = append(dst, `,"table":`...)
	return jsonenc.AppendString(dst, table)
}

// Meta is the binlog position of a row, copied into its message.
type Meta struct {
	Instance string
	TS       int64 // event timestamp, Unix seconds
	GTID     string
	File     string
	Pos      uint32 // where the row's event ends: the position to resume after it
	// EventPos is where the row's rows event starts (debezium-json's source.pos); 0 when
	// not known (a snapshot's row).
	EventPos uint32
	XID      uint64
	Commit   bool
}

// EncodeRow appends the JSON row message of one row change to dst. before is nil for an
// insert, after is nil for a delete. The values are those go-mysql's row decoder gives
// (UseDecimal off, ParseTime on: TIMESTAMP values from 1970 on arrive as time.Time,
// the zero one as text; TIMESTAMP rendered in UTC), a DATETIME's as rowsDecoder has it
// decoded (an int64 of its field: appendPackedDatetime); a DATETIME as text or as a
// time.Time (go-mysql's own decoding, ParseTime off or on) is written alike, but in a
// time.Time time.Date has already moved a stored 2024-02-30 to March 1st.
func EncodeRow(dst []byte, t *Table, typ string, m Meta, before, after []any) ([]byte, error) {
	dst = appendHeader(dst, t.names, t.Database, t.Name, typ, m)
	return encodeRow(dst, t, values(before), values(after))
}

// rowImage is one image of a changed row (before or after), however it was decoded:
// go-mysql's values or the binlog's bytes read in place (rawImage).
type rowImage[I any] interface {
	isNil() bool
	len() int
	// appendValue appends the JSON of column i, described by c.
	appendValue(dst []byte, c *Column, i int) ([]byte, error)
	// sameAs reports whether column i encodes alike in this image and o.
	sameAs(o I, c *Column, i int) (bool, error)
}

// values is a row image as go-mysql decodes it.
type values []any

func (v values) isNil() bool { return v == nil }
func (v values) len() int    { return len(v) }
func (v values) appendValue(dst []byte, c *Column, i int) ([]byte, error) {
	return appendValue(dst, c, v[i])
}
func (v values) sameAs(o values, c *Column, i int) (bool, error) { return sameValue(c, v[i], o[i]) }

// encodeRow is EncodeRow after the header, for either kind of image: the header is the
// same for every row of a rows event but its last, so the capture encodes it once per
// event and copies it.
func encodeRow[I rowImage[I]](dst []byte, t *Table, before, after I) ([]byte, error) {
	image := after
	if image.isNil() {
		image = before
	}
	if image.len() != len(t.Columns) || (!before.isNil() && !after.isNil() && before.len() != after.len()) {
		return dst, fmt.Errorf("%s.%s: row has %d values, table map %d columns", t.Database, t.Name, image.len(), len(t.Columns))
	}
	var err error
	dst = append(dst, `,"pk":`...)
	if len(t.PK) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '{')
		for i, ci := range t.PK {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendField(dst, &t.Columns[ci], image, ci); err != nil {
				return dst, err
			}
		}
		dst = append(dst, '}')
	}
	// data is the row as it is after the change; for a delete, the row that was deleted
	// (as Maxwell and Canal's JSON do), so every message carries the whole row once.
	dst = append(dst, `,"data":{`...)
	for i := range t.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendField(dst, &t.Columns[i], image, i); err != nil {
			return dst, err
		}
	}
	dst = append(dst, '}')
	if !before.isNil() && !after.isNil() {
		if dst, err = appendOld(dst, t, before, after); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendOld appends the "old" object of an update: the columns whose value changed,
// with their value before. Values are compared as decoded; JSON documents, whose text
// may differ in spacing only, by their encoding.
func appendOld[I rowImage[I]](dst []byte, t *Table, before, after I) ([]byte, error) {
	dst = append(dst, `,"old":{`...)
	n := 0
	for i := range t.Columns {
		c := &t.Columns[i]
		same, err := before.sameAs(after, c, i)
		if err != nil {
			return dst, err
		}
		if same {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if dst, err = appendField(dst, c, before, i); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// scratchPool holds the buffers sameValue encodes JSON documents into.
var scratchPool = sync.Pool{New: func() any { return new([2][]byte) }}

// sameValue reports whether a column's two values encode alike (a JSON column's SQL
// NULL and document null aside: they differ).
func sameValue(c *Column, x, y any) (bool, error) {
	if c.Type != mysql.MYSQL_TYPE_JSON && !c.JSON {
		switch a := x.(type) {
		case nil:
			return y == nil, nil
		case []byte:
			b, ok := y.([]byte)
			return ok && bytes.Equal(a, b), nil
		case int64:
			if b, ok := y.(int64); ok && isDatetime(c) && a != b {
				break // a DATETIME (rowsDecoder) by its text, as read in place (sameDecoded)
			}
			return x == y, nil
		case string, int8, int16, int32, int, uint8, uint16, uint32, uint64:
			return x == y, nil
		case time.Time:
			b, ok := y.(time.Time)
			return ok && a.Equal(b), nil
		}
	}
	if isJSON := c.Type == mysql.MYSQL_TYPE_JSON || c.JSON; isJSON && (x == nil) != (y == nil) {
		// A JSON document null and SQL NULL encode alike in json, not in the formats
		// that tell them apart (canal-json, debezium-json, protobuf): a change between
		// the two is a change.
		return false, nil
	}
	if xb, ok := rawBytes(x); ok {
		if yb, ok := rawBytes(y); ok && bytes.Equal(xb, yb) {
			return true, nil // the same text encodes alike
		}
	}
	s := scratchPool.Get().(*[2][]byte)
	defer scratchPool.Put(s)
	var err error
	if s[0], err = appendValue(s[0][:0], c, x); err != nil {
		return false, err
	}
	if s[1], err = appendValue(s[1][:0], c, y); err != nil {
		return false, err
	}
	return bytes.Equal(s[0], s[1]), nil
}

func rawBytes(v any) ([]byte, bool) {
	switch b := v.(type) {
	case []byte:
		return b, true
	case string:
		return bytesOf(b), true
	}
	return nil, false
}

// EncodeDDL appends the JSON message of a DDL statement to dst.
func EncodeDDL(dst []byte, database, table string, m Meta, sql string) []byte {
	dst = appendHeader(dst, nil, database, table, TypeDDL, m)
	dst = append(dst, `,"sql":`...)
	dst = jsonenc.AppendString(dst, sql)
	return append(dst, '}')
}

// AppendKey appends the partitioning key of a row: "db.table" and, for PartitionPK, the
// primary key values as a JSON array ("shop.orders:[7]"), so one row's changes stay on
// one partition and in order.
func AppendKey(dst []byte, t *Table, by string, image []any) []byte {
	return appendKey(dst, t, by, values(image))
}

// keysRow reports whether appendKey gives image's row a key of its own under by: pk
// partitioning of a table with a primary key, the image whole; otherwise the key is the
// table's.
func keysRow[I rowImage[I]](t *Table, by string, image I) bool {
	return (by == PartitionPK || by == "") && len(t.PK) > 0 && image.len() == len(t.Columns)
}

func appendKey[I rowImage[I]](dst []byte, t *Table, by string, image I) []byte {
	switch by {
	case PartitionDatabase:
		return appendKeyName(dst, t.Database)
	case PartitionTable:
		dst = appendKeyName(dst, t.Database)
		dst = append(dst, '.')
		return appendKeyName(dst, t.Name)
	}
	dst = appendKeyName(dst, t.Database)
	dst = append(dst, '.')
	dst = appendKeyName(dst, t.Name)
	if !keysRow(t, by, image) {
		return dst
	}
	dst = append(dst, ":["...)
	for i, ci := range t.PK {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = image.appendValue(dst, &t.Columns[ci], ci); err != nil {
			dst = append(dst, "null"...)
		}
	}
	return append(dst, ']')
}

// AppendDDLKey appends the partitioning key of a DDL statement on table db.table: the
// key its rows have under partition_by table or database (the names quoted alike), so
// that there a table's DDL and rows share a partition and stay in order.
func AppendDDLKey(dst []byte, db, table, by string) []byte {
	dst = appendKeyName(dst, db)
	if by == PartitionDatabase {
		return dst
	}
	dst = append(dst, '.')
	return appendKeyName(dst, table)
}

// appendKeyName appends a database or table name to a key: as it is, or, when it holds a
// character the key's syntax uses (".", ":" or "`"), between backquotes with its
// backquotes doubled, as MySQL quotes it. Names may hold any of them, and unquoted the
// row 1 of table "c" in database "a.b" and of table "b.c" in database "a" had one key,
// "a.b.c:[1]": with log compaction one of the two rows was lost.
// TableKey is the key of a table's messages under partition_by table, db.table with a
// name holding '.', ':' or '`' quoted in backquotes: what a row's key under partition_by
// pk starts with, before ":" and its values (binlake tail reads them back).
func TableKey(db, table string) string {
	return string(appendKeyName(append(appendKeyName(nil, db), '.'), table))
}

func appendKeyName(dst []byte, name string) []byte {
	if !strings.ContainsAny(name, ".:`") {
		return append(dst, name...)
	}
	dst = append(dst, '`')
	for i := range len(name) {
		if name[i] == '`' {
			dst = append(dst, '`')
		}
		dst = append(dst, name[i])
	}
	return append(dst, '`')
}

// appendHeader appends a message's opening fields; names is appendNames' encoding of db
// and table when prepared, else nil.
func appendHeader(dst, names []byte, db, table, typ string, m Meta) []byte {
	dst = append(dst, `{"instance":`...)
	dst = jsonenc.AppendString(dst, m.Instance)
	if names != nil {
		dst = append(dst, names...)
	} else {
		dst = appendNames(dst, db, table)
	}
	dst = append(dst, `,"type":`...)
	dst = jsonenc.AppendString(dst, typ)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, m.TS, 10)
	if m.GTID != "" {
		dst = append(dst, `,"gtid":`...)
		dst = jsonenc.AppendString(dst, m.GTID)
	}
	dst = append(dst, `,"file":`...)
	dst = jsonenc.AppendString(dst, m.File)
	dst = append(dst, `,"pos":`...)
	dst = strconv.AppendUint(dst, uint64(m.Pos), 10)
	if m.XID != 0 {
		dst = append(dst, `,"xid":`...)
		dst = strconv.AppendUint(dst, m.XID, 10)
	}
	dst = append(dst, `,"commit":`...)
	dst = strconv.AppendBool(dst, m.Commit)
	return dst
}

func appendField[I rowImage[I]](dst []byte, c *Column, image I, i int) ([]byte, error) {
	if c.key != nil {
		dst = append(dst, c.key...)
	} else {
		dst = append(jsonenc.AppendString(dst, c.Name), ':')
	}
	return image.appendValue(dst, c, i)
}

// appendValue appends the JSON form of one decoded column value. The type switch is on
// what go-mysql produced; the column says what it means (unsigned, binary, JSON, enum).
func appendValue(dst []byte, c *Column, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case int8:
		return appendInt(dst, c, int64(x), 8), nil
	case int16:
		return appendInt(dst, c, int64(x), 16), nil
	case int32:
		if c.Type == mysql.MYSQL_TYPE_INT24 {
			return appendInt(dst, c, int64(x), 24), nil
		}
		return appendInt(dst, c, int64(x), 32), nil
	case int64:
		return appendInt64(dst, c, x), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case float32:
		return appendFloat(dst, float64(x), 32), nil
	case float64:
		return appendFloat(dst, x, 64), nil
	case string:
		return appendText(dst, c, x), nil
	case []byte:
		return appendBytes(dst, c, x), nil
	case time.Time:
		return appendTime(dst, c, x), nil
	default:
		// A type go-mysql gained later (for example a partial JSON diff): say so in
		// the message rather than dropping the value.
		if s, ok := v.(fmt.Stringer); ok {
			return jsonenc.AppendString(dst, s.String()), nil
		}
		return dst, fmt.Errorf("column %s: unsupported value type %T", c.Name, v)
	}
}

// appendInt64 encodes the int64s go-mysql gives for BIGINT, ENUM, SET and BIT, and for
// DATETIME as rowsDecoder has it decoded.
func appendInt64(dst []byte, c *Column, x int64) []byte {
	switch c.Type {
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return append(appendPackedDatetime(append(dst, '"'), c, x, 'T'), '"')
	case mysql.MYSQL_TYPE_ENUM:
		return appendEnum(dst, c, x)
	case mysql.MYSQL_TYPE_SET:
		return appendSet(dst, c, x)
	case mysql.MYSQL_TYPE_BIT:
		return strconv.AppendUint(dst, uint64(x), 10)
	}
	return appendInt(dst, c, x, 64)
}

// appendInt reinterprets a signed value of the given width as unsigned when the column is
// unsigned: without the table map's signedness metadata go-mysql decodes every integer
// as signed.
func appendInt(dst []byte, c *Column, x int64, bits uint) []byte {
	if c.Unsigned && x < 0 {
		return strconv.AppendUint(dst, uint64(x)&(math.MaxUint64>>(64-bits)), 10)
	}
	return strconv.AppendInt(dst, x, 10)
}

func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

func appendEnum(dst []byte, c *Column, x int64) []byte {
	if x >= 1 && int(x) <= len(c.Enum) {
		return jsonenc.AppendString(dst, c.Enum[x-1])
	}
	if x == 0 {
		return jsonenc.AppendString(dst, "") // MySQL's "invalid value" entry
	}
	return strconv.AppendInt(dst, x, 10) // no value list (no metadata): the index
}

func appendSet(dst []byte, c *Column, x int64) []byte {
	if len(c.Set) == 0 {
		return strconv.AppendUint(dst, uint64(x), 10)
	}
	dst = append(dst, '"')
	first := true
	for i, name := range c.Set {
		if i >= 64 || uint64(x)&(1<<uint(i)) == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendStringBody(dst, name)
	}
	return append(dst, '"')
}

// appendStringBody appends s escaped as the inside of a JSON string (no quotes).
func appendStringBody(dst []byte, s string) []byte {
	at := len(dst)
	dst = jsonenc.AppendString(dst, s)
	copy(dst[at:], dst[at+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// appendText encodes values go-mysql hands over as strings: decimals, temporal values,
// JSON documents and CHAR/VARCHAR contents.
func appendText(dst []byte, c *Column, s string) []byte {
	switch c.Type {
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		return jsonenc.AppendString(dst, s) // exact: never through float64
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return appendTemporal(dst, s, "")
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		if strings.HasPrefix(s, "0000-00-00") && !isEpochFraction(s) {
			return appendTemporal(dst, s, "")
		}
		at := len(dst)
		dst = appendTemporal(dst, s, "Z") // rendered in UTC
		if isEpochFraction(s) {
			copy(dst[at+1:], epochDate)
		}
		return dst
	case mysql.MYSQL_TYPE_TIME2:
		return append(appendTimeDigits(append(dst, '"'), bytesOf(s), c.Frac), '"')
	case mysql.MYSQL_TYPE_JSON:
		return appendJSONDoc(dst, bytesOf(s))
	}
	if c.JSON {
		return appendJSONDoc(dst, bytesOf(s))
	}
	if c.Fixed != FixedNone {
		var padded [16]byte
		return appendFixedText(dst, c.Fixed, padBinary(padded[:0], c, bytesOf(s)))
	}
	if c.Binary {
		var padded [256]byte // a BINARY holds at most 255 bytes
		return appendBase64(dst, padBinary(padded[:0], c, bytesOf(s)))
	}
	return jsonenc.AppendString(dst, s)
}

// padBinary is b, or b appended to dst with the 0x00 bytes of a BINARY column c that the
// binlog left out (Column.Pad).
func padBinary(dst []byte, c *Column, b []byte) []byte {
	if len(b) >= c.Pad || c.Type != mysql.MYSQL_TYPE_STRING {
		return b
	}
	dst = append(dst, b...)
	return append(dst, make([]byte, c.Pad-len(b))...)
}

func appendBytes(dst []byte, c *Column, b []byte) []byte {
	switch {
	case c.Type == mysql.MYSQL_TYPE_JSON || c.JSON:
		return appendJSONDoc(dst, b)
	case c.Fixed != FixedNone:
		var padded [16]byte
		return appendFixedText(dst, c.Fixed, padBinary(padded[:0], c, b))
	case c.Binary || c.Type == mysql.MYSQL_TYPE_GEOMETRY:
		return appendBase64(dst, b)
	}
	return jsonenc.AppendString(dst, stringOf(b))
}

// epochDate is the date of a TIMESTAMP at second 0 with a fraction (isEpochFraction).
const epochDate = "1970-01-01"

// isEpochFraction reports whether s is go-mysql's text of a TIMESTAMP at second 0 with a
// fraction: go-mysql writes any TIMESTAMP at second 0 as the zero date, but only second
// 0 with no fraction is MySQL's zero TIMESTAMP (the server stores '0000-00-00
// 00:00:00.5' as that), so "0000-00-00 00:00:00.000001" is 1970-01-01 00:00:00.000001
// UTC, unix_timestamp 0.000001.
func isEpochFraction(s string) bool {
	return len(s) > 20 && s[:20] == "0000-00-00 00:00:00." && strings.Trim(s[20:], "0") != ""
}

// appendTemporal appends go-mysql's "2006-01-02 15:04:05[.frac]" as an ISO 8601
// string, its first space a 'T', with suffix after it.
func appendTemporal(dst []byte, s, suffix string) []byte {
	at := len(dst)
	dst = jsonenc.AppendString(dst, s) // digits and separators: nothing to escape
	if i := bytes.IndexByte(dst[at:], ' '); i >= 0 {
		dst[at+i] = 'T'
	}
	if suffix != "" {
		dst = append(dst[:len(dst)-1], suffix...)
		dst = append(dst, '"')
	}
	return dst
}

// appendTime appends a DATETIME or TIMESTAMP that go-mysql decoded as a time.Time as
// ISO 8601 with the column's fractional digits (truncated, as MySQL stores them), a
// TIMESTAMP in UTC with a 'Z': what appendTemporal makes of go-mysql's text form, which
// go-mysql formats with fmt.Sprintf (a sixth of the wave's CPU at full speed).
func appendTime(dst []byte, c *Column, t time.Time) []byte {
	dst = append(dst, '"')
	return append(appendTimeText(dst, c, t), '"')
}

// appendTimeText is appendTime's text, without the quotes (the protobuf format's).
func appendTimeText(dst []byte, c *Column, t time.Time) []byte {
	return appendTimeParts(dst, c, t, 'T', true)
}

// appendTimeParts appends t as column c's date, sep, clock and fraction: a TIMESTAMP's
// in UTC, then a 'Z' when zone is set (Canal's text has sep ' ' and no zone).
func appendTimeParts(dst []byte, c *Column, t time.Time, sep byte, zone bool) []byte {
	utc := isTimestamp(c)
	if utc {
		t = t.UTC()
	}
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	dst = append(appendDate(dst, year, int(month), day), sep)
	dst = appendClock(dst, hour, minute, second)
	dst = appendFraction(dst, t.Nanosecond()/1000, int(min(c.Frac, 6)))
	if utc && zone {
		dst = append(dst, 'Z')
	}
	return dst
}

// isDatetime reports whether c is a DATETIME.
func isDatetime(c *Column) bool {
	return c.Type == mysql.MYSQL_TYPE_DATETIME || c.Type == mysql.MYSQL_TYPE_DATETIME2
}

// isTimestamp reports whether c is a TIMESTAMP: its values are instants, written in UTC.
func isTimestamp(c *Column) bool {
	return c.Type == mysql.MYSQL_TYPE_TIMESTAMP || c.Type == mysql.MYSQL_TYPE_TIMESTAMP2
}

// appendPadded appends v in decimal, zero-padded to width characters as fmt's "%0*d"
// pads it (a minus sign counts in the width: only values no server writes are negative).
func appendPadded(dst []byte, v, width int) []byte {
	if width == 2 && v >= 0 && v < 100 { // a month, a day, a clock's field: most calls
		return append(dst, '0'+byte(v/10), '0'+byte(v%10))
	}
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = -u
		width--
	}
	var b [20]byte
	i := len(b)
	for u >= 10 || width > 1 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		width--
	}
	i--
	b[i] = byte('0' + u)
	return append(dst, b[i:]...)
}

// bytesOf is s's bytes without a copy, for readers that do not keep or change them
// (the JSON validator and base64): go-mysql hands some columns over as strings.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stringOf is b as a string without a copy, for the encoders that read it and keep
// nothing (appendText, jsonenc.AppendString).
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendJSONDoc embeds a JSON column's document as JSON. An empty document (what MySQL
// stores for an invalid insert in non-strict mode) is null; text that is not valid JSON
// is kept as a string instead of corrupting the message.
func appendJSONDoc(dst []byte, b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return append(dst, "null"...)
	}
	// AppendCompact validates as it goes and appends nothing on an error: one pass.
	if out, ok := jsonenc.AppendCompact(dst, b); ok {
		return out
	}
	return jsonenc.AppendString(dst, stringOf(b))
}

func appendBase64(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}
