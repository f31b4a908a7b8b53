package capture

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"

	// The parser needs a driver for the literal values in statements; this is the one
	// go-mysql's canal uses too.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// tableRef is a table a DDL statement changes.
type tableRef struct{ db, table string }

// ddlParser names the tables a DDL statement changes. It asks TiDB's SQL parser (the one
// go-mysql's canal uses), which knows MySQL's grammar whole: quoting, comments, every
// table of a multi-table DROP or RENAME. MariaDB syntax that parser does not know
// (CREATE OR REPLACE, ALTER ONLINE, ALTER TABLE IF EXISTS, system versioning, INET6
// columns) falls back to reading the statement's head, which finds the first table.
// One per capture: the parser keeps state between statements.
type ddlParser struct{ p *parser.Parser }

func newDDLParser() *ddlParser { return &ddlParser{p: parser.New()} }

// tables returns the tables of a CREATE, ALTER, DROP, TRUNCATE or RENAME TABLE statement
// (both names of each renamed pair, by RENAME TABLE or ALTER TABLE … RENAME: subscribers
// of either name learn of it), each once, or of a
// CREATE or DROP INDEX, qualified with defaultDB when the statement does not say; none
// for other statements (databases, views, grants).
//
// exact says the parser read the statement: refs are then every table whose columns it
// can change. A statement the parser rejects may change tables its head does not name
// (ALTER ONLINE TABLE a RENAME TO b): exact is false.
func (d *ddlParser) tables(defaultDB, sql string) (refs []tableRef, exact bool) {
	stmts, err := d.parse(sql)
	if err != nil {
		if ref, ok := headTable(defaultDB, sql); ok {
			return []tableRef{ref}, false
		}
		return nil, reNoColumnsDDL.MatchString(sql)
	}
	// Each table once: a swap (RENAME TABLE a TO a_old, a_new TO a) names a twice, and
	// its subscribers would get the same message twice.
	add := func(n *ast.TableName) {
		if n == nil || n.Name.O == "" {
			return
		}
		db := n.Schema.O
		if db == "" {
			db = defaultDB
		}
		if ref := (tableRef{db, n.Name.O}); !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.CreateTableStmt:
			add(s.Table)
		case *ast.AlterTableStmt:
			add(s.Table)
			for _, spec := range s.Specs { // ALTER TABLE a RENAME [TO] b: b too, as RENAME TABLE
				if spec.Tp == ast.AlterTableRenameTable {
					add(spec.NewTable)
				}
			}
		case *ast.TruncateTableStmt:
			add(s.Table)
		case *ast.DropTableStmt:
			if !s.IsView {
				for _, t := range s.Tables {
					add(t)
				}
			}
		case *ast.RenameTableStmt:
			for _, tt := range s.TableToTables {
				add(tt.OldTable)
				add(tt.NewTable)
			}
		case *ast.CreateIndexStmt: // Canal sends these (CINDEX, DINDEX): its readers expect them
			add(s.Table)
		case *ast.DropIndexStmt:
			add(s.Table)
		}
	}
	return refs, true
}

// parse parses sql; a panic in the parser (a statement from the binlog must never stop
// the capture) is an error, and the caller falls back.
func (d *ddlParser) parse(sql string) (stmts []ast.StmtNode, err error) {
	defer func() {
		if p := recover(); p != nil {
			d.p = parser.New() // its state is unknown after a panic
			stmts, err = nil, errors.New("sql parser panicked")
		}
	}()
	stmts, _, err = d.p.Parse(sql, "", "")
	return stmts, err
}

// reDDLHead reads the table of a table DDL from the statement's head, for statements the
// parser rejects.
var reDDLHead = regexp.MustCompile("(?is)^\\s*(?:/\\*.*?\\*/\\s*)*(?:ALTER|CREATE|DROP|TRUNCATE|RENAME)\\s+(?:(?:TEMPORARY|ONLINE|IGNORE|OR\\s+REPLACE)\\s+)*TABLE\\s+(?:IF\\s+(?:NOT\\s+)?EXISTS\\s+)?(" + qualifiedName + ")")

// qualifiedName matches a table's name in a statement's head: [db.]table, each part
// `quoted` (a doubled backtick inside) or bare.
const qualifiedName = "(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)(?:\\s*\\.\\s*(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+))?"

// reNoColumnsDDL is the head of a statement the parser may reject that changes no table's
// columns: a trigger (pt-online-schema-change's, as MariaDB logs it with its DEFINER), a
// view, a stored routine or event, an account.
var reNoColumnsDDL = regexp.MustCompile("(?is)^\\s*(?:/\\*.*?\\*/\\s*)*(?:(?:CREATE|ALTER)\\s+(?:OR\\s+REPLACE\\s+)?(?:ALGORITHM\\s*=\\s*\\w+\\s+)?(?:DEFINER\\s*=\\s*\\S+\\s+)?(?:SQL\\s+SECURITY\\s+\\w+\\s+)?(?:AGGREGATE\\s+)?|DROP\\s+)(?:TRIGGER|VIEW|PROCEDURE|FUNCTION|EVENT|USER|ROLE)\\b")

// headTable is the first table named by a table DDL's head.
func headTable(defaultDB, sql string) (tableRef, bool) {
	m := reDDLHead.FindStringSubmatch(sql)
	if m == nil {
		return tableRef{}, false
	}
	ref := qualified(defaultDB, m[1])
	return ref, ref.db != "" && ref.table != ""
}

// qualified is the table a head's qualifiedName names, in defaultDB when it names no
// database; either part may be empty (no name).
func qualified(defaultDB, name string) tableRef {
	parts := splitQualified(name)
	if len(parts) == 2 {
		return tableRef{parts[0], parts[1]}
	}
	return tableRef{defaultDB, parts[0]}
}

// splitQualified splits db.table, either part possibly `quoted`. A quoted part is the
// name as written: a dot or a space in it is part of the name (MySQL allows a leading
// space), a doubled backtick one backtick; an unquoted one loses the spaces around the
// dot (`s` . t). A part may come out empty (two backticks: no name): the callers refuse it.
func splitQualified(s string) []string {
	var parts []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '`' && inQuote && i+1 < len(s) && s[i+1] == '`':
			cur.WriteByte('`')
			i++
		case c == '`':
			inQuote = !inQuote
		case c == '.' && !inQuote:
			parts = append(parts, cur.String())
			cur.Reset()
		case !inQuote && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}
