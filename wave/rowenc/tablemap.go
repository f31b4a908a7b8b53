package rowenc

import (
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// ColumnType is the type of column i of a TABLE_MAP event (Column.Type). It resolves ENUM
// and SET, which the binlog writes as STRING with the real type in the metadata.
func ColumnType(tm *replication.TableMapEvent, i int) byte {
	typ := tm.ColumnType[i]
	if typ == mysql.MYSQL_TYPE_STRING && i < len(tm.ColumnMeta) {
		if rt := byte(tm.ColumnMeta[i] >> 8); rt == mysql.MYSQL_TYPE_ENUM || rt == mysql.MYSQL_TYPE_SET {
			return rt
		}
	}
	return typ
}

// CharLength is the declared length in bytes of column i of the table map tm when it is
// a CHAR or BINARY (Column.Pad), else 0.
func CharLength(tm *replication.TableMapEvent, i int) int {
	if tm.ColumnType[i] != mysql.MYSQL_TYPE_STRING || i >= len(tm.ColumnMeta) {
		return 0
	}
	if tp, length := stringType(tm.ColumnMeta[i]); tp == mysql.MYSQL_TYPE_STRING {
		return length
	}
	return 0
}

// MapColumns reads from the table map tm, which t's columns were built from, where each
// column's values lie in a row image, and so whether the table's rows can be read in
// place (rowimage.go): only when every column is of a kind read in place, none is a
// MariaDB UUID, INET4 or INET6, and none holds text to decode from a character set other
// than UTF-8 (go-mysql's decoding takes those,
// and Reader.Read decodes their text). Call it once the columns are complete.
func (t *Table) MapColumns(tm *replication.TableMapEvent) {
	n := len(t.Columns)
	t.inPlace = len(tm.ColumnMeta) == n && len(tm.ColumnType) == n
	t.charsets = false
	fixed := false
	for i := range t.Columns {
		t.charsets = t.charsets || t.Columns[i].Charset != nil
		fixed = fixed || t.Columns[i].Fixed != FixedNone
	}
	t.inPlace = t.inPlace && !t.charsets && !fixed // a UUID's text is made from go-mysql's value
	for i := 0; i < n && t.inPlace; i++ {
		c := &t.Columns[i]
		c.raw = newRawCol(tm.ColumnType[i], tm.ColumnMeta[i])
		t.inPlace = c.raw.kind != rawNone
	}
}

// SetMap records tm as the table map the capture last saw for the table: only rows
// events of that very map are read in place.
func (t *Table) SetMap(tm *replication.TableMapEvent) { t.tm = tm }

// SameLayout reports whether a cached table still matches a new TABLE_MAP (same column
// names), so an ALTER that kept the table id is noticed.
func (t *Table) SameLayout(tm *replication.TableMapEvent) bool {
	if len(t.Columns) != int(tm.ColumnCount) || string(tm.Schema) != t.Database || string(tm.Table) != t.Name {
		return false
	}
	if len(tm.ColumnName) != len(t.Columns) {
		return len(tm.ColumnName) == 0
	}
	for i := range t.Columns {
		if string(tm.ColumnName[i]) != t.Columns[i].Name || tm.ColumnType[i] != typeOnWire(t.Columns[i].Type) ||
			NotNullIn(tm, i) != t.Columns[i].NotNull {
			return false
		}
		// A VARCHAR(10) altered to VARCHAR(300) keeps its name and type but not the
		// width of its length prefix.
		if t.inPlace && (i >= len(tm.ColumnMeta) || newRawCol(tm.ColumnType[i], tm.ColumnMeta[i]) != t.Columns[i].raw) {
			return false
		}
	}
	return true
}

// NotNullIn reports whether column i of tm is declared NOT NULL: its bit in the table
// map's null bitmap is clear (a map without one says nothing: nullable).
func NotNullIn(tm *replication.TableMapEvent, i int) bool {
	return i/8 < len(tm.NullBitmap) && tm.NullBitmap[i/8]&(1<<(i%8)) == 0
}

func typeOnWire(t byte) byte {
	if t == mysql.MYSQL_TYPE_ENUM || t == mysql.MYSQL_TYPE_SET {
		return mysql.MYSQL_TYPE_STRING
	}
	return t
}
