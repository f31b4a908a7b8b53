package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestMariaDBCompressedBinlogIntegration: a MariaDB source with log_bin_compress=ON (a
// setting operators use to halve their binlogs) writes its row and query events of more
// than log_bin_compress_min_len bytes compressed (WRITE/UPDATE/DELETE_ROWS_COMPRESSED,
// QUERY_COMPRESSED). The capture must give, for the same changes, the same messages as
// from the plain events: one table changed with compression off and its twin with it on,
// and their messages compared one by one (positions and times aside). The events read
// back from the binlog show that the twin's were compressed.
func TestMariaDBCompressedBinlogIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "wave_compressed")
	for _, tb := range []string{"plain", "packed"} {
		exec("CREATE TABLE " + db + "." + tb + " (id INT PRIMARY KEY, v TEXT, n INT, d DATETIME(3) NULL)")
	}
	start, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a compressible value ", 50) // 1,050 bytes: past the 256 of log_bin_compress_min_len
	changes := func(tb string) {
		tb = db + "." + tb
		for i := 1; i <= 3; i++ {
			exec(fmt.Sprintf("INSERT INTO %s VALUES (%d, '%s%d', %d, '2024-02-%d 10:00:00.5')", tb, i, long, i, i, 28+i))
		}
		exec(fmt.Sprintf("INSERT INTO %s VALUES (10, 'short', 10, '0000-00-00'), (11, NULL, NULL, NULL)", tb)) // under the threshold: plain
		exec(fmt.Sprintf("UPDATE %s SET v = CONCAT(v, 'x'), n = n + 100 WHERE id <= 2", tb))
		exec(fmt.Sprintf("DELETE FROM %s WHERE id = 3", tb))
		exec(fmt.Sprintf("ALTER TABLE %s ADD COLUMN w INT COMMENT '%s'", tb, strings.Repeat("c", 300)))
		exec(fmt.Sprintf("INSERT INTO %s VALUES (4, '%s', 4, '2023-11-31 23:59:59', 44)", tb, long))
	}
	// Zero and invalid dates too (February 30th, as a lax application writes them): the
	// values go-mysql decodes in the compressed events must come out as those read in place.
	exec("SET sql_mode = 'ALLOW_INVALID_DATES'")
	changes("plain")
	exec("SET GLOBAL log_bin_compress = ON")
	defer exec("SET GLOBAL log_bin_compress = OFF") // a global: other tests' sources are this server
	changes("packed")
	exec("SET GLOBAL log_bin_compress = OFF")

	types := binlogEventTypes(t, ctx, a, start)
	for _, et := range []replication.EventType{replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_QUERY_COMPRESSED_EVENT} {
		if types[et] == 0 {
			t.Fatalf("no %s in the binlog with log_bin_compress=ON (events: %v): the test would prove nothing", et, types)
		}
	}

	out := runTestCapture(t, ctx, a, "compressed", testenv.ReplicaServerID(),
		[]cluster.Subscription{{Name: "all", Topic: "all", Include: []string{db + `\..*`}}}, start)
	const perTable = 3 + 2 + 2 + 1 + 1 + 1 // inserts, a two-row insert, updates, delete, DDL, insert
	byTable := readMasked(t, out, 2*perTable)
	plain, packed := byTable["plain"], byTable["packed"]
	if len(plain) != perTable || len(packed) != perTable {
		t.Fatalf("%d messages of the plain table and %d of the compressed one, want %d each", len(plain), len(packed), perTable)
	}
	for i := range plain {
		if want := strings.ReplaceAll(plain[i], "plain", "packed"); packed[i] != want {
			t.Errorf("message %d from compressed events:\n%s\nwant, as from the plain ones:\n%s", i, packed[i], want)
		}
	}
}

// binlogEventTypes counts the events of each type in the source's binlog from start to
// its end now.
func binlogEventTypes(t *testing.T, ctx context.Context, a testenv.MySQLAddr, start cluster.Position) map[replication.EventType]int {
	t.Helper()
	end, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	streamer, stop := streamFrom(t, a, start)
	defer stop()
	types := map[replication.EventType]int{}
	file := start.File
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ev, err := streamer.GetEvent(rctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the binlog ended before %s:%d (events: %v)", end.File, end.Pos, types)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := ev.Event.(*replication.RotateEvent); ok {
			file = string(r.NextLogName)
		}
		types[ev.Header.EventType]++
		if file == end.File && ev.Header.LogPos >= end.Pos {
			return types
		}
	}
}
