package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// errNoPrimaryKey: a snapshot reads tables in primary-key chunks and resumes after the
// last key read, so it skips a table without one (SnapshotProgress.Skipped says so).
var errNoPrimaryKey = errors.New("no primary key: a snapshot reads tables in primary-key chunks")

// snapshotSource reads a snapshot's tables over a client connection of its own (the
// binlog connection cannot run queries). Rows come over the binary protocol, typed, and
// are turned into the values go-mysql's binlog decoder gives for the same columns, so
// that a snapshot message and a binlog message of the same row are the same JSON.
type snapshotSource struct {
	ep Endpoint

	conn  *client.Conn
	stmts map[string]*client.Stmt // by statement text
}

func (s *snapshotSource) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn, s.stmts = nil, nil
	}
}

// connection connects on first use. The session reads TIMESTAMPs in UTC, as the binlog
// holds them.
func (s *snapshotSource) connection(ctx context.Context) (*client.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	c, err := s.ep.connect(ctx, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.ep, ServerError(err))
	}
	if _, err := c.Execute("SET SESSION time_zone = '+00:00'"); err != nil {
		c.Close()
		return nil, fmt.Errorf("snapshot session: %w", err)
	}
	s.conn, s.stmts = c, map[string]*client.Stmt{}
	return c, nil
}

// execute runs a statement (prepared once per connection when it has arguments); a
// failed connection is dropped, so the next call reconnects.
func (s *snapshotSource) execute(ctx context.Context, query string, args ...any) (*mysql.Result, error) {
	c, err := s.connection(ctx)
	if err != nil {
		return nil, err
	}
	var r *mysql.Result
	if len(args) == 0 {
		r, err = c.Execute(query)
	} else {
		st, ok := s.stmts[query]
		if !ok {
			if st, err = c.Prepare(query); err == nil {
				s.stmts[query] = st
			}
		}
		if err == nil {
			r, err = st.Execute(args...)
		}
	}
	if err != nil {
		var me *mysql.MyError
		if !errors.As(err, &me) {
			s.close()
		}
		return nil, err
	}
	return r, nil
}

// checkRowImage refuses a source whose row events are not whole rows: a snapshot drops
// a chunk's row in favour of the binlog event that touched it, which is only right when
// the event carries every column.
func (s *snapshotSource) checkRowImage(ctx context.Context) error {
	r, err := s.execute(ctx, "SELECT @@GLOBAL.binlog_row_image")
	if err != nil {
		return fmt.Errorf("read binlog_row_image: %w", err)
	}
	img, _ := r.GetString(0, 0)
	if !strings.EqualFold(img, "FULL") {
		return &fatalError{fmt.Errorf("binlog_row_image is %s on the source: a snapshot needs FULL row images", img)}
	}
	return nil
}

// binlogEnd is where the source's binlog ends now.
func (s *snapshotSource) binlogEnd(ctx context.Context) (cluster.Position, error) {
	r, err := s.execute(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return cluster.Position{}, fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	if r.RowNumber() == 0 {
		return cluster.Position{}, ErrBinlogOff
	}
	var p cluster.Position
	p.File, _ = r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	p.Pos = uint32(pos)
	return p, nil
}

// subscribedTables lists the base tables some subscription of filter takes inserts of,
// as "db.table", sorted.
func (s *snapshotSource) subscribedTables(ctx context.Context, filter *cluster.Filter) ([]string, error) {
	r, err := s.execute(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'
		AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY TABLE_SCHEMA, TABLE_NAME`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []string
	for i := range r.RowNumber() {
		db, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		if len(filter.Match(db, name, rowenc.TypeSnapshot)) > 0 {
			out = append(out, db+"."+name)
		}
	}
	return out, nil
}

// table reads the layout of db.name as SELECT * returns it: the columns with the types
// the binlog gives them, the primary key in key order, JSON columns from the schema.
func (s *snapshotSource) table(ctx context.Context, sc *schema, db, name string) (*rowenc.Table, error) {
	r, err := s.execute(ctx, "SELECT * FROM "+quoteName(db)+"."+quoteName(name)+" LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("read columns of %s.%s: %w", db, name, err)
	}
	t := &rowenc.Table{Database: db, Name: name, Columns: make([]rowenc.Column, len(r.Fields))}
	byName := map[string]int{}
	for i, f := range r.Fields {
		c := &t.Columns[i]
		c.Name = string(f.Name)
		byName[c.Name] = i
		c.Type, c.Unsigned, c.Frac = f.Type, f.Flag&mysql.UNSIGNED_FLAG != 0, f.Decimal
		c.NotNull = f.Flag&mysql.NOT_NULL_FLAG != 0
		switch {
		case f.Flag&mysql.ENUM_FLAG != 0:
			c.Type = mysql.MYSQL_TYPE_ENUM
		case f.Flag&mysql.SET_FLAG != 0:
			c.Type = mysql.MYSQL_TYPE_SET
		case f.Type == mysql.MYSQL_TYPE_DATETIME:
			c.Type = mysql.MYSQL_TYPE_DATETIME2
		case f.Type == mysql.MYSQL_TYPE_TIMESTAMP:
			c.Type = mysql.MYSQL_TYPE_TIMESTAMP2
		case f.Type == mysql.MYSQL_TYPE_TIME:
			c.Type = mysql.MYSQL_TYPE_TIME2
		}
		if isStringType(f.Type) {
			c.Binary = f.Charset == rowenc.BinaryCollation
		}
		if f.Type == mysql.MYSQL_TYPE_NEWDECIMAL {
			c.Precision, c.Scale = rowenc.DecimalPrecision(f.ColumnLength, f.Decimal, c.Unsigned), f.Decimal
		}
		if f.Type == mysql.MYSQL_TYPE_BIT && f.ColumnLength >= 1 && f.ColumnLength <= 64 {
			c.Bits = uint8(f.ColumnLength) // BIT(n)'s n
		}
		if f.Type == mysql.MYSQL_TYPE_BLOB {
			// The column's length in bytes of the connection's utf8mb4 (4 a character)
			// for text, its own for bytes.
			n := uint64(f.ColumnLength)
			if !c.Binary {
				n /= 4
			}
			c.BlobBytes = rowenc.BlobBytesOfLength(n)
		}
	}
	pk, err := s.execute(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, db, name)
	if err != nil {
		return nil, fmt.Errorf("read the primary key of %s.%s: %w", db, name, err)
	}
	for i := range pk.RowNumber() {
		col, _ := pk.GetString(i, 0)
		if ci, ok := byName[col]; ok {
			t.PK = append(t.PK, ci)
			t.Columns[ci].PK = true
		}
	}
	if len(t.PK) == 0 {
		return nil, errNoPrimaryKey
	}
	info, err := sc.lookup(ctx, db, name)
	if err != nil {
		// Not a fallback to text: the snapshot would send JSON columns as strings. The
		// snapshot fails and is tried again.
		return nil, fmt.Errorf("snapshot of %s.%s: %w", db, name, err)
	}
	for _, col := range info.cols {
		ci, ok := byName[col.name]
		if !ok {
			continue
		}
		c := &t.Columns[ci]
		c.JSON = c.JSON || col.json
		if col.fixed != rowenc.FixedNone && c.Type == mysql.MYSQL_TYPE_STRING {
			c.Fixed = col.fixed // its text as a SELECT gives it; the type for canal's mysqlType
		}
		// A snapshot's rows carry ENUM and SET members as text; their lists (as the
		// binlog's metadata gives them) let a format send an index. A GEOMETRY column's
		// declared type (POINT) is the schema's, as the binlog's metadata gives it.
		switch c.Type {
		case mysql.MYSQL_TYPE_ENUM:
			c.Enum = col.values
		case mysql.MYSQL_TYPE_SET:
			c.Set = col.values
		case mysql.MYSQL_TYPE_GEOMETRY:
			c.Geometry = col.geometry
		}
	}
	t.Prepare()
	return t, nil
}

func isStringType(typ byte) bool {
	switch typ {
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_BLOB,
		mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		return true
	}
	return false
}

// quoteName quotes an identifier for a statement.
func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// chunk reads up to n rows of t in primary-key order, after the key after (from the
// start when nil).
func (s *snapshotSource) chunk(ctx context.Context, t *rowenc.Table, after []cluster.KeyValue, n int) ([]rowenc.QueryRow, error) {
	keys := make([]string, len(t.PK))
	params := make([]string, len(t.PK))
	for i, ci := range t.PK {
		keys[i], params[i] = quoteName(t.Columns[ci].Name), "?"
		if typ := t.Columns[ci].Type; typ == mysql.MYSQL_TYPE_NEWDECIMAL || typ == mysql.MYSQL_TYPE_DECIMAL {
			// A decimal compared with a text argument would be compared as a double.
			params[i] = "CAST(? AS DECIMAL(65,30))"
		}
	}
	q := "SELECT * FROM " + quoteName(t.Database) + "." + quoteName(t.Name)
	var args []any
	if len(after) > 0 {
		if len(after) != len(t.PK) {
			return nil, &fatalError{fmt.Errorf("snapshot of %s.%s: resume key has %d values, the primary key %d columns", t.Database, t.Name, len(after), len(t.PK))}
		}
		var where string
		where, args = afterKey(keys, params, after)
		q += " WHERE " + where
	}
	q += " ORDER BY " + strings.Join(keys, ",") + " LIMIT ?"
	args = append(args, n)
	r, err := s.execute(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", t.Database, t.Name, err)
	}
	if len(r.Fields) != len(t.Columns) {
		return nil, errTableChanged
	}
	rows := make([]rowenc.QueryRow, len(r.Values))
	for i, v := range r.Values {
		rows[i] = v
	}
	return rows, nil
}

// afterKey is the condition "key after k" on the key columns keys (params are their
// placeholders), in the form the range optimizer turns into one index range even for a
// key of several columns (keyset pagination):
// k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND (k2 > v2 OR ...))).
func afterKey(keys, params []string, k []cluster.KeyValue) (string, []any) {
	args := []any{k[0].Arg()}
	var b strings.Builder
	b.WriteString(keys[0] + " >= " + params[0] + " AND ")
	for i := range keys {
		if i > 0 {
			b.WriteString(" OR (" + keys[i-1] + " = " + params[i-1] + " AND ")
			args = append(args, k[i-1].Arg())
		}
		b.WriteString("(" + keys[i] + " > " + params[i])
		args = append(args, k[i].Arg())
	}
	b.WriteString(strings.Repeat(")", len(keys)) + strings.Repeat(")", len(keys)-1))
	return b.String(), args
}

// errTableChanged: the table's columns changed between reading its layout and a chunk.
var errTableChanged = errors.New("table changed during the snapshot")
