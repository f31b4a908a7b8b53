package rowenc

import (
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/jsonenc"
)

// FormatCanalJSON is Canal's FlatMessage, as Canal 1.1.7's Kafka producer writes it with
// flatMessage=true (MQMessageUtils.messageConverter, serialized by fastjson2 with
// WriteNulls: the fields in name order, nulls written). One row per message, as Canal
// sends rows partitioned by primary key. Values are Canal's strings from the binlog
// (LogEventConvert, RowsLogBuffer); docs/design.md ("Message formats") lists them.
const FormatCanalJSON = "canal-json"

// canalJSON is the canal-json format; it has no options.
type canalJSON struct{}

func init() {
	RegisterFormat(FormatCanalJSON, func(opts map[string]string) (Format, error) {
		if _, err := ParseFormatOptions(FormatCanalJSON, opts, nil); err != nil {
			return nil, err
		}
		return canalJSON{}, nil
	})
}

// nowMillis is the wall clock of the fields the peers fill with the time they built the
// message (Canal's ts, Debezium's ts_ms); tests pin it.
var nowMillis = func() int64 { return wallNow().UnixMilli() }

// wallNow is the wall clock nowMillis reads, and debezium-json's ts_us and ts_ns; tests
// set it.
var wallNow = time.Now

func (canalJSON) Name() string     { return FormatCanalJSON }
func (canalJSON) Tombstones() bool { return false }

func (canalJSON) AppendRow(dst []byte, r *Row) ([]byte, error) {
	t := r.Table
	image := r.After
	typ := "INSERT" // a snapshot row too: Canal has no snapshot of its own
	switch r.Type {
	case TypeUpdate:
		typ = "UPDATE"
	case TypeDelete:
		typ, image = "DELETE", r.Before
	}
	var err error
	dst = append(dst, `{"data":[{`...)
	for i := range t.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendColumnKey(dst, &t.Columns[i])
		if dst, err = appendCanalValue(dst, image, i); err != nil {
			return dst, err
		}
	}
	dst = append(dst, `}]`...)
	dst = appendCanalHead(dst, t.Database, r.Meta)
	dst = append(dst, `,"isDdl":false,"mysqlType":{`...)
	for i := range t.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendColumnKey(dst, &t.Columns[i])
		dst = appendCanalMySQLType(dst, &t.Columns[i])
	}
	dst = append(dst, `},"old":`...)
	if r.Type == TypeUpdate {
		if dst, err = appendCanalOld(dst, r); err != nil {
			return dst, err
		}
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"pkNames":`...)
	dst = appendCanalPKNames(dst, t)
	dst = append(dst, `,"sql":"","sqlType":{`...)
	for i := range t.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		c := &t.Columns[i]
		dst = appendColumnKey(dst, c)
		code, err := canalSQLType(dst, image, i)
		if err != nil {
			return dst, err
		}
		dst = strconv.AppendInt(dst, int64(code), 10)
	}
	dst = append(dst, `},"table":`...)
	dst = jsonenc.AppendString(dst, t.Name)
	return appendCanalTail(dst, typ), nil
}

// appendCanalHead appends the fields between "data" and "isDdl": database, es (the
// binlog event's time in ms), gtid and id. Canal's id numbers its batches; a row's binlog
// position stands in for it.
func appendCanalHead(dst []byte, db string, m Meta) []byte {
	dst = append(dst, `,"database":`...)
	dst = jsonenc.AppendString(dst, db)
	dst = append(dst, `,"es":`...)
	dst = strconv.AppendInt(dst, m.TS*1000, 10)
	dst = append(dst, `,"gtid":`...)
	dst = jsonenc.AppendString(dst, m.GTID)
	dst = append(dst, `,"id":`...)
	return strconv.AppendUint(dst, uint64(m.Pos), 10)
}

// appendCanalTail appends ts (when the message was built) and type, and closes it.
func appendCanalTail(dst []byte, typ string) []byte {
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, nowMillis(), 10)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, typ...)
	return append(dst, `"}`...)
}

// appendColumnKey appends `"<name>":`.
func appendColumnKey(dst []byte, c *Column) []byte {
	if c.key != nil {
		return append(dst, c.key...)
	}
	return append(jsonenc.AppendString(dst, c.Name), ':')
}

// appendCanalOld appends "old" of an update: the columns whose value changed, before.
func appendCanalOld(dst []byte, r *Row) ([]byte, error) {
	dst = append(dst, `[{`...)
	n := 0
	for i := range r.Table.Columns {
		same, err := r.Before.Same(r.After, i)
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
		dst = appendColumnKey(dst, &r.Table.Columns[i])
		if dst, err = appendCanalValue(dst, r.Before, i); err != nil {
			return dst, err
		}
	}
	return append(dst, `}]`...), nil
}

// appendCanalPKNames appends the primary key's columns in the table's column order (the
// order Canal meets them in), or null.
func appendCanalPKNames(dst []byte, t *Table) []byte {
	if len(t.PK) == 0 {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	n := 0
	for i := range t.Columns {
		if !t.Columns[i].PK {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = jsonenc.AppendString(dst, t.Columns[i].Name)
	}
	return append(dst, ']')
}

// appendCanalValue appends column col of im as Canal's string (a JSON string, or null):
// integers, BIT and YEAR in decimal (the zero YEAR "0000"), FLOAT and DOUBLE as Java's
// toString, DECIMAL as its plain text, DATE/TIME as they are, DATETIME and TIMESTAMP as
// "yyyy-MM-dd HH:mm:ss[.ffffff]" (the column's digits; a TIMESTAMP in UTC), ENUM as its
// index and SET as its bits (Canal reads no value lists), JSON as its text, binary values
// one character per byte (ISO-8859-1), text as it is.
func appendCanalValue(dst []byte, im Image, col int) ([]byte, error) {
	at := len(dst)
	dst, err := im.AppendJSON(dst, col)
	if err != nil {
		return dst, err
	}
	tok := dst[at:]
	if im.isSQLNull(col, tok) {
		return dst, nil
	}
	c := &im.t.Columns[col]
	switch kindOf(c) {
	case kindInt, kindBit:
		return rewriteTail(dst, at, appendQuoted), nil
	case kindYear:
		if string(tok) == "0" {
			return append(dst[:at], `"0000"`...), nil
		}
		return rewriteTail(dst, at, appendQuoted), nil
	case kindFloat:
		return rewriteTail(dst, at, appendJavaFloat32Quoted), nil
	case kindDouble:
		return rewriteTail(dst, at, appendJavaFloat64Quoted), nil
	case kindDatetime, kindTimestamp:
		return rewriteTail(dst, at, appendSQLTemporal), nil
	case kindEnum:
		n, ok := enumIndex(c, tok)
		if !ok {
			return dst, nil
		}
		return appendQuotedUint(dst[:at], n), nil
	case kindSet:
		n, ok := setBits(c, tok)
		if !ok {
			return dst, nil
		}
		return appendQuotedUint(dst[:at], n), nil
	case kindJSON:
		return rewriteTail(dst, at, appendJSONText), nil
	case kindBinary:
		return rewriteTail(dst, at, appendBase64AsLatin1), nil
	}
	return dst, nil // DECIMAL, DATE, TIME, text: already Canal's string
}

func appendQuotedUint(dst []byte, n uint64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, n, 10)
	return append(dst, '"')
}

func appendJavaFloat32Quoted(dst, tok []byte) []byte {
	return append(appendJavaFloat32(append(dst, '"'), tok), '"')
}

func appendJavaFloat64Quoted(dst, tok []byte) []byte {
	return append(appendJavaFloat64(append(dst, '"'), tok), '"')
}

// appendBase64AsLatin1 appends a base64 token's bytes as a Latin-1 JSON string.
func appendBase64AsLatin1(dst, tok []byte) []byte {
	n := len(dst)
	dst = decodeBase64Token(dst, tok)
	m := len(dst)
	dst = appendLatin1(dst, dst[n:m])
	k := copy(dst[n:], dst[m:])
	return dst[:n+k]
}

// java.sql.Types codes, as Canal's sqlType carries them.
const (
	sqlBit       = -7
	sqlTinyint   = -6
	sqlBigint    = -5
	sqlChar      = 1
	sqlDecimal   = 3
	sqlInteger   = 4
	sqlSmallint  = 5
	sqlReal      = 7
	sqlDouble    = 8
	sqlVarchar   = 12
	sqlDate      = 91
	sqlTime      = 92
	sqlTimestamp = 93
	sqlBlob      = 2004
	sqlClob      = 2005
)

// canalSQLType is Canal's sqlType of column col in im: the java.sql.Types code its
// binlog reader gives the column's type, one size up for an unsigned value beyond the
// signed range (Canal's own rule: TINYINT → SMALLINT, SMALLINT and MEDIUMINT → INTEGER,
// INT → BIGINT, BIGINT → DECIMAL). scratch is a buffer it may append to and drop.
func canalSQLType(scratch []byte, im Image, col int) (int, error) {
	c := &im.t.Columns[col]
	if kindOf(c) != kindInt || !c.Unsigned || im.IsNil() {
		return canalSQLTypeOf(c, nil), nil
	}
	tok, err := im.AppendJSON(scratch, col)
	if err != nil {
		return 0, err
	}
	return canalSQLTypeOf(c, tok[len(scratch):]), nil
}

// canalSQLTypeOf is canalSQLType for a column whose value has been rendered as tok, its
// json or canal-json token (an integer's number, quoted or not; nil for none).
func canalSQLTypeOf(c *Column, tok []byte) int {
	switch kindOf(c) {
	case kindInt:
		code, bump, bits := canalIntSQLTypes(c)
		if !c.Unsigned {
			return code
		}
		if len(tok) >= 2 && tok[0] == '"' {
			tok = tok[1 : len(tok)-1]
		}
		if len(tok) == 0 || tok[0] < '0' || tok[0] > '9' {
			return code // no number (null, or none given): what ParseUint would refuse, without its error's allocation
		}
		if v, err := strconv.ParseUint(stringOf(tok), 10, 64); err == nil && v > 1<<(bits-1)-1 {
			return bump
		}
		return code
	case kindFloat:
		return sqlReal
	case kindDouble:
		return sqlDouble
	case kindDecimal:
		return sqlDecimal
	case kindDate:
		return sqlDate
	case kindTime:
		return sqlTime
	case kindDatetime, kindTimestamp:
		return sqlTimestamp
	case kindYear:
		return sqlVarchar
	case kindBit, kindSet:
		return sqlBit
	case kindEnum:
		return sqlInteger
	case kindJSON:
		if c.Type == mysql.MYSQL_TYPE_JSON {
			return sqlVarchar
		}
		return sqlClob // MariaDB's JSON is a LONGTEXT
	case kindBinary:
		return sqlBlob
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		return sqlClob
	case mysql.MYSQL_TYPE_STRING:
		return sqlChar
	}
	return sqlVarchar
}

// canalIntSQLTypes is an integer column's sqlType, the sqlType of an unsigned value
// beyond the signed range, and the column's bits.
func canalIntSQLTypes(c *Column) (code, bump, bits int) {
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return sqlTinyint, sqlSmallint, 8
	case mysql.MYSQL_TYPE_SHORT:
		return sqlSmallint, sqlInteger, 16
	case mysql.MYSQL_TYPE_INT24:
		return sqlInteger, sqlInteger, 24
	case mysql.MYSQL_TYPE_LONGLONG:
		return sqlBigint, sqlDecimal, 64
	}
	return sqlInteger, sqlBigint, 32
}

// blobSize is the size word of a BLOB or TEXT type by its length prefix's bytes.
func blobSize(prefix uint8) string {
	switch prefix {
	case 1:
		return "tiny"
	case 3:
		return "medium"
	case 4:
		return "long"
	}
	return ""
}

// BlobBytesOfLength is the length prefix of a BLOB or TEXT column of at most maxBytes
// bytes (a result set's column length: TINY 255, 65,535, MEDIUM 16,777,215, LONG).
func BlobBytesOfLength(maxBytes uint64) uint8 {
	switch {
	case maxBytes <= 0xff:
		return 1
	case maxBytes <= 0xffff:
		return 2
	case maxBytes <= 0xffffff:
		return 3
	}
	return 4
}

// appendCanalMySQLType appends Canal's mysqlType of a column as a JSON string: the type's
// name with its signedness, fractional digits, DECIMAL's precision and scale, BIT's width
// and ENUM/SET values; a geometry column's declared type ("point"). Canal copies the
// schema's COLUMN_TYPE, lengths included; the binlog carries a string's length in bytes,
// not the characters declared, and no integer display width, so those are left out
// ("varchar", not "varchar(64)").
func appendCanalMySQLType(dst []byte, c *Column) []byte {
	var name string
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		name = "tinyint"
	case mysql.MYSQL_TYPE_SHORT:
		name = "smallint"
	case mysql.MYSQL_TYPE_INT24:
		name = "mediumint"
	case mysql.MYSQL_TYPE_LONG:
		name = "int"
	case mysql.MYSQL_TYPE_LONGLONG:
		name = "bigint"
	case mysql.MYSQL_TYPE_FLOAT:
		name = "float"
	case mysql.MYSQL_TYPE_DOUBLE:
		name = "double"
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		name = "decimal"
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		name = "date"
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		name = "time"
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		name = "datetime"
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		name = "timestamp"
	case mysql.MYSQL_TYPE_YEAR:
		name = "year"
	case mysql.MYSQL_TYPE_BIT:
		name = "bit"
	case mysql.MYSQL_TYPE_ENUM:
		return appendValueList(append(dst, `"enum(`...), c.Enum)
	case mysql.MYSQL_TYPE_SET:
		return appendValueList(append(dst, `"set(`...), c.Set)
	case mysql.MYSQL_TYPE_JSON:
		name = "json"
	case mysql.MYSQL_TYPE_GEOMETRY:
		name = c.Geometry.String()
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		name = "varchar"
		if c.Binary {
			name = "varbinary"
		}
	case mysql.MYSQL_TYPE_STRING:
		name = "char"
		if c.Fixed != FixedNone {
			name = c.Fixed.String() // MariaDB's COLUMN_TYPE: uuid, inet4, inet6
		}
		if c.Binary {
			name = "binary"
		}
	default: // the BLOB types
		switch {
		case c.JSON:
			name = "longtext" // MariaDB's JSON
		case c.Binary:
			name = blobSize(c.BlobBytes) + "blob"
		default:
			name = blobSize(c.BlobBytes) + "text"
		}
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	if c.Frac > 0 && (c.Type == mysql.MYSQL_TYPE_DATETIME2 || c.Type == mysql.MYSQL_TYPE_TIMESTAMP2 || c.Type == mysql.MYSQL_TYPE_TIME2) {
		dst = append(dst, '(')
		dst = strconv.AppendUint(dst, uint64(c.Frac), 10)
		dst = append(dst, ')')
	}
	switch {
	case c.Precision > 0 && (c.Type == mysql.MYSQL_TYPE_NEWDECIMAL || c.Type == mysql.MYSQL_TYPE_DECIMAL):
		dst = append(dst, '(')
		dst = strconv.AppendUint(dst, uint64(c.Precision), 10)
		dst = append(dst, ',')
		dst = strconv.AppendUint(dst, uint64(c.Scale), 10)
		dst = append(dst, ')')
	case c.Bits > 0 && c.Type == mysql.MYSQL_TYPE_BIT:
		dst = append(dst, '(')
		dst = strconv.AppendUint(dst, uint64(c.Bits), 10)
		dst = append(dst, ')')
	}
	if k := kindOf(c); c.Unsigned && (k == kindInt || k == kindDecimal || k == kindFloat || k == kindDouble) {
		dst = append(dst, " unsigned"...)
	}
	return append(dst, '"')
}

// appendValueList appends an ENUM's or SET's members as SQL writes them ('a','b', a quote
// doubled), escaped for the JSON string it ends with `)"`: no allocation per message.
func appendValueList(dst []byte, vs []string) []byte {
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\'')
		for {
			q := strings.IndexByte(v, '\'')
			if q < 0 {
				break
			}
			dst = append(appendStringBody(dst, v[:q]), '\'', '\'')
			v = v[q+1:]
		}
		dst = append(appendStringBody(dst, v), '\'')
	}
	return append(dst, ')', '"')
}

func (canalJSON) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) {
	dst = append(dst, `{"data":null`...)
	dst = appendCanalHead(dst, d.Database, d.Meta)
	dst = append(dst, `,"isDdl":true,"mysqlType":null,"old":null,"pkNames":null,"sql":`...)
	dst = jsonenc.AppendString(dst, d.SQL)
	dst = append(dst, `,"sqlType":null,"table":`...)
	dst = jsonenc.AppendString(dst, d.Table)
	return appendCanalTail(dst, CanalDDLType(d.SQL)), true, nil
}

// CanalDDLType is the EventType Canal 1.1.7 gives a DDL statement's entry (its canal-json
// "type"): what its DruidDdlParser makes of the statement (canal.instance.filter.druid.ddl
// =true, the default), the first result's type, QUERY without one.
//
//   - CREATE [TEMPORARY] TABLE (… | LIKE | SELECT): CREATE; CREATE [UNIQUE|FULLTEXT|SPATIAL]
//     INDEX: CINDEX
//   - DROP [TEMPORARY] TABLE: ERASE; DROP INDEX: DINDEX; TRUNCATE: TRUNCATE; RENAME TABLE:
//     RENAME
//   - ALTER TABLE: ALTER when it sets a table option (ENGINE=, COMMENT=, …) anywhere among
//     its items; otherwise its first item that gives a type decides: ADD INDEX, KEY, UNIQUE,
//     FULLTEXT, SPATIAL, PRIMARY KEY or CONSTRAINT … UNIQUE|PRIMARY KEY: CINDEX; DROP INDEX,
//     KEY or CONSTRAINT: DINDEX; RENAME [TO|AS] t: RENAME; ADD [CONSTRAINT …] FOREIGN KEY
//     and CHECK give none (an ALTER of only those is QUERY); anything else (columns, DROP
//     PRIMARY KEY, DROP FOREIGN KEY, RENAME COLUMN, partitions…): ALTER
//   - QUERY for the rest (databases, views, triggers, routines, users, OPTIMIZE…), and for
//     what Druid's parser refuses: MariaDB's IF [NOT] EXISTS in ALTER TABLE, CREATE INDEX
//     and RENAME TABLE, CREATE OR REPLACE, [DEFAULT] CHARSET in ALTER TABLE (DEFAULT
//     CHARACTER SET passes), PARTITION BY, REMOVE PARTITIONING, ALTER INDEX, DROP CHECK,
//     an unterminated comment or quote.
//
// It is no SQL parser: rarer syntax that Druid's parser also refuses (MariaDB's WAIT and
// NOWAIT, PAGE_CHECKSUM=, a column's SRID…) is QUERY in Canal and may get a type here.
// TestCanalDDLTypeMatchesCanalIntegration checks it against Canal's own parser.
func CanalDDLType(sql string) string {
	w := sqlTokens(sql)
	i := 1
	switch w.at(0) {
	case "CREATE":
		if w.at(1) == "TEMPORARY" {
			i++
		}
		switch w.at(i) {
		case "TABLE":
			return "CREATE"
		case "UNIQUE", "FULLTEXT", "SPATIAL":
			i++
		}
		if w.at(i) == "INDEX" && w.at(i+1) != "IF" {
			return "CINDEX"
		}
	case "DROP":
		if w.at(1) == "TEMPORARY" {
			i++
		}
		switch w.at(i) {
		case "TABLE":
			return "ERASE"
		case "INDEX":
			return "DINDEX"
		}
	case "TRUNCATE":
		if len(w) > 1 {
			return "TRUNCATE"
		}
	case "RENAME":
		if w.at(1) == "TABLE" && w.at(2) != "IF" {
			return "RENAME"
		}
	case "ALTER":
		return canalAlterType(w)
	}
	return "QUERY"
}

// canalTableOptions are the table options of ALTER TABLE's items that Druid's parser
// reads as such (CHARSET is not among them: it refuses it).
var canalTableOptions = map[string]bool{"ENGINE": true, "CHARACTER": true, "COLLATE": true,
	"COMMENT": true, "AUTO_INCREMENT": true, "ROW_FORMAT": true, "KEY_BLOCK_SIZE": true,
	"STATS_PERSISTENT": true, "STATS_AUTO_RECALC": true, "STATS_SAMPLE_PAGES": true,
	"PACK_KEYS": true, "CHECKSUM": true, "COMPRESSION": true, "ENCRYPTION": true,
	"MAX_ROWS": true, "MIN_ROWS": true, "AVG_ROW_LENGTH": true, "DELAY_KEY_WRITE": true,
	"INSERT_METHOD": true, "TABLESPACE": true}

// canalAlterType is CanalDDLType of an ALTER statement (its tokens).
func canalAlterType(w sqlToks) string {
	i := 1
	for w.at(i) == "ONLINE" || w.at(i) == "IGNORE" {
		i++
	}
	if w.at(i) != "TABLE" || w.at(i+1) == "IF" {
		return "QUERY" // ALTER DATABASE, VIEW…; MariaDB's ALTER TABLE IF EXISTS
	}
	i += 2 // TABLE and the table's name
	for w.at(i) == "." {
		i += 2
	}
	typ, option := "", false
	for len(w) > i {
		item := w[i:]
		for depth, j := 0, 0; j < len(item); j++ {
			switch item[j] {
			case "(":
				depth++
			case ")":
				depth--
			case ",":
				if depth == 0 {
					item = item[:j]
				}
			}
		}
		i += len(item) + 1
		for j := 0; j+1 < len(item); j++ {
			if item[j] == "IF" && (item[j+1] == "EXISTS" || item[j+1] == "NOT") {
				return "QUERY" // MariaDB's ADD COLUMN IF NOT EXISTS, DROP INDEX IF EXISTS…
			}
		}
		k := 0
		if item.at(0) == "DEFAULT" {
			k++
		}
		switch first, second := item.at(k), item.at(k+1); {
		case first == "CHARSET", first == "PARTITION" && second == "BY",
			first == "REMOVE", first == "ALTER" && second == "INDEX",
			first == "DROP" && second == "CHECK":
			return "QUERY" // what Druid's parser refuses
		case canalTableOptions[first]:
			option = true
		case typ != "":
		case first == "ADD":
			if second == "CONSTRAINT" {
				k++
				if s := item.at(k + 1); s != "UNIQUE" && s != "PRIMARY" && s != "FOREIGN" && s != "CHECK" {
					k++ // the constraint's name
				}
				second = item.at(k + 1)
				if second != "UNIQUE" && second != "PRIMARY" {
					continue // a foreign key or a check: no type
				}
			}
			switch second {
			case "INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "PRIMARY":
				typ = "CINDEX"
			case "FOREIGN", "CHECK":
			default:
				typ = "ALTER"
			}
		case first == "DROP" && (second == "INDEX" || second == "KEY" || second == "CONSTRAINT"):
			typ = "DINDEX"
		case first == "RENAME" && second != "COLUMN" && second != "INDEX" && second != "KEY":
			typ = "RENAME"
		default:
			typ = "ALTER"
		}
	}
	if option {
		return "ALTER"
	}
	if typ == "" {
		return "QUERY"
	}
	return typ
}

// sqlToks are a statement's tokens (sqlTokens).
type sqlToks []string

// at is token i, "" past the end.
func (w sqlToks) at(i int) string {
	if i < len(w) {
		return w[i]
	}
	return ""
}

// sqlTokens splits a statement into its words (upper-cased), quoted strings and names
// (the token "'" or "`": never a keyword) and other characters one by one, without
// spaces and comments. A statement with an unterminated comment or quote has none (Druid's
// parser refuses it).
func sqlTokens(s string) sqlToks {
	var w sqlToks
	for len(s) > 0 {
		c := s[0]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			s = s[1:]
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s[2:], "*/")
			if end < 0 {
				return nil
			}
			s = s[end+4:]
		case c == '#' || strings.HasPrefix(s, "--") && (len(s) == 2 || s[2] == ' ' || s[2] == '\t' || s[2] == '\n'):
			end := strings.IndexByte(s, '\n')
			if end < 0 {
				return w
			}
			s = s[end+1:]
		case c == '\'' || c == '"' || c == '`':
			end := 1
			for end < len(s) && s[end] != c {
				if s[end] == '\\' && c != '`' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil
			}
			w = append(w, string(c))
			s = s[end+1:]
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			end := 1
			for end < len(s) && (s[end] == '_' || s[end] == '$' || s[end] >= '0' && s[end] <= '9' ||
				s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z' || s[end] >= 0x80) {
				end++
			}
			w = append(w, strings.ToUpper(s[:end]))
			s = s[end:]
		default:
			w = append(w, s[:1])
			s = s[1:]
		}
	}
	return w
}
