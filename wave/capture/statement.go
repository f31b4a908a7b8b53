package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// ErrStatementDML is the fatal error of an instance that met a data change logged as an
// SQL statement (binlog_format STATEMENT, or MIXED for the statements it deems safe)
// while on_unreadable is "stop": the capture reads row events only, and cannot tell the
// rows a statement changed.
var ErrStatementDML = errors.New("data change logged as a statement, not as rows")

// stmtKind is what a statement of a query event is to the capture.
type stmtKind int

const (
	stmtOther      stmtKind = iota // DDL, grants and whatever else: the ddl path
	stmtNone                       // comments only (MariaDB's "# Dummy event …"): nothing
	stmtBegin                      // BEGIN: a transaction's group starts (MySQL)
	stmtCommit                     // COMMIT: the group ends (a transaction without an XID event)
	stmtRollback                   // ROLLBACK: likewise
	stmtSavepoint                  // SAVEPOINT, RELEASE SAVEPOINT: inside a transaction
	stmtRollbackTo                 // ROLLBACK TO: the transaction's changes after a savepoint undone (rollback.go)
	stmtXA                         // XA START, END, COMMIT, ROLLBACK (xa.go)
	stmtDML                        // a data change the binlog holds as a statement, not as rows
)

// statement is a query event's statement as the capture classifies it.
type statement struct {
	kind stmtKind
	// verb is the upper-case leading keyword (INSERT, UPDATE, …); for XA, the word after
	// XA (START, END, COMMIT, ROLLBACK, …).
	verb string
	// body is the statement from its verb on: after MariaDB's SET STATEMENT … FOR, the
	// statement it runs. rest, for XA, is what follows the verb: the xid and options.
	body, rest string
}

// dmlVerbs are the leading keywords of statements that change rows. SELECT, DO, CALL
// and WITH are among them: the binlog holds one of those only when it changed data (a
// stored function's writes are logged as the SELECT or DO that called it); VALUES and
// TABLE (MySQL's table value constructors) read only, but cost nothing to list.
var dmlVerbs = map[string]bool{
	"INSERT": true, "REPLACE": true, "UPDATE": true, "DELETE": true, "LOAD": true,
	"SELECT": true, "DO": true, "CALL": true, "WITH": true, "VALUES": true, "TABLE": true,
}

// classifyStatement tells what a query event's statement is, by its leading keywords,
// case-insensitively, past whitespace and comments (a /*! … */ or /*M! … */ comment is
// code and is read).
func classifyStatement(sql string) statement {
	i := skipSpace(sql, 0)
	if i == len(sql) {
		return statement{kind: stmtNone}
	}
	if sql[i] == '(' { // "(SELECT …) UNION …"
		return statement{kind: stmtDML, verb: "SELECT", body: sql[i:]}
	}
	body := sql[i:]
	w, j := word(sql, i)
	st := statement{verb: w, body: body}
	next := func() string { n, _ := word(sql, skipSpace(sql, j)); return n }
	switch w {
	case "BEGIN":
		if n := next(); n == "" || n == "WORK" {
			st.kind = stmtBegin
		}
	case "START":
		if next() == "TRANSACTION" {
			st.kind = stmtBegin
		}
	case "COMMIT":
		st.kind = stmtCommit
	case "ROLLBACK":
		st.kind = stmtRollback
		n, k := word(sql, skipSpace(sql, j))
		if n == "WORK" {
			n, _ = word(sql, skipSpace(sql, k))
		}
		if n == "TO" {
			st.kind = stmtRollbackTo
		}
	case "SAVEPOINT", "RELEASE":
		st.kind = stmtSavepoint
	case "XA":
		k := skipSpace(sql, j)
		v, e := word(sql, k)
		st.kind, st.verb, st.rest = stmtXA, v, strings.TrimSpace(sql[e:])
	case "SET":
		// MariaDB's SET STATEMENT var=value[, …] FOR statement: what it runs counts.
		if next() == "STATEMENT" {
			if k := keywordAt(sql, j, "FOR"); k >= 0 {
				return classifyStatement(sql[k:])
			}
		}
	default:
		if dmlVerbs[w] {
			st.kind = stmtDML
		}
	}
	return st
}

// skipSpace returns the index of the first character at or after i that is neither
// whitespace nor in a comment. The marker of an executable comment (/*!, /*M!, with its
// version) and a bare */ are skipped: what they wrap is code.
func skipSpace(s string, i int) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(s[i:], "/*!") || strings.HasPrefix(s[i:], "/*M!"):
			i += 3
			if s[i-1] == 'M' {
				i++
			}
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return len(s)
			}
			i += 2 + end + 2
		case strings.HasPrefix(s[i:], "*/"):
			i += 2
		case c == '#' || (strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || s[i+2] <= ' ')):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return len(s)
			}
			i += end + 1
		default:
			return i
		}
	}
	return i
}

// word returns the upper-cased keyword at i (letters and underscores; "" if none) and the
// index after it.
func word(s string, i int) (string, int) {
	j := i
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_') {
		j++
	}
	return strings.ToUpper(s[i:j]), j
}

// keywordAt returns the index after keyword kw, the first time it stands as a word at
// the top level of s from i on (not in a string, a quoted name, a comment or
// parentheses); -1 if it never does.
func keywordAt(s string, i int, kw string) int {
	depth := 0
	for i < len(s) {
		if k := skipSpace(s, i); k != i {
			i = k
			continue
		}
		switch c := s[i]; {
		case c == '\'' || c == '"' || c == '`':
			i++
			for i < len(s) && s[i] != c {
				if s[i] == '\\' && c != '`' {
					i++
				}
				i++
			}
			i++
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			if depth == 0 && strings.EqualFold(s[i:j], kw) {
				return j
			}
			i = j
		default:
			i++
		}
	}
	return -1
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

// dmlTarget is a table a statement writes, and the types its row events would have had.
type dmlTarget struct {
	tableRef
	types []string
}

var (
	typesInsert  = []string{rowenc.TypeInsert}
	typesUpsert  = []string{rowenc.TypeInsert, rowenc.TypeUpdate}
	typesReplace = []string{rowenc.TypeInsert, rowenc.TypeUpdate, rowenc.TypeDelete}
	typesUpdate  = []string{rowenc.TypeUpdate}
	typesDelete  = []string{rowenc.TypeDelete}
)

// dmlTargets names the tables a DML statement writes, qualified with defaultDB when it
// does not say. ok is false when they cannot be told: a statement the parser rejects and
// whose head names no table, a SELECT, DO or CALL (a stored function or procedure writes
// what it writes), or a table without a database. A multi-table UPDATE or DELETE names
// every table it joins (which of them it writes, the parser does not resolve).
func (d *ddlParser) dmlTargets(defaultDB string, st statement) (targets []dmlTarget, ok bool) {
	stmts, err := d.parse(st.body)
	if err != nil || len(stmts) != 1 {
		return headTargets(defaultDB, st)
	}
	add := func(n *ast.TableName, types []string) {
		if n == nil || n.Name.O == "" {
			return
		}
		db := n.Schema.O
		if db == "" {
			db = defaultDB
		}
		targets = append(targets, dmlTarget{tableRef{db, n.Name.O}, types})
	}
	switch s := stmts[0].(type) {
	case *ast.InsertStmt:
		types := typesInsert
		switch {
		case s.IsReplace:
			types = typesReplace
		case len(s.OnDuplicate) > 0:
			types = typesUpsert
		}
		if s.Table != nil {
			joinTables(s.Table.TableRefs, func(n *ast.TableName) { add(n, types) })
		}
	case *ast.UpdateStmt:
		if s.TableRefs != nil {
			joinTables(s.TableRefs.TableRefs, func(n *ast.TableName) { add(n, typesUpdate) })
		}
	case *ast.DeleteStmt:
		if s.TableRefs != nil {
			joinTables(s.TableRefs.TableRefs, func(n *ast.TableName) { add(n, typesDelete) })
		}
	case *ast.LoadDataStmt:
		types := typesInsert
		if s.OnDuplicate == ast.OnDuplicateKeyHandlingReplace {
			types = typesReplace
		}
		add(s.Table, types)
	default:
		return nil, false
	}
	for _, t := range targets {
		if t.db == "" {
			return nil, false
		}
	}
	return targets, len(targets) > 0
}

// joinTables calls f with each table of a FROM clause, past joins, aliases and
// parentheses; derived tables (subqueries) are read, not written, and left out.
func joinTables(n ast.ResultSetNode, f func(*ast.TableName)) {
	switch n := n.(type) {
	case *ast.Join:
		joinTables(n.Left, f)
		if n.Right != nil {
			joinTables(n.Right, f)
		}
	case *ast.TableSource:
		joinTables(n.Source, f)
	case *ast.TableName:
		f(n)
	}
}

// reDMLHead reads the table of a single-table INSERT, REPLACE, UPDATE or DELETE from its
// head, for statements the parser rejects (MariaDB's RETURNING, say).
var reDMLHead = regexp.MustCompile("(?is)^(?:INSERT|REPLACE|UPDATE|DELETE)\\s+(?:(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|QUICK|IGNORE)\\s+)*(?:(?:INTO|FROM)\\s+)?(" + qualifiedName + ")(?:\\s|\\(|$)")

// headTargets is dmlTargets for a statement the parser rejected.
func headTargets(defaultDB string, st statement) ([]dmlTarget, bool) {
	m := reDMLHead.FindStringSubmatch(st.body)
	if m == nil {
		return nil, false
	}
	ref := qualified(defaultDB, m[1])
	// An unquoted keyword where the table should be: the head did not read a name (INTO
	// or FROM before a name it cannot read, SET or VALUES after one it left out).
	keyword := false
	switch strings.ToUpper(ref.table) {
	case "SET", "VALUES", "INTO", "FROM":
		keyword = !strings.HasSuffix(m[1], "`")
	}
	if ref.db == "" || ref.table == "" || keyword {
		return nil, false
	}
	types := typesReplace // INSERT … ON DUPLICATE KEY UPDATE, REPLACE: any
	switch st.verb {
	case "UPDATE":
		types = typesUpdate
	case "DELETE":
		types = typesDelete
	}
	return []dmlTarget{{ref, types}}, true
}

// statementDML handles a data change logged as a statement. One that writes no
// subscribed table is nothing to the instance, as the row events of such a table would
// be. Otherwise the instance stops (on_unreadable: stop, the default): its rows cannot be
// told, and publishing the transaction without them would drop them silently. With
// on_unreadable: skip it is logged, counted and dropped, and the transaction goes on.
func (c *Capture) statementDML(h *replication.EventHeader, schema string, st statement) error {
	targets, ok := c.ddlTables.dmlTargets(schema, st)
	var hit []string
	for _, t := range targets {
		for _, typ := range t.types {
			if len(c.Filter.Match(t.db, t.table, typ)) > 0 {
				hit = append(hit, t.db+"."+t.table)
				break
			}
		}
	}
	if ok && len(hit) == 0 {
		return nil
	}
	tables := strings.Join(hit, ", ")
	if !ok {
		tables = "tables not known"
	}
	if c.Inst.OnUnreadable == cluster.UnreadableSkip {
		c.Log.Warn("data change logged as a statement: skipped, its rows are not published (on_unreadable: skip); the source should log binlog_format=ROW",
			"statement", clip(st.body), "tables", tables, "file", c.file, "pos", h.LogPos)
		if c.OnUnreadable != nil {
			c.OnUnreadable()
		}
		return nil
	}
	// A session can log statements whatever the server's format (SET SESSION
	// binlog_format), as a tool's writes to its own table may: the subscription need not
	// include that table.
	return &fatalError{fmt.Errorf("%w: %q at %s:%d (%s): the wave reads row events only; set binlog_format=ROW on the source "+
		"(MIXED logs such statements too, and a session may set its own), exclude the table from the instance's subscriptions "+
		"if its rows are not wanted, or on_unreadable: skip to drop such changes", ErrStatementDML, clip(st.body), c.file, h.LogPos, tables)}
}

// clip shortens a statement for a log line or an error.
func clip(sql string) string {
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 200 {
		return sql[:200] + "…"
	}
	return sql
}

// loadQuery is the statement and default database of an EXECUTE_LOAD_QUERY event (a
// LOAD DATA logged as a statement), which go-mysql does not decode: the event is a query
// event with 13 more bytes of post-header (file id, start and end of the file name in
// the query, duplicate handling).
func loadQuery(ev *replication.BinlogEvent, checksum bool) (schema, sql string, err error) {
	data := ev.RawData
	if len(data) < replication.EventHeaderSize {
		return "", "", errors.New("short event")
	}
	data = data[replication.EventHeaderSize:]
	if checksum {
		if len(data) < replication.BinlogChecksumLength {
			return "", "", errors.New("short event")
		}
		data = data[:len(data)-replication.BinlogChecksumLength]
	}
	const postHeader = 4 + 4 + 1 + 2 + 2 + 13
	if len(data) < postHeader {
		return "", "", errors.New("short event")
	}
	dbLen := int(data[8])
	varsLen := int(binary.LittleEndian.Uint16(data[11:]))
	p := postHeader + varsLen
	if len(data) < p+dbLen+1 {
		return "", "", errors.New("short event")
	}
	return string(data[p : p+dbLen]), string(data[p+dbLen+1:]), nil
}

// loadData handles a LOAD DATA logged as a statement (STATEMENT or MIXED format).
func (c *Capture) loadData(ev *replication.BinlogEvent) error {
	schema, sql, err := loadQuery(ev, c.checksum)
	if err != nil {
		sql = "LOAD DATA …" // its table unknown: it counts as one subscribed
	}
	st := classifyStatement(sql)
	if st.kind != stmtDML {
		st = statement{kind: stmtDML, verb: "LOAD", body: sql}
	}
	return c.statementDML(ev.Header, schema, st)
}
