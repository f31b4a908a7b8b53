package capture

import (
	"context"
	"fmt"
	"regexp"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/rowenc"
)

// ddl handles a statement other than BEGIN/COMMIT and DML: a DDL. It ends any
// transaction (DDL commits implicitly), forgets the cached table layouts, and becomes a
// "ddl" message for the subscriptions of each table it changes (ddltables.go names them).
//
// A DDL inside a transaction's BEGIN … COMMIT group (MariaDB's CREATE TABLE … SELECT
// in ROW format, a temporary table's CREATE or DROP in STATEMENT or MIXED format) ends
// nothing: it is part of that transaction, its messages say commit: false, and the
// group's end is the boundary (a resume from inside the group would miss the rest).
//
// MySQL 8.0.21+ logs CREATE TABLE … SELECT in ROW format as one transaction whose DDL
// ends in " START TRANSACTION", followed by the rows and an XID: that DDL starts the
// group. Its message carries the statement without the clause, which only a replica
// applying the binlog accepts.
func (c *Capture) ddl(ctx context.Context, h *replication.EventHeader, schema, sql string) error {
	if body, ok := cutStartTransaction(sql); ok {
		sql = body
		c.inTxn, c.inGroup = true, true
	}
	inGroup := c.inGroup
	if err := c.flush(ctx, !inGroup, 0); err != nil {
		return err
	}
	// Only the tables the statement changes are looked up again: the schema is read as
	// the source has it now, and a capture behind the source that forgot every table at
	// each DDL (pt-online-schema-change's triggers, gh-ost's tables) read the rows before
	// a later change of another table's columns with that change (a TEXT column written
	// before it became JSON sent as JSON).
	refs, exact := c.ddlTables.tables(schema, sql)
	if exact {
		for _, t := range refs {
			c.sc.forget(t.db, t.table)
		}
	} else {
		c.sc.invalidate()
	}
	clear(c.tables)
	c.snapDDL()
	it := Item{TS: int64(h.Timestamp)}
	m := rowenc.Meta{Instance: c.Inst.ID, TS: int64(h.Timestamp), GTID: c.txGTID, File: c.file, Pos: h.LogPos, Commit: !inGroup}
	for _, t := range refs {
		subs := c.Filter.Match(t.db, t.table, rowenc.TypeDDL)
		if len(subs) == 0 {
			continue
		}
		d := &rowenc.DDL{Database: t.db, Table: t.table, Meta: m, SQL: sql}
		values := map[rowenc.Format][]byte{} // one message per format
		for _, si := range subs {
			sub, f := c.Filter.Subscription(si), c.Filter.Format(si)
			value, ok := values[f]
			if !ok {
				var sent bool
				var err error
				if value, sent, err = f.AppendDDL(nil, d); err != nil {
					return &fatalError{fmt.Errorf("encode the DDL at %s:%d (format %s): %w", c.file, h.LogPos, f.Name(), err)}
				}
				if !sent {
					value = nil // the format sends nothing for a DDL
				}
				values[f] = value
			}
			if value == nil {
				continue
			}
			key := rowenc.AppendDDLKey(nil, t.db, t.table, sub.PartitionBy)
			it.Msgs = append(it.Msgs, bus.Message{Topic: sub.Topic, Key: key, Value: value})
			it.Bytes += len(key) + len(value)
		}
	}
	if inGroup {
		if len(it.Msgs) == 0 {
			return nil
		}
		return c.emit(ctx, it)
	}
	c.boundary(h)
	it.Commit = ptr(c.offset())
	return c.send(ctx, it)
}

// startTransactionClause is a trailing START TRANSACTION clause (any case or spacing, a
// final semicolon) after the statement it ends.
var startTransactionClause = regexp.MustCompile(`(?is)^(.*\S)\s+START\s+TRANSACTION\s*;?\s*$`)

// cutStartTransaction returns sql without a trailing START TRANSACTION clause, and
// whether it had one.
func cutStartTransaction(sql string) (string, bool) {
	m := startTransactionClause.FindStringSubmatch(sql)
	if m == nil {
		return sql, false
	}
	return m[1], true
}
