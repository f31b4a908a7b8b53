package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
)

// A transaction that wrote a non-transactional table (MyISAM, Aria) cannot drop what it
// rolls back from its binlog cache. Rolled back to a savepoint, MariaDB and MySQL log the
// SAVEPOINT, every row as written, then ROLLBACK TO; rolled back whole (or to a savepoint
// set before its first transactional write, which MariaDB logs as a group of its own),
// the group's rows and then ROLLBACK. A replica undoes the transactional tables' rows as
// it applies them. The binlog does not say which tables are transactional, and rows are
// published as they are read, so the wave cannot take them back: the instance stops
// rather than publish rolled-back changes as committed. (A transaction of transactional
// tables alone logs none of this: its binlog holds what it kept.)

// ErrRollbackLogged is the fatal error of an instance whose source logged rows of a
// subscribed table that a ROLLBACK TO or ROLLBACK then undid, while on_unreadable is
// "stop".
var ErrRollbackLogged = errors.New("the binlog holds rows that the transaction rolled back (it also wrote a non-transactional table)")

// savepointRead notes a SAVEPOINT in the transaction (RELEASE SAVEPOINT changes nothing).
func (c *Capture) savepointRead(st statement) {
	if c.inTxn && st.verb == "SAVEPOINT" {
		c.savepoint = true
	}
}

// rollbackTo handles a ROLLBACK TO: nothing to do when no row of a subscribed table was
// read since the transaction's first SAVEPOINT (loggedRollback otherwise).
func (c *Capture) rollbackTo(h *replication.EventHeader, st statement) error {
	if !c.afterSavepoint {
		return nil
	}
	return c.loggedRollback(h, st, "rows after the savepoint were read for the subscriptions")
}

// rollbackGroup ends a group logged with ROLLBACK: as a commit ends one when it read no
// row of a subscribed table; else loggedRollback decides, and with skip the group ends
// as logged.
func (c *Capture) rollbackGroup(ctx context.Context, h *replication.EventHeader, st statement) error {
	if c.inTxn && (c.txEmitted || c.pending != nil) {
		if err := c.loggedRollback(h, st, "its rows were read for the subscriptions"); err != nil {
			return err
		}
	}
	return c.endTxn(ctx, h, 0)
}

// loggedRollback stops the instance on rows the binlog holds though the transaction
// undid them, or, with on_unreadable: skip, says that they are published as logged and
// counts it.
func (c *Capture) loggedRollback(h *replication.EventHeader, st statement, read string) error {
	if c.Inst.OnUnreadable == cluster.UnreadableSkip {
		c.Log.Warn("the binlog holds rows the transaction rolled back (it also wrote a non-transactional table): they are published as logged, "+
			"as if committed (on_unreadable: skip)", "statement", clip(st.body), "gtid", c.txGTID, "file", c.file, "pos", h.LogPos)
		if c.OnUnreadable != nil {
			c.OnUnreadable()
		}
		return nil
	}
	return &fatalError{fmt.Errorf("%w: %q at %s:%d: the transactional tables' rows are undone and the non-transactional ones' kept, "+
		"and the binlog does not say which is which; %s. Keep non-transactional tables (MyISAM, Aria) out of transactions that roll back, "+
		"or on_unreadable: skip to publish such a transaction as logged, the rolled-back rows included", ErrRollbackLogged, clip(st.body), c.file, h.LogPos, read)}
}
