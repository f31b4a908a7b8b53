package wave

import (
	"context"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/bus"
)

// DDL statements in the binlog: each ends the transaction before it, forgets the cached
// table layouts, and becomes a "ddl" message for the subscriptions of its table.

var reDDLTable = regexp.MustCompile("(?is)^\\s*(?:/\\*.*?\\*/\\s*)*(?:ALTER|CREATE|DROP|TRUNCATE|RENAME)\\s+(?:(?:TEMPORARY|ONLINE|IGNORE|OR\\s+REPLACE)\\s+)*TABLE\\s+(?:IF\\s+(?:NOT\\s+)?EXISTS\\s+)?((?:`[^`]+`|[A-Za-z0-9_$]+)(?:\\s*\\.\\s*(?:`[^`]+`|[A-Za-z0-9_$]+))?)")

// ddlTable extracts the table a DDL statement is about ("" when it is not about one).
func ddlTable(defaultDB, sql string) (db, table string) {
	m := reDDLTable.FindStringSubmatch(sql)
	if m == nil {
		return defaultDB, ""
	}
	name := m[1]
	parts := splitQualified(name)
	if len(parts) == 2 {
		return parts[0], parts[1]
	}
	return defaultDB, parts[0]
}

func splitQualified(s string) []string {
	var parts []string
	var cur strings.Builder
	inQuote := false
	for _, r := range s {
		switch {
		case r == '`':
			inQuote = !inQuote
		case r == '.' && !inQuote:
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

// ddl handles a statement other than BEGIN/COMMIT: a DDL. It ends any transaction
// (DDL commits implicitly) and becomes a "ddl" message for the subscriptions of its table.
func (c *capture) ddl(ctx context.Context, h *replication.EventHeader, schema, sql string) error {
	if err := c.flush(ctx, true, 0); err != nil {
		return err
	}
	c.sc.invalidate()
	clear(c.tables)
	db, table := ddlTable(schema, sql)
	it := item{ts: int64(h.Timestamp)}
	if table != "" {
		subs := c.filter.Match(db, table, TypeDDL)
		value := EncodeDDL(nil, db, table, Meta{Instance: c.inst.ID, TS: int64(h.Timestamp), GTID: c.txGTID, File: c.file, Pos: h.LogPos, Commit: true}, sql)
		for _, si := range subs {
			sub := c.filter.Subscription(si)
			key := []byte(db + "." + table)
			if sub.PartitionBy == PartitionDatabase {
				key = []byte(db)
			}
			it.msgs = append(it.msgs, bus.Message{Topic: sub.Topic, Key: key, Value: value})
			it.bytes += len(key) + len(value)
		}
	}
	c.boundary(h)
	it.commit = ptr(c.resume)
	return c.send(ctx, it)
}
