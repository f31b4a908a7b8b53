package capture

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
)

// A transaction that wrote a non-transactional table (MyISAM, Aria) and then rolled back
// to a savepoint cannot drop the rolled-back rows from its binlog cache: MariaDB and
// MySQL log the SAVEPOINT, every row as written, then ROLLBACK TO, and a replica undoes
// the transactional tables' rows after the savepoint as it applies them. The binlog does
// not say which tables are transactional, and the rows after the savepoint were
// published as they were read, so the wave cannot take them back: the instance stops
// rather than publish rolled-back changes as committed. (A transaction of transactional
// tables alone logs neither statement: its binlog holds what was kept.)

// ErrSavepointRollback is the fatal error of an instance whose source logged a ROLLBACK
// TO after rows of a subscribed table that followed a SAVEPOINT, while on_unreadable is
// "stop".
var ErrSavepointRollback = errors.New("a transaction rolled back to a savepoint after writing a non-transactional table")

// savepointRead notes a SAVEPOINT in the transaction (RELEASE SAVEPOINT changes nothing).
func (c *Capture) savepointRead(st statement) {
	if c.inTxn && st.verb == "SAVEPOINT" {
		c.savepoint = true
	}
}

// rollbackTo handles a ROLLBACK TO: nothing to do when no row of a subscribed table was
// read since the transaction's first SAVEPOINT; else the instance stops, or with
// on_unreadable: skip, says that the transaction's rows are published as logged, the
// rolled-back ones among them, and counts it.
func (c *Capture) rollbackTo(h *replication.EventHeader, st statement) error {
	if !c.afterSavepoint {
		return nil
	}
	if c.Inst.OnUnreadable == cluster.UnreadableSkip {
		c.Log.Warn("transaction rolled back to a savepoint after writing a non-transactional table: its rows are published as the binlog holds them, "+
			"the rolled-back ones among them (on_unreadable: skip)", "statement", clip(st.body), "gtid", c.txGTID, "file", c.file, "pos", h.LogPos)
		if c.OnUnreadable != nil {
			c.OnUnreadable()
		}
		return nil
	}
	return &fatalError{fmt.Errorf("%w: %q at %s:%d: the binlog holds the rows written after the savepoint, those of transactional tables undone "+
		"and those of non-transactional ones kept, and does not say which is which; rows after the savepoint were read for the subscriptions. "+
		"Keep savepoints and non-transactional tables (MyISAM, Aria) out of one transaction, or on_unreadable: skip to publish such a transaction "+
		"as logged, the rolled-back rows included", ErrSavepointRollback, clip(st.body), c.file, h.LogPos)}
}
