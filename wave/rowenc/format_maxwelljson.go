package rowenc

import (
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/jsonenc"
)

// FormatMaxwellJSON is Maxwell's row JSON (RowMap.toJSON with Maxwell's default output
// options: nulls written, commit info on): database, table, type, ts (seconds), xid and
// commit on a transaction's last row, data, and old (an update's changed columns, before).
const FormatMaxwellJSON = "maxwell-json"

// maxwellJSON is the maxwell-json format. snapshotType is the type of a snapshot row:
// Maxwell's "bootstrap-insert", or "insert" for consumers that know only the three
// change types (Flink's maxwell-json refuses any other type). position writes each
// row's "position" ("file:offset", the binlog's offset after the row's event), as
// Maxwell does with output_binlog_position, for consumers that keep where they are.
type maxwellJSON struct {
	snapshotType string
	position     bool
	binlakeKey   bool // option key: binlake
}

func init() {
	RegisterFormat(FormatMaxwellJSON, func(opts map[string]string) (Format, error) {
		o, err := ParseFormatOptions(FormatMaxwellJSON, opts, []FormatOption{
			{Name: "snapshot_type", Values: []string{"bootstrap-insert", "insert"}},
			{Name: "binlog_position", Values: []string{"false", "true"}},
			{Name: "key", Values: []string{"maxwell", "binlake"}},
		})
		if err != nil {
			return nil, err
		}
		return maxwellJSON{snapshotType: o["snapshot_type"], position: o["binlog_position"] == "true",
			binlakeKey: o["key"] == "binlake"}, nil
	})
}

func (maxwellJSON) Name() string     { return FormatMaxwellJSON }
func (maxwellJSON) Tombstones() bool { return false }

// OwnKey implements KeyFormat: Maxwell's key, unless the option key is binlake.
func (f maxwellJSON) OwnKey() bool { return !f.binlakeKey }

// AppendRowKey implements KeyFormat: Maxwell's key (kafka_key_format=hash), the row's
// database, table and primary key columns as "pk.<column>", rendered as the value
// renders them: {"database":"shop","table":"orders","pk.id":7}. BinLake's db.table:[7]
// was no JSON, which a consumer of Maxwell's keys cannot read (an outside trial).
func (maxwellJSON) AppendRowKey(dst []byte, r *Row, im Image) ([]byte, error) {
	t := r.Table
	dst = append(dst, `{"database":`...)
	dst = jsonenc.AppendString(dst, t.Database)
	dst = append(dst, `,"table":`...)
	dst = jsonenc.AppendString(dst, t.Name)
	var err error
	for _, ci := range t.PK {
		dst = append(dst, ',')
		dst = jsonenc.AppendString(dst, "pk."+t.Columns[ci].Name)
		dst = append(dst, ':')
		if dst, err = appendMaxwellValue(dst, im, ci); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// AppendKeylessKey implements KeyFormat: a table without a primary key has Maxwell's key
// without pk fields, {"database":"shop","table":"log"} (Maxwell adds a random _uuid,
// which spreads the table's rows over the partitions; this keeps them in order in one).
func (f maxwellJSON) AppendKeylessKey(dst []byte, r *Row) []byte {
	dst, _ = f.AppendRowKey(dst, r, r.After) // no pk column: no value to render, no error
	return dst
}

// AppendDDL sends nothing: Maxwell writes no DDL into its row stream (with output_ddl it
// writes schema changes to a topic of their own).
func (maxwellJSON) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) { return dst, false, nil }

func (f maxwellJSON) AppendRow(dst []byte, r *Row) ([]byte, error) {
	t := r.Table
	image, typ := r.After, r.Type
	switch r.Type {
	case TypeDelete:
		image = r.Before
	case TypeSnapshot:
		typ = f.snapshotType
	}
	m := r.Meta
	dst = append(dst, `{"database":`...)
	dst = jsonenc.AppendString(dst, t.Database)
	dst = append(dst, `,"table":`...)
	dst = jsonenc.AppendString(dst, t.Name)
	dst = append(dst, `,"type":`...)
	dst = jsonenc.AppendString(dst, typ)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, m.TS, 10)
	if m.XID != 0 {
		dst = append(dst, `,"xid":`...)
		dst = strconv.AppendUint(dst, m.XID, 10)
	}
	if m.Commit {
		dst = append(dst, `,"commit":true`...)
	}
	if f.position && m.File != "" {
		dst = append(dst, `,"position":`...)
		dst = jsonenc.AppendString(dst, m.File+":"+strconv.FormatUint(uint64(m.Pos), 10))
	}
	dst = append(dst, `,"data":{`...)
	var err error
	for i := range t.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendColumnKey(dst, &t.Columns[i])
		if dst, err = appendMaxwellValue(dst, image, i); err != nil {
			return dst, err
		}
	}
	dst = append(dst, '}')
	if r.Type == TypeUpdate {
		n := 0
		for i := range t.Columns {
			same, err := r.Before.Same(r.After, i)
			if err != nil {
				return dst, err
			}
			if same {
				continue
			}
			if n == 0 {
				dst = append(dst, `,"old":{`...)
			} else {
				dst = append(dst, ',')
			}
			n++
			dst = appendColumnKey(dst, &t.Columns[i])
			if dst, err = appendMaxwellValue(dst, r.Before, i); err != nil {
				return dst, err
			}
		}
		if n > 0 {
			dst = append(dst, '}')
		}
	}
	return append(dst, '}'), nil
}

// appendMaxwellValue appends column col of im as Maxwell writes it: numbers as JSON
// numbers (DECIMAL too, exact), DATETIME and TIMESTAMP as "yyyy-MM-dd HH:mm:ss[.ffffff]"
// (UTC), SET as an array of its members, JSON as the document, GEOMETRY as its WKT
// ("POINT (1 2)"); the rest as the json format writes them (DATE, TIME, ENUM and text
// as strings, binary values as base64).
func appendMaxwellValue(dst []byte, im Image, col int) ([]byte, error) {
	at := len(dst)
	dst, err := im.AppendJSON(dst, col)
	if err != nil {
		return dst, err
	}
	tok := dst[at:]
	if isNullToken(tok) {
		return dst, nil
	}
	c := &im.t.Columns[col]
	if c.Type == mysql.MYSQL_TYPE_GEOMETRY {
		return rewriteTail(dst, at, appendBase64AsWKT), nil
	}
	switch kindOf(c) {
	case kindDecimal:
		return rewriteTail(dst, at, appendUnquoted), nil
	case kindDatetime, kindTimestamp:
		return rewriteTail(dst, at, appendSQLTemporal), nil
	case kindSet:
		if tok[0] == '"' {
			return rewriteTail(dst, at, appendSetArray), nil
		}
	}
	return dst, nil
}

// appendUnquoted appends a JSON string token's body: a decimal as a JSON number.
func appendUnquoted(dst, tok []byte) []byte { return append(dst, tok[1:len(tok)-1]...) }

// appendSetArray appends a SET token "a,b" as ["a","b"] (the members' escapes kept).
func appendSetArray(dst, tok []byte) []byte {
	body := tok[1 : len(tok)-1]
	dst = append(dst, '[')
	if len(body) > 0 {
		dst = append(dst, '"')
		for _, c := range body {
			if c == ',' {
				dst = append(dst, '"', ',', '"')
				continue
			}
			dst = append(dst, c)
		}
		dst = append(dst, '"')
	}
	return append(dst, ']')
}

// appendBase64AsWKT appends a GEOMETRY token (base64 of MySQL's SRID and WKB) as Maxwell
// writes the value: a JSON string of its WKT, without the SRID (GeometryColumnDef: JTS's
// WKBReader and toText). A value that is not a geometry appendWKT reads stays the base64
// token (Maxwell stops on it).
func appendBase64AsWKT(dst, tok []byte) []byte {
	n := len(dst)
	dst = decodeBase64Token(dst, tok)
	m := len(dst)
	out, ok := appendGeometryWKT(append(dst, '"'), dst[n:m])
	if !ok {
		return append(dst[:n], tok...)
	}
	out = append(out, '"')
	k := copy(out[n:], out[m:])
	return out[:n+k]
}
