package capture

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// schemaInfo is what the binlog does not say about a table and the source's
// information_schema does: JSON columns on MariaDB (LONGTEXT with a json_valid check),
// and, when the binlog lacks the optional metadata, names, signedness and the primary key.
type schemaInfo struct {
	cols []schemaColumn
	// pk names the primary key's columns in key order (which may differ from the
	// columns' order): the order of the key the messages carry.
	pk []string
}

type schemaColumn struct {
	name     string
	unsigned bool
	pk       bool
	json     bool
	longText bool // a LONGTEXT: MariaDB's JSON is one, with a json_valid check
	binary   bool
	charset  string // CHARACTER_SET_NAME: "" for columns that hold no text
	// values are an ENUM's or SET's members, from its COLUMN_TYPE: a snapshot's result
	// does not carry them, and the formats that send a member's index need them.
	values []string
	// geometry is a GEOMETRY column's declared type, from its DATA_TYPE ("point"): a
	// snapshot's result does not carry it either.
	geometry rowenc.GeometryType
	// fixed is a MariaDB UUID, INET4 or INET6, from its DATA_TYPE: the binlog shows a
	// BINARY(16) or BINARY(4).
	fixed rowenc.FixedText
}

// schema looks tables up on the source over a normal client connection and caches them
// until a DDL changes them. Lookups are by column name where the binlog gives names, so a
// schema read after a later DDL cannot shift values between columns.
type schema struct {
	ep  Endpoint
	log *slog.Logger

	mu     sync.Mutex
	conn   *client.Conn
	tables map[string]*schemaInfo
	warned map[string]bool
}

func newSchema(ep Endpoint, log *slog.Logger) *schema {
	return &schema{ep: ep, log: log,
		tables: map[string]*schemaInfo{}, warned: map[string]bool{}}
}

func (s *schema) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// setEndpoint is the endpoint of the connections opened from now on (the password and
// TLS files read again).
func (s *schema) setEndpoint(ep Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ep = ep
}

// invalidate forgets every cached table: called on a DDL that may change tables it does
// not name.
func (s *schema) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tables)
}

// forget forgets db.table: called on a DDL that changes it.
func (s *schema) forget(db, table string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tables, db+"."+table)
}

func (s *schema) execute(ctx context.Context, query string, args ...any) (*mysql.Result, error) {
	if s.conn == nil {
		c, err := s.ep.connect(ctx, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", s.ep, ServerError(err))
		}
		s.conn = c
	}
	r, err := s.conn.Execute(query, args...)
	if err != nil {
		s.conn.Close()
		s.conn = nil
		return nil, err
	}
	return r, nil
}

// lookup returns the columns of db.table as the source has them now.
func (s *schema) lookup(ctx context.Context, db, table string) (*schemaInfo, error) {
	key := db + "." + table
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tables[key]; ok {
		return t, nil
	}
	r, err := s.execute(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY, DATA_TYPE, IFNULL(CHARACTER_SET_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", key, err)
	}
	info := &schemaInfo{}
	for i := range r.RowNumber() {
		name := ownString(r, i, 0)
		ctype := ownString(r, i, 1)
		ckey := ownString(r, i, 2)
		dtype := ownString(r, i, 3)
		cs := ownString(r, i, 4)
		info.cols = append(info.cols, schemaColumn{
			name:     name,
			unsigned: strings.Contains(strings.ToLower(ctype), "unsigned"),
			pk:       ckey == "PRI",
			json:     strings.EqualFold(dtype, "json"),
			longText: strings.EqualFold(dtype, "longtext"),
			binary:   cs == "binary" || strings.HasSuffix(strings.ToLower(dtype), "binary") || strings.HasSuffix(strings.ToLower(dtype), "blob"),
			charset:  cs,
			values:   enumValues(ctype),
			geometry: rowenc.GeometryTypeNamed(dtype),
			fixed:    rowenc.FixedTextNamed(strings.ToLower(dtype)),
		})
	}
	r.Close()
	// A failed query fails the lookup rather than caching a partial answer: a table
	// cached without its json_valid checks would send its JSON as text until the next DDL.
	kr, err := s.execute(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, db, table)
	if err != nil {
		return nil, fmt.Errorf("read the primary key of %s: %w", key, err)
	}
	for i := range kr.RowNumber() {
		info.pk = append(info.pk, ownString(kr, i, 0))
	}
	kr.Close()
	// MariaDB's JSON is LONGTEXT with a column check constraint json_valid(`c`).
	cr, err := s.execute(ctx, `SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, db, table)
	if err != nil {
		return nil, fmt.Errorf("read the check constraints of %s: %w", key, err)
	}
	checks := cr.RowNumber()
	for i := range checks {
		info.markJSON(reJSONValid.FindStringSubmatch(ownString(cr, i, 0)))
	}
	cr.Close()
	if checks == 0 && info.hasLongText() {
		// CHECK_CONSTRAINTS lists a table's checks only to a user with more than a
		// table-level SELECT (a grant the wave's own warning advises): it was empty, and
		// JSON went out as text without a word (an outside trial). SHOW CREATE TABLE shows
		// them to any user who can read the table.
		sr, err := s.execute(ctx, "SHOW CREATE TABLE "+quoteName(db)+"."+quoteName(table))
		if err != nil {
			return nil, fmt.Errorf("read the definition of %s: %w", key, err)
		}
		if sr.RowNumber() > 0 {
			for _, m := range reJSONValidIn.FindAllStringSubmatch(ownString(sr, 0, 1), -1) {
				info.markJSON(m)
			}
		}
		sr.Close()
	}
	s.tables[key] = info
	return info, nil
}

// markJSON marks the column a json_valid check names (m: reJSONValid's match) as JSON.
func (info *schemaInfo) markJSON(m []string) {
	if m == nil {
		return
	}
	for j := range info.cols {
		if info.cols[j].name == m[1] {
			info.cols[j].json = true
		}
	}
}

// hasLongText reports whether a column is a LONGTEXT, which MariaDB's JSON is.
func (info *schemaInfo) hasLongText() bool {
	for _, c := range info.cols {
		if c.longText {
			return true
		}
	}
	return false
}

// ownString is a value of r as a string of its own. go-mysql's GetString returns a string
// over the result's packet buffer, and Close hands that buffer back to a pool shared by
// every connection of the process: a name kept from it (a cached lookup) would change
// under the next query. Run beside other work, cached names came out overwritten, so a
// snapshot matched no column by name and sent MariaDB JSON as text.
func ownString(r *mysql.Result, row, col int) string {
	s, _ := r.GetString(row, col)
	return strings.Clone(s)
}

// enumValues reads the members of an "enum('a','b')" or "set('a','b')" COLUMN_TYPE, in
// order (” inside a member is a quote); nil for other types.
func enumValues(ctype string) []string {
	lower := strings.ToLower(ctype)
	var rest string
	switch {
	case strings.HasPrefix(lower, "enum("):
		rest = ctype[5:]
	case strings.HasPrefix(lower, "set("):
		rest = ctype[4:]
	default:
		return nil
	}
	var out []string
	for {
		if len(rest) == 0 || rest[0] != '\'' {
			return out
		}
		var b strings.Builder
		i := 1
		for ; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(rest[i])
		}
		out = append(out, b.String())
		if i+1 >= len(rest) || rest[i+1] != ',' {
			return out
		}
		rest = rest[i+2:]
	}
}

var reJSONValid = regexp.MustCompile("^\\s*json_valid\\(`?([^`)]+)`?\\)\\s*$")

// reJSONValidIn finds the json_valid checks of a SHOW CREATE TABLE.
var reJSONValidIn = regexp.MustCompile("CHECK \\(json_valid\\(`?([^`)]+)`?\\)\\)")

// warnOnce logs msg, a fallback to the schema, once per table and message.
func (s *schema) warnOnce(key, msg string) {
	s.mu.Lock()
	seen := s.warned[key+"\x00"+msg]
	s.warned[key+"\x00"+msg] = true
	s.mu.Unlock()
	if !seen {
		s.log.Warn(msg, "table", key)
	}
}

// buildTable turns a TABLE_MAP event into a Table: names, signedness, enum and set values,
// geometry types and the primary key from the optional metadata (binlog_row_metadata=FULL);
// what is missing comes from the schema, with a warning.
// decodeMembers is an ENUM's or SET's member names as the binlog's metadata gives them,
// in the column's character set (coll, its collation), in UTF-8: a latin1 ENUM('é','ü')
// went out as "\ufffd" for both members, where a snapshot (which the server converts)
// gave "é" and "ü".
func decodeMembers(members []string, coll uint64) []string {
	cs := rowenc.CharsetOfCollation(coll)
	if cs == nil || members == nil {
		return members
	}
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = string(cs.Decode(nil, []byte(m)))
	}
	return out
}

func buildTable(ctx context.Context, tm *replication.TableMapEvent, flavor string, sc *schema) (*rowenc.Table, error) {
	db, name := string(tm.Schema), string(tm.Table)
	key := db + "." + name
	n := int(tm.ColumnCount)
	t := &rowenc.Table{Database: db, Name: name, Columns: make([]rowenc.Column, n)}
	names := tm.ColumnNameString()
	unsigned := tm.UnsignedMap()
	collations := tm.CollationMap()
	enums := tm.EnumStrValueMap()
	sets := tm.SetStrValueMap()
	memberColls := tm.EnumSetCollationMap()
	geoms := tm.GeometryTypeMap()
	for i := range n {
		c := &t.Columns[i]
		c.Type = rowenc.ColumnType(tm, i)
		if i < len(names) {
			c.Name = names[i]
		}
		c.Unsigned = unsigned[i]
		if coll, ok := collations[i]; ok {
			c.Binary = coll == rowenc.BinaryCollation
			if !c.Binary && (c.Type == mysql.MYSQL_TYPE_VARCHAR || c.Type == mysql.MYSQL_TYPE_VAR_STRING ||
				c.Type == mysql.MYSQL_TYPE_STRING || c.Type == mysql.MYSQL_TYPE_BLOB) {
				c.Charset = rowenc.CharsetOfCollation(coll)
			}
		}
		c.Enum = decodeMembers(enums[i], memberColls[i])
		c.Set = decodeMembers(sets[i], memberColls[i])
		if g, ok := geoms[i]; ok && g <= uint64(rowenc.GeometryCollection) {
			c.Geometry = rowenc.GeometryType(g)
		}
		c.NotNull = rowenc.NotNullIn(tm, i)
		c.Pad = rowenc.CharLength(tm, i)
		if c.Type == mysql.MYSQL_TYPE_BLOB && i < len(tm.ColumnMeta) {
			c.BlobBytes = uint8(tm.ColumnMeta[i])
		}
		if c.Type == mysql.MYSQL_TYPE_BIT && i < len(tm.ColumnMeta) {
			c.Bits = rowenc.BitWidth(tm.ColumnMeta[i])
		}
		if c.Type == mysql.MYSQL_TYPE_NEWDECIMAL && i < len(tm.ColumnMeta) {
			c.Precision, c.Scale = uint8(tm.ColumnMeta[i]>>8), uint8(tm.ColumnMeta[i])
		}
		if (c.Type == mysql.MYSQL_TYPE_DATETIME2 || c.Type == mysql.MYSQL_TYPE_TIMESTAMP2 || c.Type == mysql.MYSQL_TYPE_TIME2) && i < len(tm.ColumnMeta) {
			c.Frac = uint8(tm.ColumnMeta[i])
		}
	}
	for _, pk := range tm.PrimaryKey {
		if int(pk) < n {
			t.PK = append(t.PK, int(pk))
			t.Columns[pk].PK = true
		}
	}

	needNames := len(names) != n
	needSign := unsigned == nil && hasInts(tm)
	// Without collations a BLOB could be TEXT or BLOB; MariaDB's JSON is a LONGTEXT.
	needText := collations == nil && hasStrings(tm)
	needJSON := flavor == cluster.FlavorMariaDB && hasBlobs(tm)
	needPK := len(tm.PrimaryKey) == 0
	// MariaDB's UUID, INET4 and INET6 are BINARY(16) or BINARY(4) to the binlog: their
	// bytes went out as base64 where a snapshot (and a SELECT) gives their text.
	needFixed := flavor == cluster.FlavorMariaDB && hasFixedSized(t, collations == nil)
	// Without FULL metadata an ENUM or SET has no member names: its numbers went out.
	needMembers := false
	for i := range t.Columns {
		c := &t.Columns[i]
		needMembers = needMembers || c.Type == mysql.MYSQL_TYPE_ENUM && c.Enum == nil || c.Type == mysql.MYSQL_TYPE_SET && c.Set == nil
	}
	if !(needNames || needSign || needText || needJSON || needPK || needMembers || needFixed) {
		t.MapColumns(tm)
		return t, nil
	}
	info, err := sc.lookup(ctx, db, name)
	if err != nil {
		// The capture reconnects and reads the event again: a lookup that failed (the
		// source busy, a connection dropped) must not send JSON as text or rows without
		// their key until the next DDL.
		return nil, err
	}
	if len(info.cols) == 0 {
		// information_schema shows a user only the tables it has a privilege on: with
		// REPLICATION grants alone, MariaDB's JSON columns went out as strings, silently.
		sc.warnOnce(key, fmt.Sprintf("the source shows user %s no column of this table: it was dropped since, or the user may not see it (grant it SELECT on the captured tables); "+
			"what the binlog's metadata lacks is not filled in: MariaDB JSON columns go out as text, UUID, INET4 and INET6 columns as base64 of their bytes", sc.ep.User))
	}
	if needNames || needSign || needText || needMembers {
		sc.warnOnce(key, "binlog lacks row metadata (binlog_row_metadata=FULL); column names and types come from the current schema, which is wrong for rows written before a later DDL")
	}
	if needNames {
		if len(info.cols) != n {
			// Fatal: a reconnect reads the same event and the same (current) schema
			// again, so retrying would only loop in "reconnecting"; the instance stops in
			// the error state for an operator instead.
			return nil, &fatalError{fmt.Errorf("table %s: binlog has %d columns, the schema %d, and the binlog has no column names to match them by: rows written before a DDL cannot be decoded (set binlog_row_metadata=FULL on the source; then remove the instance and add it again with a start after the DDL)", key, n, len(info.cols))}
		}
		for i := range n {
			t.Columns[i].Name = info.cols[i].name
		}
	}
	byName := make(map[string]*schemaColumn, len(info.cols))
	for i := range info.cols {
		byName[info.cols[i].name] = &info.cols[i]
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		sc, ok := byName[c.Name]
		if !ok {
			continue // dropped since: the binlog's own metadata must do
		}
		if needSign {
			c.Unsigned = sc.unsigned
		}
		if needText {
			c.Binary = sc.binary
			if !c.Binary {
				c.Charset = rowenc.CharsetNamed(sc.charset)
			}
		}
		switch {
		case c.Type == mysql.MYSQL_TYPE_ENUM && c.Enum == nil:
			c.Enum = sc.values
		case c.Type == mysql.MYSQL_TYPE_SET && c.Set == nil:
			c.Set = sc.values
		case c.Type == mysql.MYSQL_TYPE_GEOMETRY && geoms == nil:
			c.Geometry = sc.geometry
		}
		if sc.fixed != rowenc.FixedNone && c.Type == mysql.MYSQL_TYPE_STRING && c.Pad == sc.fixed.Size() {
			c.Fixed, c.Binary, c.Charset = sc.fixed, false, nil
		}
		if sc.json && (c.Type == mysql.MYSQL_TYPE_BLOB || c.Type == mysql.MYSQL_TYPE_JSON) {
			c.JSON = true
		}
		if needPK && sc.pk {
			c.PK = true
		}
	}
	if needPK {
		// In key order, as the binlog's own metadata and a snapshot give it; in the
		// columns' order when the key's order could not be read.
		order := info.pk
		if len(order) == 0 {
			for _, c := range t.Columns {
				if c.PK {
					order = append(order, c.Name)
				}
			}
		}
		for _, name := range order {
			for i := range t.Columns {
				if t.Columns[i].Name == name && t.Columns[i].PK {
					t.PK = append(t.PK, i)
				}
			}
		}
	}
	t.MapColumns(tm)
	return t, nil
}

func hasInts(tm *replication.TableMapEvent) bool {
	for i := range tm.ColumnType {
		switch tm.ColumnType[i] {
		case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
			return true
		}
	}
	return false
}

func hasStrings(tm *replication.TableMapEvent) bool {
	for i := range tm.ColumnType {
		if tm.IsCharacterColumn(i) {
			return true
		}
	}
	return false
}

// hasFixedSized reports whether t has a column that may be a MariaDB UUID, INET4 or
// INET6: a BINARY(16) or BINARY(4) (any CHAR of that length when the binlog carries no
// collations).
func hasFixedSized(t *rowenc.Table, noCollations bool) bool {
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Type == mysql.MYSQL_TYPE_STRING && (c.Pad == 16 || c.Pad == 4) && (c.Binary || noCollations) {
			return true
		}
	}
	return false
}

func hasBlobs(tm *replication.TableMapEvent) bool {
	for _, t := range tm.ColumnType {
		if t == mysql.MYSQL_TYPE_BLOB {
			return true
		}
	}
	return false
}
