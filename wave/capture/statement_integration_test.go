package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// capturedRow is what these tests read of a row message.
type capturedRow struct {
	ID     int
	Commit bool
}

// capturedRun is a capture of the test MariaDB that the test stops when it likes.
type capturedRun struct {
	t    *testing.T
	c    *Capture
	out  chan Item
	stop context.CancelFunc
	done chan error
	// last is the offset of the last commit item read.
	last cluster.Position
	once sync.Once
}

func startCapture(t *testing.T, ctx context.Context, a testenv.MySQLAddr, db string, start cluster.Position, onUnreadable string, onSkip func()) *capturedRun {
	t.Helper()
	r := &capturedRun{t: t, out: make(chan Item, 256), done: make(chan error, 1), last: start}
	r.c = newTestCapture(t, a, "xa", testenv.ReplicaServerID(), r.out, []cluster.Subscription{{Name: "all", Topic: "rows", Include: []string{db + `\..*`}}}, start)
	r.c.Inst.OnUnreadable, r.c.OnUnreadable = onUnreadable, onSkip
	var cctx context.Context
	cctx, r.stop = context.WithCancel(ctx)
	go func() { r.done <- r.c.Run(cctx) }()
	t.Cleanup(r.halt)
	return r
}

// halt stops the capture (a crash, as far as the offset goes: what was read after the
// last commit item is forgotten) and waits until it has.
func (r *capturedRun) halt() {
	r.once.Do(func() {
		r.stop()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			r.t.Error("the capture did not stop")
		}
	})
}

// skipRun captures from start with on_unreadable: skip up to row 99, and returns the
// rows read and how many changes were skipped.
func skipRun(t *testing.T, ctx context.Context, a testenv.MySQLAddr, db string, start cluster.Position) (string, int) {
	t.Helper()
	var skipped atomic.Int32
	rows := startCapture(t, ctx, a, db, start, cluster.UnreadableSkip, func() { skipped.Add(1) }).until(99)
	return rowsString(rows), int(skipped.Load())
}

// untilFatal reads row messages until the capture stops with a fatal error that is
// want, and returns the rows read and the error; the test fails otherwise.
func (r *capturedRun) untilFatal(want error) ([]capturedRow, error) {
	r.t.Helper()
	var read []capturedRow
	for {
		select {
		case err := <-r.done:
			r.once.Do(func() {}) // stopped
			if !errors.Is(err, want) || !IsFatal(err) {
				r.t.Fatalf("err %v, want a fatal %v", err, want)
			}
			return read, err
		case it := <-r.out:
			read = append(read, rowsOf(r.t, it)...)
		case <-time.After(30 * time.Second):
			r.t.Fatal("the capture did not stop")
		}
	}
}

// until reads row messages until the one of row id and the commit item after it.
func (r *capturedRun) until(id int) []capturedRow {
	r.t.Helper()
	var rows []capturedRow
	seen := false
	for {
		select {
		case it := <-r.out:
			for _, row := range rowsOf(r.t, it) {
				rows = append(rows, row)
				seen = seen || row.ID == id
			}
			if it.Commit != nil {
				r.last = *it.Commit
				if seen {
					return rows
				}
			}
		case err := <-r.done:
			r.t.Fatalf("the capture stopped before row %d: %v (read %v)", id, err, rows)
		case <-time.After(30 * time.Second):
			r.t.Fatalf("row %d not read in 30 s (read %v)", id, rows)
		}
	}
}

// rowsOf is the rows of an item's messages.
func rowsOf(t *testing.T, it Item) []capturedRow {
	t.Helper()
	var rows []capturedRow
	for _, m := range it.Msgs {
		var v struct {
			PK     map[string]int `json:"pk"`
			Commit bool           `json:"commit"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil {
			t.Fatalf("%s: %v", m.Value, err)
		}
		rows = append(rows, capturedRow{v.PK["id"], v.Commit})
	}
	return rows
}

func rowsString(rows []capturedRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, " %d", r.ID)
		if r.Commit {
			b.WriteString("c")
		}
	}
	return strings.TrimSpace(b.String())
}

// TestStatementDMLIntegration: a row change logged as a statement (binlog_format
// STATEMENT, or MIXED for a statement it deems safe) stops the capture, naming the table
// and position; with on_unreadable: skip it is counted and dropped, and its transaction
// still has one commit row.
func TestStatementDMLIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "fixc_stmt", "(id INT PRIMARY KEY, v VARCHAR(20))")
	exec("USE " + db)
	exec("SET SESSION binlog_format = STATEMENT")
	exec("INSERT INTO t VALUES (3, 'statement')")
	exec("SET SESSION binlog_format = MIXED")
	exec("BEGIN")
	exec("INSERT INTO t VALUES (4, LEFT(UUID(), 8))") // unsafe: logged as rows
	exec("INSERT INTO t VALUES (5, 'stmt-in-tx')")
	exec("COMMIT")
	loadFile := fmt.Sprintf("/tmp/%s.tsv", db)
	loaded := true
	if _, err := conn(t, a).Execute(fmt.Sprintf("SELECT 7, 'loaded' INTO OUTFILE '%s'", loadFile)); err != nil {
		t.Logf("no LOAD DATA in this run: %v", err)
		loaded = false
	} else {
		t.Cleanup(func() { os.Remove(loadFile) })
		exec("SET SESSION binlog_format = STATEMENT")
		exec(fmt.Sprintf("LOAD DATA INFILE '%s' INTO TABLE t", loadFile))
	}
	exec("SET SESSION binlog_format = ROW")
	exec("INSERT INTO t VALUES (99, 'sentinel')")

	// Other tests' transactions on the server (their databases: commit items without
	// rows of this one) may come before the statement; no row of this table may.
	r := startCapture(t, ctx, a, db, start, "", nil)
	rows, err := r.untilFatal(ErrStatementDML)
	if len(rows) > 0 {
		t.Fatalf("the capture went on past the statement: %v", rows)
	}
	if !strings.Contains(err.Error(), db+".t") || !strings.Contains(err.Error(), "INSERT INTO t VALUES (3, 'statement')") {
		t.Errorf("err %v", err)
	}

	got, skipped := skipRun(t, ctx, a, db, start)
	if got != "4c 99c" {
		t.Errorf("rows: %s, want 4c 99c (3, 5 and 7 statements, 4 its transaction's last row)", got)
	}
	want := 2
	if loaded {
		want = 3
	}
	if n := skipped; n != want {
		t.Errorf("skipped %d, want %d", n, want)
	}
}

// conn is another session on the test MariaDB, closed when t ends.
func conn(t *testing.T, a testenv.MySQLAddr) *client.Conn {
	t.Helper()
	c, err := client.Connect(a.Addr, a.User, a.Password, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
