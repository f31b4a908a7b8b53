package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestMySQLBinlogIntegration is the smoke test of the MariaDB test service: a row written
// through SQL must come back from the binlog as a WRITE_ROWS event with every column, which
// needs log_bin, binlog_format=ROW, binlog_row_image=FULL and binlog_row_metadata=FULL.
func TestMySQLBinlogIntegration(t *testing.T) {
	addr := RequireMySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn, err := client.ConnectWithContext(ctx, addr.Addr, addr.User, addr.Password, "", 5*time.Second)
	if err != nil {
		t.Fatalf("connect to MariaDB at %s: %v", addr, err)
	}
	defer conn.Close()

	for variable, want := range map[string]string{
		"log_bin": "1", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
	} {
		r, err := conn.Execute("SELECT @@" + variable)
		if err != nil {
			t.Fatalf("read @@%s: %v", variable, err)
		}
		if got, _ := r.GetString(0, 0); got != want {
			t.Errorf("@@%s = %q, want %q", variable, got, want)
		}
	}

	// A unique database per run, so parallel or repeated runs never see each other's rows.
	db := fmt.Sprintf("binlake_smoke_%d", time.Now().UnixNano())
	if _, err := conn.Execute("CREATE DATABASE " + db); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := client.Connect(addr.Addr, addr.User, addr.Password, "")
		if err != nil {
			t.Errorf("cleanup: connect: %v", err)
			return
		}
		defer c.Close()
		if _, err := c.Execute("DROP DATABASE IF EXISTS " + db); err != nil {
			t.Errorf("cleanup: drop database %s: %v", db, err)
		}
	})
	if _, err := conn.Execute("CREATE TABLE " + db + ".t (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, qty INT NULL, note TEXT NULL)"); err != nil {
		t.Fatalf("create table: %v", err)
	}

	r, err := conn.Execute("SELECT @@gtid_binlog_pos")
	if err != nil {
		t.Fatalf("read gtid_binlog_pos: %v", err)
	}
	pos, _ := r.GetString(0, 0)
	gset, err := mysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		t.Fatalf("parse gtid_binlog_pos %q: %v", pos, err)
	}

	if _, err := conn.Execute("INSERT INTO "+db+".t (id, name, qty, note) VALUES (?, ?, ?, ?)", 42, "hélène", -7, nil); err != nil {
		t.Fatalf("insert: %v", err)
	}

	host, port, err := net.SplitHostPort(addr.Addr)
	if err != nil {
		t.Fatalf("split %s: %v", addr.Addr, err)
	}
	portN, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatalf("port %q: %v", port, err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: ReplicaServerID(),
		Flavor:   mysql.MariaDBFlavor,
		Host:     host,
		Port:     uint16(portN),
		User:     addr.User,
		Password: addr.Password,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	defer syncer.Close()
	streamer, err := syncer.StartSyncGTID(gset)
	if err != nil {
		t.Fatalf("start binlog sync from GTID %q: %v", pos, err)
	}

	for {
		ev, err := streamer.GetEvent(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("no WRITE_ROWS event for %s.t in the binlog after GTID %q", db, pos)
		}
		if err != nil {
			t.Fatalf("read binlog: %v", err)
		}
		rows, ok := ev.Event.(*replication.RowsEvent)
		if !ok || string(rows.Table.Schema) != db || string(rows.Table.Table) != "t" {
			continue
		}
		switch ev.Header.EventType {
		case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
			replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		default:
			t.Fatalf("first rows event for %s.t is %s, want WRITE_ROWS", db, ev.Header.EventType)
		}
		if len(rows.Rows) != 1 {
			t.Fatalf("WRITE_ROWS carries %d rows, want 1: %v", len(rows.Rows), rows.Rows)
		}
		// binlog_row_metadata=FULL puts the column names into the table map event.
		if got := rows.Table.ColumnNameString(); fmt.Sprint(got) != "[id name qty note]" {
			t.Errorf("column names = %v, want [id name qty note] (is binlog_row_metadata FULL?)", got)
		}
		row := rows.Rows[0]
		if len(row) != 4 {
			t.Fatalf("row has %d columns, want 4 (is binlog_row_image FULL?): %v", len(row), row)
		}
		if got, ok := row[0].(int64); !ok || got != 42 {
			t.Errorf("id = %#v, want int64 42", row[0])
		}
		if got := toString(row[1]); got != "hélène" {
			t.Errorf("name = %#v, want %q", row[1], "hélène")
		}
		if got, ok := row[2].(int32); !ok || got != -7 {
			t.Errorf("qty = %#v, want int32 -7", row[2])
		}
		if row[3] != nil {
			t.Errorf("note = %#v, want nil", row[3])
		}
		return
	}
}

// toString accepts both forms go-mysql uses for character columns.
func toString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return fmt.Sprintf("<%T %v>", v, v)
}
