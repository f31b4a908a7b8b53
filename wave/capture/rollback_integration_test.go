package capture

import (
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

// TestSavepointRollbackIntegration: on the real MariaDB, a transaction that wrote a
// MyISAM table after a savepoint and rolled back to it logs the InnoDB rows it undid: the
// capture stops, naming the ROLLBACK TO and its position, rather than publish them (it
// published the delete of row 2 and the update to 0 as committed). A savepoint rolled
// back in a transaction of InnoDB tables alone logs nothing of it and passes. With
// on_unreadable: skip the transaction is published as logged, and counted.
func TestSavepointRollbackIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "fixc_savepoint", "(id INT PRIMARY KEY, bal INT) ENGINE=InnoDB")
	exec("USE " + db)
	exec("CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(40)) ENGINE=MyISAM")
	exec("INSERT INTO t VALUES (1, 100), (2, 200)")
	// InnoDB alone: the rolled-back update is not in the binlog.
	exec("BEGIN")
	exec("UPDATE t SET bal = 110 WHERE id = 1")
	exec("SAVEPOINT a")
	exec("UPDATE t SET bal = 0 WHERE id = 2")
	exec("ROLLBACK TO SAVEPOINT a")
	exec("COMMIT")
	exec("INSERT INTO t VALUES (3, 300)")
	// With MyISAM after the savepoint: every row is logged, then ROLLBACK TO.
	exec("BEGIN")
	exec("UPDATE t SET bal = 150 WHERE id = 1")
	exec("SAVEPOINT sp1")
	exec("INSERT INTO audit (note) VALUES ('attempt')")
	exec("DELETE FROM t WHERE id = 2")
	exec("ROLLBACK TO SAVEPOINT sp1")
	exec("COMMIT")
	exec("INSERT INTO t VALUES (99, 0)")

	read, err := startCapture(t, ctx, a, db, start, "", nil).untilFatal(ErrRollbackLogged)
	if !strings.Contains(err.Error(), "ROLLBACK TO") || !strings.Contains(err.Error(), "non-transactional") {
		t.Errorf("err %q does not name the statement and why", err)
	}
	// The audit table's DDL (0), 1 and 2 inserted, 1's update kept (110), 3; then the
	// audit row (MariaDB writes the MyISAM change as a group of its own) and the second
	// transaction's update of 1, up to the stop: neither 2's rolled-back delete nor 99.
	if got := rowsString(read); got != "0c 1 2c 1c 3c 1c 1" {
		t.Errorf("rows before the stop: %s, want 0c 1 2c 1c 3c 1c 1", got)
	}

	got, skipped := skipRun(t, ctx, a, db, start)
	if got != "0c 1 2c 1c 3c 1c 1 2c 99c" {
		t.Errorf("rows: %s, want 0c 1 2c 1c 3c 1c 1 2c 99c (the transaction as logged, 2's delete with it)", got)
	}
	if n := skipped; n != 1 {
		t.Errorf("counted %d, want 1", n)
	}
}

// TestRollbackGroupIntegration: on the real MariaDB, a transaction that wrote a MyISAM
// table and rolled its InnoDB rows back to a savepoint set before them logs those rows
// as a group that ends in ROLLBACK: the capture stops, naming it (it published the update
// as committed, commit row and all, and ran on; found by the outside trial). With
// on_unreadable: skip the group is published as logged, and counted.
func TestRollbackGroupIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "fixc_rollback", "(id INT PRIMARY KEY, bal INT) ENGINE=InnoDB")
	exec("USE " + db)
	exec("CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(40)) ENGINE=MyISAM")
	exec("INSERT INTO t VALUES (1, 100), (2, 200)")
	exec("BEGIN")
	exec("SAVEPOINT a")
	exec("INSERT INTO audit (note) VALUES ('x')")
	exec("UPDATE t SET bal = 7 WHERE id = 1")
	exec("ROLLBACK TO SAVEPOINT a")
	exec("COMMIT")
	exec("BEGIN")
	exec("DELETE FROM t WHERE id = 2")
	exec("INSERT INTO audit (note) VALUES ('y')")
	exec("ROLLBACK")
	exec("INSERT INTO t VALUES (99, 0)")

	read, err := startCapture(t, ctx, a, db, start, "", nil).untilFatal(ErrRollbackLogged)
	if !strings.Contains(err.Error(), `"ROLLBACK" at `) {
		t.Errorf("err %q does not name the ROLLBACK", err)
	}
	// The audit table's DDL (0), 1 and 2 inserted, the audit row (a group of its own),
	// and the stop: the update of 1, held back as a group's last row, is never sent.
	if got := rowsString(read); got != "0c 1 2c 1c" {
		t.Errorf("rows before the stop: %s, want 0c 1 2c 1c", got)
	}

	// With skip, the update of 1 as logged. The second transaction (an InnoDB delete, then
	// a MyISAM insert, rolled back) logs the MyISAM row alone, as a group of its own: the
	// delete of 2 is not in the binlog, and the audit row 2 is.
	got, skipped := skipRun(t, ctx, a, db, start)
	if got != "0c 1 2c 1c 1c 2c 99c" {
		t.Errorf("rows: %s, want 0c 1 2c 1c 1c 2c 99c", got)
	}
	if n := skipped; n != 1 {
		t.Errorf("counted %d, want 1", n)
	}
}
