package capture

import (
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

// TestPartialRowImageIntegration: rows logged without every column (a session's
// binlog_row_image NOBLOB or MINIMAL) stop the capture, naming the table, the position
// and the columns logged; they were published with the missing columns as NULL (an
// insert's defaults, an update's unchanged columns, its key null). With on_unreadable:
// skip each such event is counted and dropped, and the whole rows around it published.
func TestPartialRowImageIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "fixc_image", "(id INT PRIMARY KEY, v VARCHAR(20), d VARCHAR(20) DEFAULT 'default', doc TEXT)")
	exec("USE " + db)
	exec("INSERT INTO t VALUES (1, 'full', 'x', 'a document')")
	exec("SET SESSION binlog_row_image = NOBLOB")
	exec("UPDATE t SET v = 'noblob' WHERE id = 1") // doc left out of both images
	exec("SET SESSION binlog_row_image = MINIMAL")
	exec("UPDATE t SET v = 'minimal' WHERE id = 1") // before: id; after: v
	exec("INSERT INTO t (id) VALUES (2)")           // id alone
	exec("DELETE FROM t WHERE id = 2")              // id alone
	exec("SET SESSION binlog_row_image = FULL")
	exec("INSERT INTO t VALUES (99, 'sentinel', 'x', NULL)")

	read, err := startCapture(t, ctx, a, db, start, "", nil).untilFatal(ErrRowImagePartial)
	for _, want := range []string{"update of " + db + ".t at ", "logs 3 of the table's 4 columns", "set binlog_row_image=FULL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q does not say %q", err, want)
		}
	}
	if got := rowsString(read); got != "1c" {
		t.Errorf("rows before the stop: %s, want 1c (the insert, logged whole)", got)
	}

	got, skipped := skipRun(t, ctx, a, db, start)
	if got != "1c 99c" {
		t.Errorf("rows: %s, want 1c 99c (the partial ones dropped)", got)
	}
	if n := skipped; n != 4 {
		t.Errorf("skipped %d, want 4 (two updates, an insert, a delete)", n)
	}
}
